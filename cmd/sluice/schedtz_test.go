package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A rollup job that sets no tz counts days in the zone its schedule
// names: the daily rollup of a pipeline scheduled in America/New_York
// equals rollup --tz America/New_York by hand, not the UTC one.
func TestRollupJobTakesItsScheduleZone(t *testing.T) {
	lake, dir := t.TempDir(), t.TempDir()
	sample := landSample(t, dir)
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

// A rollup job whose schedule names no zone ticks in the host's, and
// counts its days in that zone too: one zone per job. On a host in
// America/New_York (TZ), the daily rollup equals rollup --tz
// America/New_York by hand through the interval's New York day; before,
// it counted UTC days and stopped a day short of the local one.
func TestRollupJobWithoutCronTZTakesTheHostZone(t *testing.T) {
	lake, dir := t.TempDir(), t.TempDir()
	sample := landSample(t, dir)
	snapshot := filepath.Join(repoRoot(t), "testdata", "pipelines", "demo-snapshot.csv")
	cfg := filepath.Join(dir, "local.yaml")
	src := fmt.Sprintf(`lake: %[1]s
tables:
  events: {location: %[1]s/events, schema: "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", partition_by: day(event_time)}
  list_rollup: {location: %[1]s/list_rollup}
jobs:
  ingest-local:
    schedule: "0 22 * * *"
    ingest: {table: events, from: %[2]s, format: parquet}
  rollup-local:
    after: [ingest-local]
    rollup: {source: events, out: list_rollup, snapshot: %[3]s, key: [list_id], time: event_time,
             measure: "subscribers=sum(tally)"}
`, lake, sample, snapshot)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ny := []string{"TZ=America/New_York"}
	// The interval that ends at 22:00 New York time on May 3 (02:00 UTC
	// on May 4) starts on May 2 at 22:00 New York, 02:00 UTC on May 3:
	// its day is May 2 in New York, May 3 in UTC.
	r := sluice(t, ny, "run", "--config", cfg, "ingest-local", "--at", "2024-05-04T02:00:00Z", "--json")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runs := runsOf(t, r)
	if len(runs) != 2 || runs[1]["status"] != "succeeded" {
		t.Fatalf("runs: %v; want both succeeded", runs)
	}
	got := tableRead(t, filepath.Join(lake, "list_rollup"))
	for _, c := range []struct{ tz, through string }{{"America/New_York", "2024-05-02"}, {"UTC", "2024-05-03"}} {
		out := filepath.Join(t.TempDir(), "list_rollup")
		mustSluice(t, "rollup", out, "--source", filepath.Join(lake, "events"), "--snapshot", snapshot, "--key", "list_id",
			"--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", c.through, "--tz", c.tz)
		hand := tableRead(t, out)
		if same := got.Rows == hand.Rows && got.Checksum == hand.Checksum; same != (c.tz != "UTC") {
			t.Errorf("scheduled %+v, by hand with --tz %s --through %s %+v: equal %v", got, c.tz, c.through, hand, same)
		}
	}

	// A tz that differs from the zone the schedule ticks in is refused.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(src, `measure: "subscribers=sum(tally)"}`, `measure: "subscribers=sum(tally)", tz: Europe/Paris}`, 1)), 0o600)
	v := sluice(t, ny, "validate", "--config", bad)
	if v.code != 1 || !strings.Contains(v.stderr, "jobs.rollup-local.rollup.tz: Europe/Paris differs from the zone the job's schedule ticks in (the host's zone, America/New_York") {
		t.Errorf("validate with a tz unlike the schedule's: exit %d, %s", v.code, v.stderr)
	}
}

// landSample copies the sample events into dir/landing, landed on
// 2024-05-03 (a scheduled ingest stops at its interval's end), and
// returns that folder.
func landSample(t *testing.T, dir string) string {
	t.Helper()
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
	return sample
}
