package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synced asserts that a command's --json summary says the mirror of
// table was synced after its commit, up to the table's latest version.
func synced(t *testing.T, what string, s map[string]any, table string) {
	t.Helper()
	ice, _ := s["iceberg"].(map[string]any)
	if ice["synced"] != true || ice["version"] != float64(latestVersion(t, table)) || s["warnings"] != nil {
		t.Fatalf("%s: the mirror was not synced to version %d: %v", what, latestVersion(t, table), s)
	}
}

// TestIcebergSyncAfterEveryCommit: once `sluice iceberg enable` turned
// the sync after every commit on, ingest, compact, import, rollback and vacuum
// each sync the mirror after their commit (--json says so), and icebird
// reads every version as DuckDB reads `sluice files`. With the catalog
// unreachable an ingest still commits and exits 0, its --json carrying a
// warning; history shows the version not mirrored (a dry run does not
// sync it); the next commit mirrors both.
func TestIcebergSyncAfterEveryCommit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	s := summaryOf(t, mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db, "--namespace", "lake", "--json"))
	if s["enabled"] != true || s["identifier"] != "lake.events" || s["version"] != 1.0 {
		t.Fatalf("enable: %v", s)
	}
	writeEvents(t, land, "a.jsonl", 0, 100)
	synced(t, "ingest", summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")), tbl)
	writeEvents(t, land, "b.jsonl", 100, 60)
	synced(t, "ingest", summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")), tbl)
	synced(t, "compact", summaryOf(t, mustSluice(t, "compact", tbl, "--include-current", "--min-input-files", "2", "--json")), tbl)
	src := parquetFiles(t, filepath.Join(tbl, "date=2024-01-02"))[0]
	copyFile(t, src, filepath.Join(tbl, "date=2024-01-02", "part-00009-copy.parquet"))
	s = summaryOf(t, mustSluice(t, "import", tbl, "--from", tbl, "--json"))
	if s["files_added"] != 1.0 {
		t.Fatalf("import of a copied file: %v", s)
	}
	synced(t, "import", s, tbl)
	synced(t, "rollback", summaryOf(t, mustSluice(t, "rollback", tbl, "--to", "3", "--json")), tbl)
	synced(t, "vacuum", summaryOf(t, mustSluice(t, "vacuum", tbl, "--json")), tbl)
	s = summaryOf(t, mustSluice(t, "iceberg", "sync", tbl, "--json")) // the settings name the catalog
	if s["mirrored"] != 0.0 || s["identifier"] != "lake.events" {
		t.Fatalf("sync after the commits synced: %v", s)
	}
	checkMirror(t, tbl, s["metadata_location"].(string), false)

	// The catalog is unreachable: the commit stands, with a warning.
	if err := os.Rename(db, db+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, land, "c.jsonl", 160, 10)
	before := latestVersion(t, tbl)
	s = summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json"))
	ice, _ := s["iceberg"].(map[string]any)
	ws, _ := s["warnings"].([]any)
	if latestVersion(t, tbl) != before+1 || ice["synced"] != false || len(ws) != 1 || !strings.Contains(ws[0].(string), "iceberg sync") {
		t.Fatalf("ingest with the catalog unreachable: version %d after %d, %v", latestVersion(t, tbl), before, s)
	}
	if h := mustSluice(t, "history", tbl); !strings.Contains(lines(h.stdout)[0], "ICEBERG") || !strings.HasSuffix(lines(h.stdout)[1], "?") {
		t.Errorf("history with the catalog unreachable: %s", h.stdout)
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(db+".away", db); err != nil {
		t.Fatal(err)
	}
	// A dry run changes nothing, the mirror included.
	if s := summaryOf(t, mustSluice(t, "compact", tbl, "--dry-run", "--include-current", "--json")); s["iceberg"] != nil {
		t.Errorf("compact --dry-run synced the mirror: %v", s)
	}
	h := summaryOf(t, mustSluice(t, "history", tbl, "--json"))
	vs := h["versions"].([]any)
	for i, v := range vs {
		v := v.(map[string]any)
		mirrored := i < len(vs)-1
		if id, _ := v["iceberg_snapshot_id"].(string); v["mirrored"] != mirrored || (id != "") != mirrored {
			t.Errorf("history --json, version %v: mirrored %v, snapshot %q; want mirrored %v", v["version"], v["mirrored"], id, mirrored)
		}
	}
	if last := lines(mustSluice(t, "history", tbl).stdout); !strings.HasSuffix(last[len(last)-1], "-") {
		t.Errorf("history: the version not mirrored is not marked -: %s", last[len(last)-1])
	}

	// The next commit mirrors the one missed and its own.
	s = summaryOf(t, mustSluice(t, "rollback", tbl, "--to", "2", "--json"))
	synced(t, "rollback after a missed sync", s, tbl)
	if ice := s["iceberg"].(map[string]any); ice["mirrored"] != 2.0 {
		t.Errorf("the rollback mirrored %v versions, want the missed one and its own", ice["mirrored"])
	}
	checkMirror(t, tbl, s["iceberg"].(map[string]any)["metadata_location"].(string), false)
}

// TestIcebergSyncAfterRollup: a rollup into a mirrored table syncs the
// mirror after its commit; icebird reads every version as DuckDB reads
// `sluice files`.
func TestIcebergSyncAfterRollup(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	events, out := filepath.Join(dir, "events"), filepath.Join(dir, "list_rollup")
	mustSluice(t, "init", events, "--schema", "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", "--partition-by", "day(event_time)")
	mustSluice(t, "ingest", events, "--from", filepath.Join(repoRoot(t), "testdata", "sample", "events"), "--format", "parquet")
	rollup := func(through string) map[string]any {
		return summaryOf(t, mustSluice(t, "rollup", out, "--source", events, "--snapshot", filepath.Join(repoRoot(t), "testdata", "pipelines", "demo-snapshot.csv"),
			"--key", "list_id", "--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", through, "--json"))
	}
	rollup("2024-05-02")
	mustSluice(t, "iceberg", "enable", out, "--catalog", "sqlite://"+db)
	s := rollup("2024-05-03")
	synced(t, "rollup", s, out)
	checkMirror(t, out, s["iceberg"].(map[string]any)["metadata_location"].(string), false)
}
