package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func demoConfig(t *testing.T) string {
	return filepath.Join(repoRoot(t), "testdata", "pipelines", "demo.yaml")
}

// runsOf returns the "runs" of a --json summary.
func runsOf(t *testing.T, r result) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, x := range summaryOf(t, r)["runs"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func timeOf(t *testing.T, v any) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// sqliteRows reads list_daily of a SQLite warehouse, one "date list_id
// subscribers" line a row, in order.
func sqliteRows(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT date || '', list_id, subscribers FROM list_daily ORDER BY date, list_id")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var day string
		var list, n int64
		if err := rows.Scan(&day, &list, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %d", day, list, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sluice run of the demo's first job runs the whole pipeline for one
// interval, each job after its upstream finished, and the tables equal
// the same commands typed by hand; a second run finds the interval done
// and does nothing.
func TestRunDemoPipelineEqualsByHand(t *testing.T) {
	lake := t.TempDir()
	env := []string{"SLUICE_LAKE=" + lake}
	r := sluice(t, env, "run", "--config", demoConfig(t), "ingest-events", "--json")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runs := runsOf(t, r)
	want := []string{"ingest-events", "compact-events", "rollup-lists", "publish-lists"}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d: %v", len(runs), len(want), runs)
	}
	for i, run := range runs {
		if run["job"] != want[i] || run["status"] != "succeeded" || run["interval"] != runs[0]["interval"] {
			t.Fatalf("run %d = %v, want %s succeeded for the same interval", i, run, want[i])
		}
		if i > 0 && timeOf(t, run["started"]).Before(timeOf(t, runs[i-1]["ended"])) {
			t.Errorf("%s started before %s ended", want[i], want[i-1])
		}
	}
	if rows := runs[0]["summary"].(map[string]any)["rows_written"]; rows != float64(3479) {
		t.Errorf("ingest's summary says %v rows written, want 3479", rows)
	}

	hand := t.TempDir()
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	events, rollup := filepath.Join(hand, "events"), filepath.Join(hand, "list_rollup")
	mustSluice(t, "init", events, "--schema", "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", "--partition-by", "day(event_time)")
	mustSluice(t, "ingest", events, "--from", sample, "--format", "parquet")
	mustSluice(t, "compact", events, "--min-input-files", "2")
	mustSluice(t, "rollup", rollup, "--source", events, "--snapshot", filepath.Join(repoRoot(t), "testdata", "pipelines", "demo-snapshot.csv"),
		"--key", "list_id", "--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", "2024-05-03")
	for _, table := range []string{"events", "list_rollup"} {
		got, want := tableRead(t, filepath.Join(lake, table)), tableRead(t, filepath.Join(hand, table))
		if got.Rows != want.Rows || got.Checksum != want.Checksum || got.Rows == 0 {
			t.Errorf("%s: scheduled %+v, by hand %+v", table, got, want)
		}
	}
	mustSluice(t, "publish", rollup, "--to", "sqlite://"+filepath.Join(hand, "warehouse.db"), "--as", "list_daily")
	if got, want := sqliteRows(t, filepath.Join(lake, "warehouse.db")), sqliteRows(t, filepath.Join(hand, "warehouse.db")); !slices.Equal(got, want) || len(got) != 20 {
		t.Errorf("list_daily: scheduled %v, by hand %v (want 20 rows)", got, want)
	}

	again := summaryOf(t, sluice(t, env, "run", "--config", demoConfig(t), "ingest-events", "--at", runs[0]["interval_end"].(string), "--json"))
	if again["ran"] != float64(0) || again["already_done"] != float64(4) {
		t.Errorf("second run of the interval: %v", again)
	}
	hist := sluice(t, env, "runs", "--config", demoConfig(t), "--job", "rollup-lists", "--status", "succeeded", "--json")
	if h := runsOf(t, hist); len(h) != 1 || h[0]["attempt"] != float64(1) || h[0]["summary"].(map[string]any)["rows_written"] != float64(20) {
		t.Errorf("runs --job rollup-lists: %v", h)
	}
}

// Backfill of 30 daily rollup intervals leaves the table a single
// rollup through the last day gives; a second backfill does nothing.
func TestBackfillThirtyDaysTwice(t *testing.T) {
	dir := t.TempDir()
	events, out := filepath.Join(dir, "events"), filepath.Join(dir, "list_rollup")
	mustSluice(t, "init", events, "--schema", "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", "--partition-by", "day(event_time)")
	mustSluice(t, "ingest", events, "--from", filepath.Join(repoRoot(t), "testdata", "sample", "events"), "--format", "parquet")
	snap := filepath.Join(repoRoot(t), "testdata", "pipelines", "demo-snapshot.csv")
	config := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(config, []byte(`tables:
  events: {location: events}
  list_rollup: {location: list_rollup}
jobs:
  rollup-lists:
    schedule: "CRON_TZ=UTC @daily"
    rollup: {source: events, out: list_rollup, snapshot: "`+snap+`", key: [list_id], time: event_time, measure: "subscribers=sum(tally)"}
`), 0o644)
	first := summaryOf(t, sluice(t, nil, "backfill", "--config", config, "rollup-lists", "--from", "2024-05-01", "--to", "2024-05-30", "--json"))
	if first["ran"] != float64(30) || first["succeeded"] != float64(30) {
		t.Fatalf("first backfill: %v", first)
	}
	second := summaryOf(t, sluice(t, nil, "backfill", "--config", config, "rollup-lists", "--from", "2024-05-01", "--to", "2024-05-30", "--json"))
	if second["ran"] != float64(0) || second["already_done"] != float64(30) {
		t.Fatalf("second backfill: %v", second)
	}
	single := filepath.Join(dir, "single")
	mustSluice(t, "rollup", single, "--source", events, "--snapshot", snap, "--key", "list_id", "--time", "event_time",
		"--measure", "subscribers=sum(tally)", "--through", "2024-05-30")
	got, want := tableRead(t, out), tableRead(t, single)
	if got.Rows != want.Rows || got.Checksum != want.Checksum || got.Rows != 5*31 {
		t.Errorf("backfilled %+v, single run %+v (want 5 lists x 31 days)", got, want)
	}
	hist := runsOf(t, sluice(t, nil, "runs", "--config", config, "--json"))
	if len(hist) != 30 || hist[0]["interval_start"] != "2024-05-01T00:00:00Z" || hist[29]["interval_start"] != "2024-05-30T00:00:00Z" {
		t.Errorf("history: %d records, first %v", len(hist), hist[0])
	}
	r := sluice(t, nil, "backfill", "--config", config, "rollup-lists", "--from", "2024-05-01", "--to", "2024-05-30", "--parallel", "4")
	if r.code != 2 {
		t.Errorf("--parallel 4 over a job allowing 1: exit %d, want 2 (%s)", r.code, r.stderr)
	}
}
