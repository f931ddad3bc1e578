package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A rollup job that sets no tz counts days in the zone its schedule
// names: the daily rollup of a pipeline scheduled in America/New_York
// equals rollup --tz America/New_York by hand, not the UTC one.
func TestRollupJobTakesItsScheduleZone(t *testing.T) {
	lake, dir := t.TempDir(), t.TempDir()
	// The sample, landed on 2024-05-03 (a scheduled ingest stops at its
	// interval's end).
	sample := filepath.Join(dir, "landing")
	if err := os.CopyFS(sample, os.DirFS(filepath.Join(repoRoot(t), "testdata", "sample", "events"))); err != nil {
		t.Fatal(err)
	}
	landed := time.Date(2024, 5, 3, 12, 0, 0, 0, time.UTC)
	if err := filepath.WalkDir(sample, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, landed, landed)
	}); err != nil {
		t.Fatal(err)
	}
	snapshot := filepath.Join(repoRoot(t), "testdata", "pipelines", "demo-snapshot.csv")
	cfg := filepath.Join(dir, "ny.yaml")
	src := fmt.Sprintf(`lake: %[1]s
tables:
  events: {location: %[1]s/events, schema: "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", partition_by: day(event_time)}
  list_rollup: {location: %[1]s/list_rollup}
jobs:
  ingest-ny:
    schedule: "CRON_TZ=America/New_York 0 1 * * *"
    ingest: {table: events, from: %[2]s, format: parquet}
  rollup-ny:
    after: [ingest-ny]
    rollup: {source: events, out: list_rollup, snapshot: %[3]s, key: [list_id], time: event_time,
             measure: "subscribers=sum(tally)", through: "2024-05-03"}
`, lake, sample, snapshot)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, nil, "run", "--config", cfg, "ingest-ny", "--at", "2024-05-03", "--json")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runs := runsOf(t, r)
	if len(runs) != 2 || runs[1]["status"] != "succeeded" || runs[0]["summary"].(map[string]any)["rows_written"] != float64(3479) {
		t.Fatalf("runs: %v; want both succeeded, the sample's 3479 rows ingested", runs)
	}
	got := tableRead(t, filepath.Join(lake, "list_rollup"))
	for _, tz := range []string{"America/New_York", "UTC"} {
		out := filepath.Join(t.TempDir(), "list_rollup")
		mustSluice(t, "rollup", out, "--source", filepath.Join(lake, "events"), "--snapshot", snapshot, "--key", "list_id",
			"--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", "2024-05-03", "--tz", tz)
		hand := tableRead(t, out)
		if same := got.Rows == hand.Rows && got.Checksum == hand.Checksum; same != (tz != "UTC") {
			t.Errorf("scheduled %+v, by hand with --tz %s %+v: equal %v", got, tz, hand, same)
		}
	}
}
