package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ingest --until leaves landing files modified after it for a later run;
// the next run, with a later --until, takes them. A bad --until is a
// usage error naming the flag.
func TestIngestUntilLeavesLaterFiles(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "events")
	initEvents(t, loc)
	early, late := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 10, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{early, late} {
		name := fmt.Sprintf("part-%d.jsonl", i)
		writeEvents(t, land, name, i*100, 100)
		if err := os.Chtimes(filepath.Join(land, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--until", "2024-01-02T00:00:00Z", "--json"))
	if s["files_in"] != float64(1) || s["rows_written"] != float64(100) || s["files_waiting"] != float64(1) {
		t.Errorf("until the 2nd: %v; want the first file taken, the second waiting", s)
	}
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--until", "2024-01-03T00:00:00Z", "--json"))
	if s["files_in"] != float64(1) || s["rows_written"] != float64(100) || s["files_waiting"] != float64(0) {
		t.Errorf("until the 3rd: %v; want the second file taken", s)
	}
	r := sluice(t, nil, "ingest", loc, "--from", land, "--until", "yesterday")
	if r.code != 2 || !strings.Contains(r.stderr, "--until") {
		t.Errorf("bad --until: exit %d, %q; want a usage error naming --until", r.code, r.stderr)
	}
}

// A scheduled ingest stops at its interval's end: `sluice run` of a daily
// interval takes the file that landed during it, not the one that landed
// after; the next day's interval takes that one.
func TestIngestJobStopsAtTheIntervalEnd(t *testing.T) {
	dir := t.TempDir()
	land := filepath.Join(dir, "landing")
	for i, at := range []time.Time{time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 10, 0, 0, 0, time.UTC)} {
		name := fmt.Sprintf("part-%d.jsonl", i)
		writeEvents(t, land, name, i*100, 100)
		if err := os.Chtimes(filepath.Join(land, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	initEvents(t, filepath.Join(dir, "lake", "events"))
	config := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(config, []byte("lake: lake\ntables:\n  events: {location: lake/events}\njobs:\n  load:\n    schedule: \"CRON_TZ=UTC @daily\"\n    ingest: {table: events, from: landing, format: jsonl}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// In order: an interval run after a later one finds its file taken.
	for _, day := range []string{"2024-01-01", "2024-01-02"} {
		run := runsOf(t, mustSluice(t, "run", "--config", config, "load", "--at", day, "--json"))[0]
		if s := run["summary"].(map[string]any); run["status"] != "succeeded" || s["rows_written"] != float64(100) || s["files_in"] != float64(1) {
			t.Errorf("interval %s: %v; want one file, 100 rows", day, run)
		}
	}
}

// ingest --until from Kafka reads each partition up to its first record
// timestamped at or after the time, and reports what it left per
// partition (kafka_lag); a later run reads the rest.
func TestIngestKafkaUntil(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	until := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	var rs []*kgo.Record
	for i := range 40 { // per partition: 10 before until, 10 after
		at := until.Add(time.Duration(i/2-10) * time.Minute)
		v := fmt.Sprintf(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":1,"event_time":"2024-01-01T10:00:00Z"}`, i, i)
		rs = append(rs, &kgo.Record{Value: []byte(v), Partition: int32(i % 2), Timestamp: at})
	}
	if err := p.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(t.TempDir(), "events")
	initEvents(t, loc)
	src := "kafka://" + strings.Join(c.ListenAddrs(), ",") + "/events"
	s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", src, "--until", until.Format(time.RFC3339), "--json"))
	if lag := fmt.Sprint(s["kafka_lag"]); s["records_in"] != float64(20) || lag != "map[0:10 1:10]" {
		t.Errorf("until %s: %v; want the 20 records before it, 10 a partition left (kafka_lag)", until, s)
	}
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", src, "--json"))
	if lag := fmt.Sprint(s["kafka_lag"]); s["records_in"] != float64(20) || lag != "map[0:0 1:0]" {
		t.Errorf("then without until: %v; want the other 20, nothing left", s)
	}
	// An earlier interval's run after a later one read past its until (a
	// takeover, a catch-up): nothing is left for it, which is no error.
	s = summaryOf(t, mustSluice(t, "ingest", loc, "--from", src, "--until", until.Add(-5*time.Minute).Format(time.RFC3339), "--json"))
	if s["records_in"] != float64(0) {
		t.Errorf("an earlier until after the whole topic was read: %v; want nothing read", s)
	}
}
