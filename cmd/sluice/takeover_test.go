package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

// kill -9 of `sluice run` mid-ingest: its claim stays, and nobody renews
// it. A second run finds the interval running, watches the record for a
// lease on its own clock, sees it unchanged, and takes the interval over
// (attempt 2); the table holds every landing record exactly once.
func TestRunKilledMidRunIsTakenOverAfterTTL(t *testing.T) {
	dir := t.TempDir()
	events, land := filepath.Join(dir, "lake", "events"), filepath.Join(dir, "landing")
	initEvents(t, events)
	const files, per = 40, 20000
	for i := range files {
		name := fmt.Sprintf("part-%03d.jsonl", i)
		writeEvents(t, land, name, i*per, per)
		// Landed during the interval the run ingests (it stops at its end).
		landed := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(land, name), landed, landed); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(config, []byte(`lake: lake
tables:
  events: {location: lake/events}
jobs:
  load:
    schedule: "CRON_TZ=UTC @daily"
    ingest: {table: events, from: landing, format: jsonl}
`), 0o644)
	args := []string{"run", "--config", config, "load", "--at", "2024-01-01", "--lease-ttl", "3s", "--json"}
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = append(os.Environ(), testenv.Env()...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	claim := filepath.Join(dir, "lake", "_sluice", "runs", "load", "20240101T000000Z")
	for {
		if _, err := os.Stat(claim); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("sluice run ended before its claim appeared: %v", err)
		case <-time.After(5 * time.Millisecond): // polling, not a timed assertion
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	var rec map[string]any
	data, _ := os.ReadFile(claim)
	if err := json.Unmarshal(data, &rec); err != nil || rec["status"] != "running" {
		t.Fatalf("the killed run's record: %s (%v); want it running", data, err)
	}

	// The next run finds the interval running and watches its record: it
	// does not change for a lease (nobody renews it), so the run takes
	// the interval over, on attempt 2.
	took := summaryOf(t, sluice(t, nil, args...))
	if took["ran"] != float64(1) || took["running_elsewhere"] != float64(0) {
		t.Fatalf("a run after the kill: %v; want it to take the interval over", took)
	}
	run := took["runs"].([]any)[0].(map[string]any)
	if run["status"] != "succeeded" || run["attempt"] != float64(2) {
		t.Fatalf("takeover: %v; want attempt 2 succeeded", run)
	}
	got := tableRead(t, events)
	if got.Rows != files*per {
		t.Fatalf("table has %d rows, want %d: each landing record exactly once", got.Rows, files*per)
	}
}
