package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A vacuum job after compact deletes the files compaction replaced, and
// nothing the table still reads: two daily intervals each land a file,
// the second's compact merges each day's two files into one, and its
// vacuum (retain 0s, force) deletes the replaced ones; the table reads
// all 200 records.
func TestVacuumJobDeletesWhatCompactReplaced(t *testing.T) {
	dir := t.TempDir()
	land := filepath.Join(dir, "landing")
	for i, day := range []int{1, 2} {
		name := fmt.Sprintf("part-%d.jsonl", i)
		writeEvents(t, land, name, i*100, 100)
		at := time.Date(2024, 1, day, 12, 0, 0, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(land, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	initEvents(t, filepath.Join(dir, "lake", "events"))
	config := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(config, []byte(`lake: lake
tables:
  events: {location: lake/events}
jobs:
  load:
    schedule: "CRON_TZ=UTC @daily"
    ingest: {table: events, from: landing, format: jsonl}
  merge:
    after: [load]
    compact: {table: events, min_input_files: 2, scope: all}
  clean:
    after: [merge]
    vacuum: {table: events, retain: 0s, force: true}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var last []map[string]any
	for _, day := range []string{"2024-01-01", "2024-01-02"} {
		last = runsOf(t, mustSluice(t, "run", "--config", config, "load", "--at", day, "--json"))
		if len(last) != 3 {
			t.Fatalf("interval %s: %d runs, want load, merge, clean: %v", day, len(last), last)
		}
		for _, r := range last {
			if r["status"] != "succeeded" {
				t.Fatalf("interval %s: %v", day, r)
			}
		}
	}
	merged, cleaned := last[1]["summary"].(map[string]any), last[2]["summary"].(map[string]any)
	if merged["files_in"] == float64(0) || cleaned["files_deleted"] != merged["files_in"] {
		t.Errorf("compact replaced %v files, vacuum deleted %v; want the same, more than none", merged["files_in"], cleaned["files_deleted"])
	}
	if got := tableRead(t, filepath.Join(dir, "lake", "events")); got.Rows != 200 {
		t.Errorf("after vacuum the table reads %d rows, want 200", got.Rows)
	}
}
