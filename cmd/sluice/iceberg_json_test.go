package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// numberSummary decodes a --json summary keeping numbers as their text.
func numberSummary(t *testing.T, r result) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	return m
}

// TestIcebergSnapshotIDExact: `iceberg sync --json`, and the summary of a
// commit that synced, give the snapshot id as the exact number and as
// decimal text, both equal to the current-snapshot-id of the metadata
// file they name (read without rounding).
func TestIcebergSnapshotIDExact(t *testing.T) {
	dir := t.TempDir()
	db, land, tbl := filepath.Join(dir, "catalog.db"), filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, tbl)
	writeEvents(t, land, "a.jsonl", 0, 10)
	mustSluice(t, "ingest", tbl, "--from", land)
	check := func(what string, s map[string]any) {
		t.Helper()
		b, err := os.ReadFile(strings.TrimPrefix(s["metadata_location"].(string), "file://"))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		var meta struct {
			Current json.Number `json:"current-snapshot-id"`
		}
		if err := dec.Decode(&meta); err != nil {
			t.Fatal(err)
		}
		num, _ := s["snapshot_id"].(json.Number)
		if num == "" || num != meta.Current || s["snapshot_id_string"] != string(meta.Current) {
			t.Errorf("%s: snapshot_id %v, snapshot_id_string %v; the metadata's current snapshot is %s", what, s["snapshot_id"], s["snapshot_id_string"], meta.Current)
		}
	}
	check("sync", numberSummary(t, mustSluice(t, "iceberg", "sync", tbl, "--catalog", "sqlite://"+db, "--json")))
	mustSluice(t, "iceberg", "enable", tbl, "--catalog", "sqlite://"+db)
	writeEvents(t, land, "b.jsonl", 10, 10)
	s := numberSummary(t, mustSluice(t, "ingest", tbl, "--from", land, "--json"))
	check("ingest", s["iceberg"].(map[string]any))
}
