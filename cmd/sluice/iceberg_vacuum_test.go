package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIcebergVacuumCommand: on a table whose mirror is synced after
// every commit, `sluice vacuum --retain 0 --force` expires every snapshot
// of the mirror but the current one and then deletes the files
// compaction replaced; icebird reads the one snapshot left as DuckDB
// reads `sluice files`. A vacuum within the retention expires nothing.
// A mirror recorded by a plain sync is honoured the same way (not
// synced); a table whose _iceberg/ holds a mirror that no settings
// record is refused, deleting nothing. After disable, commits no longer
// sync and vacuum still honours the mirror; after disable --forget it
// refuses.
func TestIcebergVacuumCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	writeEvents(t, land, "a.jsonl", 0, 100)
	mustSluice(t, "ingest", tbl, "--from", land)
	writeEvents(t, land, "b.jsonl", 100, 60)
	mustSluice(t, "ingest", tbl, "--from", land)
	before := lines(mustSluice(t, "files", tbl).stdout)
	mustSluice(t, "compact", tbl, "--include-current", "--min-input-files", "2")
	after := lines(mustSluice(t, "files", tbl).stdout)
	latest := latestVersion(t, tbl)

	// Synced without enable: the sync recorded the mirror, and vacuum
	// keeps what its snapshots reference without syncing it.
	icebergSync(t, tbl, db)
	v := summaryOf(t, mustSluice(t, "vacuum", tbl, "--json"))
	if ice, _ := v["iceberg"].(map[string]any); v["files_deleted"] != 0.0 || ice["snapshots_retained"] != float64(latest) || ice["synced"] != nil {
		t.Fatalf("vacuum of a mirror recorded by a sync: %v", v)
	}
	// Without its settings (lost, or a mirror an older sluice synced),
	// vacuum cannot know what the mirror references, and refuses.
	settings := filepath.Join(tbl, "_sluice", "mirrors", "iceberg.json")
	recorded, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(settings); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, nil, "vacuum", tbl, "--retain", "0", "--force")
	if r.code != 1 || !strings.Contains(r.stderr, "iceberg sync") || !strings.Contains(r.stderr, "iceberg.json") || len(lines(r.stderr)) != 1 {
		t.Fatalf("vacuum of a mirrored table without settings: exit %d, %s", r.code, r.stderr)
	}
	for _, f := range before {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the refused vacuum deleted a file: %v", err)
		}
	}
	if err := os.WriteFile(settings, recorded, 0o644); err != nil {
		t.Fatal(err)
	}

	s := summaryOf(t, mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db, "--json"))
	if s["enabled"] != true || s["version"] != float64(latest) || s["identifier"] != "sluice.events" {
		t.Fatalf("enable: %v", s)
	}
	v = summaryOf(t, mustSluice(t, "vacuum", tbl, "--json"))
	ice, _ := v["iceberg"].(map[string]any)
	if v["files_deleted"] != 0.0 || ice["snapshots_expired"] != 0.0 || ice["snapshots_retained"] != float64(latest) {
		t.Fatalf("vacuum within the retention: %v", v)
	}

	v = summaryOf(t, mustSluice(t, "vacuum", tbl, "--retain", "0", "--force", "--json"))
	ice, _ = v["iceberg"].(map[string]any)
	if ice["snapshots_expired"] != float64(latest-1) || ice["snapshots_retained"] != 1.0 || v["files_deleted"] != float64(len(before)) {
		t.Fatalf("vacuum --retain 0 of %d versions, %d files replaced: %v", latest, len(before), v)
	}
	for _, f := range before {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("a replaced file no snapshot references is still there: %s (%v)", f, err)
		}
	}
	snaps := icebirdSnapshots(t, ice["metadata_location"].(string), false)
	want := duckRead(t, after)
	if len(snaps) != 1 || snaps[0].Rows != want.Rows || snaps[0].Duck.Checksum != want.Checksum || len(snaps[0].Paths) != len(after) {
		t.Fatalf("after the expiry icebird sees %d snapshots: %+v; sluice files: %d files, %+v", len(snaps), snaps, len(after), want)
	}

	// Disabled: commits no longer sync; vacuum still honours the mirror.
	mustSluice(t, "iceberg", "disable", tbl)
	writeEvents(t, land, "c.jsonl", 160, 10)
	if s := summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")); s["iceberg"] != nil || s["warnings"] != nil {
		t.Errorf("ingest after disable synced or warned: %v", s)
	}
	if v := summaryOf(t, mustSluice(t, "vacuum", tbl, "--json")); v["iceberg"] == nil {
		t.Errorf("vacuum after disable: %v", v)
	}
	// Forgotten: vacuum refuses again.
	mustSluice(t, "iceberg", "disable", tbl, "--forget")
	if r := sluice(t, nil, "vacuum", tbl); r.code != 1 || !strings.Contains(r.stderr, "iceberg sync") {
		t.Errorf("vacuum after disable --forget: exit %d, %s", r.code, r.stderr)
	}
}
