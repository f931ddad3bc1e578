package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/iceberg"
)

// orphanCleanup runs iceberg-go's orphan-file cleanup on the mirror
// ns.name in the SQLite catalog db, as a user would, every file counted
// old enough, and returns what it deleted.
func orphanCleanup(t *testing.T, db, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	cat, err := iceberg.OpenCatalog(ctx, "sqlite://"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	it, err := cat.Load(ctx, table.Identifier{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	res, err := it.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(0))
	if err != nil {
		t.Fatalf("orphan cleanup of %s.%s: %v", ns, name, err)
	}
	return res.DeletedFiles
}

// settingsPath is where a table's mirror settings live.
func settingsPath(tbl string) string {
	return filepath.Join(tbl, "_sluice", "mirrors", "iceberg.json")
}

// TestIcebergSettingsSurviveOrphanCleanup: Iceberg's standard orphan-file
// cleanup on the mirror leaves the mirror's settings alone (they live
// under the table's _sluice/, not in the mirror's location; before, it
// deleted _iceberg/properties.json, after which commits silently stopped
// syncing and vacuum refused to run): the next ingest still syncs, and
// vacuum still honours the mirror.
func TestIcebergSettingsSurviveOrphanCleanup(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db)
	writeEvents(t, land, "a.jsonl", 0, 50)
	synced(t, "ingest", summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")), tbl)

	deleted := orphanCleanup(t, db, "sluice", "events")
	t.Logf("the orphan cleanup deleted %v", deleted)
	writeEvents(t, land, "b.jsonl", 50, 50)
	synced(t, "ingest after an orphan cleanup", summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")), tbl)
	v := summaryOf(t, mustSluice(t, "vacuum", tbl, "--json"))
	if ice, _ := v["iceberg"].(map[string]any); ice["synced"] != true || ice["snapshots_retained"] != float64(latestVersion(t, tbl)) {
		t.Fatalf("vacuum after an orphan cleanup: %v", v)
	}
	checkMirror(t, tbl, summaryOf(t, mustSluice(t, "iceberg", "sync", tbl, "--json"))["metadata_location"].(string), true)
}

// TestIcebergSettingsMoveFromMirrorLocation: settings an older sluice kept
// in _iceberg/properties.json are used by the next commit's sync, and
// moved by it to _sluice/mirrors/iceberg.json, which records the mirror
// (its uuid, location, the sync after every commit).
func TestIcebergSettingsMoveFromMirrorLocation(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	icebergSync(t, tbl, db, "--namespace", "lake")
	// As an older sluice's enable left the table.
	if err := os.Remove(settingsPath(tbl)); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(tbl, "_iceberg", "properties.json")
	old := `{"iceberg.catalog": "sqlite://` + db + `", "iceberg.namespace": "lake", "iceberg.name": "events"}`
	if err := os.WriteFile(legacy, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, land, "a.jsonl", 0, 50)
	synced(t, "ingest with the older settings", summaryOf(t, mustSluice(t, "ingest", tbl, "--from", land, "--json")), tbl)
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("the older settings are still in the mirror's location: %v", err)
	}
	b, err := os.ReadFile(settingsPath(tbl))
	if err != nil {
		t.Fatalf("the settings were not moved: %v", err)
	}
	var set map[string]any
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	if set["catalog"] != "sqlite://"+db || set["namespace"] != "lake" || set["name"] != "events" || set["after_commit"] != true ||
		set["table_uuid"] == nil || set["location"] != "file://"+filepath.Join(tbl, "_iceberg") {
		t.Fatalf("moved settings: %s", b)
	}
}

// TestIcebergSettingsMissingOrCorrupt: a mirrored table whose settings are
// gone, or cannot be parsed, is never silently left unsynced: a commit
// still commits and exits 0, with a warning naming the problem in
// --json and on stderr; vacuum refuses in one line naming it, deleting
// nothing.
func TestIcebergSettingsMissingOrCorrupt(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	land, tbl := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db)
	writeEvents(t, land, "a.jsonl", 0, 50)
	mustSluice(t, "ingest", tbl, "--from", land)
	good, err := os.ReadFile(settingsPath(tbl))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name, content string
		want          []string // in the warning and vacuum's error
	}{
		{"missing", "", []string{"iceberg.json is missing", "iceberg sync"}},
		{"corrupt", "{", []string{"iceberg.json: corrupt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.content == "" {
				err = os.Remove(settingsPath(tbl))
			} else {
				err = os.WriteFile(settingsPath(tbl), []byte(c.content), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			before := latestVersion(t, tbl)
			writeEvents(t, land, c.name+".jsonl", 100+10*i, 10)
			r := mustSluice(t, "ingest", tbl, "--from", land, "--json")
			s := summaryOf(t, r)
			ws, _ := s["warnings"].([]any)
			if latestVersion(t, tbl) != before+1 || len(ws) != 1 || !strings.Contains(r.stderr, "not mirrored") {
				t.Fatalf("ingest with the settings %s: version %d after %d, %v; stderr %s", c.name, latestVersion(t, tbl), before, s, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(ws[0].(string), w) || !strings.Contains(r.stderr, w) {
					t.Errorf("the warning does not say %q: %v; stderr %s", w, ws[0], r.stderr)
				}
			}
			v := sluice(t, nil, "vacuum", tbl, "--retain", "0", "--force")
			failsWithOneLine(t, v, c.want...)
		})
	}
	if err := os.WriteFile(settingsPath(tbl), good, 0o644); err != nil {
		t.Fatal(err)
	}
	synced(t, "rollback with the settings back", summaryOf(t, mustSluice(t, "rollback", tbl, "--to", "2", "--json")), tbl)
}
