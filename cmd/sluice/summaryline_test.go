package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Off a terminal, under cron, a command that succeeds says what it did
// in one line on stderr (before, it printed nothing: records quarantined
// or files left waiting went unnoticed); -q silences it, --json replaces
// it with the summary.
func TestCommandsPrintOneSummaryLine(t *testing.T) {
	dir := t.TempDir()
	events, land := filepath.Join(dir, "events"), filepath.Join(dir, "landing")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init", events, "--schema", ingestSchema, "--partition-by", "day(event_time)"}, "created " + events + " at version 1"},
		{[]string{"ingest", events, "--from", land}, "ingested 40 records from 2 files into " + events + " version 2 (0 quarantined, 0 files failed, 0 files waiting)"},
		{[]string{"compact", events, "--min-input-files", "1"}, "compacted "},
		{[]string{"vacuum", events}, "vacuum " + events + ": deleted 0 files"},
		{[]string{"rollback", events, "--to", "2"}, "rolled " + events + " back to version 2"},
	} {
		if c.args[0] == "ingest" {
			writeEvents(t, land, "a.jsonl", 0, 20)
			writeEvents(t, land, "b.jsonl", 20, 20)
		}
		r := mustSluice(t, c.args...)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], c.want) || r.stdout != "" {
			t.Errorf("sluice %s: stderr %q, stdout %q; want one line starting %q", c.args[0], r.stderr, r.stdout, c.want)
		}
	}
	writeEvents(t, land, "c.jsonl", 40, 5)
	if r := mustSluice(t, "ingest", events, "--from", land, "-q"); r.stderr != "" || r.stdout != "" {
		t.Errorf("ingest -q printed %q %q, want nothing", r.stderr, r.stdout)
	}
	if r := mustSluice(t, "ingest", events, "--from", land, "--json"); r.stderr != "" {
		t.Errorf("ingest --json printed %q on stderr, want only its summary on stdout", r.stderr)
	}
}

// A success that may not be one says so, in the line, in --json
// "warnings" and in the run record: an ingest that took no file while
// files wait for a later interval, a compaction with nothing to do
// because every partition was held back, a rollup that carries totals
// forward past the last event.
func TestSuspiciousSuccessesWarn(t *testing.T) {
	dir := t.TempDir()
	events, land := filepath.Join(dir, "events"), filepath.Join(dir, "landing")
	initEvents(t, events)
	writeEvents(t, land, "a.jsonl", 0, 20)
	early := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	r := mustSluice(t, "ingest", events, "--from", land, "--until", early)
	if !strings.Contains(r.stderr, "warning: no file taken, while 1 wait") {
		t.Errorf("an ingest before every file's landing: stderr %q; want a warning", r.stderr)
	}
	s := summaryOf(t, mustSluice(t, "ingest", events, "--from", land, "--until", early, "--json"))
	if ws, _ := s["warnings"].([]any); len(ws) != 1 {
		t.Errorf("--json warnings %v, want the one", s["warnings"])
	}

	// Only today's partition, which compaction holds back.
	today := filepath.Join(dir, "today")
	mustSluice(t, "init", today, "--schema", ingestSchema, "--partition-by", "day(event_time)")
	now := time.Now().UTC()
	for i := range 6 {
		f := filepath.Join(dir, "today-landing", fmt.Sprintf("%d.jsonl", i))
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte(fmt.Sprintf(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":1,"tally":1,"event_time":%q}`+"\n", i, now.Format(time.RFC3339))), 0o644)
		mustSluice(t, "ingest", today, "--from", filepath.Dir(f))
	}
	r = mustSluice(t, "compact", today)
	if !strings.Contains(r.stderr, "warning: nothing compacted: date="+now.Format(time.DateOnly)+" is the current UTC day (--include-current compacts it)") {
		t.Errorf("a compaction of only today's partition: stderr %q; want a warning", r.stderr)
	}

	// A rollup through days after the last event (2024-01-20).
	mustSluice(t, "ingest", events, "--from", land)
	snap := filepath.Join(dir, "snap.csv")
	os.WriteFile(snap, []byte("list_id,subscribers,date\n1,0,2023-12-31\n"), 0o644)
	r = mustSluice(t, "rollup", filepath.Join(dir, "daily"), "--source", events, "--snapshot", snap, "--key", "list_id",
		"--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", "2024-03-31")
	if !strings.Contains(r.stderr, "warning: no event after 2024-01-20: the days after it through 2024-03-31 carry the running totals forward") {
		t.Errorf("a rollup past the last event: stderr %q; want a warning", r.stderr)
	}
}
