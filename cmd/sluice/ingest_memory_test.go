package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-data/sluice/jobs"
)

// With --max-record-bytes 2GiB a 1 GB line took 12.7 GB: a record limit
// that --memory cannot hold is a usage error, naming both flags.
func TestIngestRefusesARecordLimitThatMemoryCannotHold(t *testing.T) {
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	writeEvents(t, filepath.Join(dir, "land"), "a.jsonl", 0, 3)
	for _, args := range [][]string{
		{"--max-record-bytes", "2GiB"},                      // beside the default 256 MiB
		{"--memory", "64MiB", "--max-record-bytes", "4MiB"}, // a 32nd is 2 MiB
	} {
		r := sluice(t, nil, append([]string{"ingest", loc, "--from", filepath.Join(dir, "land")}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--max-record-bytes") || !strings.Contains(r.stderr, "--memory") {
			t.Errorf("%v: exit %d, stderr %q; want 2, naming --max-record-bytes and --memory", args, r.code, r.stderr)
		}
	}
	// A small --memory alone lowers the default record limit instead.
	r := mustSluice(t, "--json", "ingest", loc, "--from", filepath.Join(dir, "land"), "--memory", "8MiB")
	if s := summaryOf(t, r); s["rows_written"] != 3.0 {
		t.Errorf("with --memory 8MiB: %v, want 3 rows written", s)
	}
}

// writeLine appends one event whose note is a string of n bytes.
func writeLine(t *testing.T, w *bufio.Writer, id, n int) {
	t.Helper()
	w.WriteString(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-00000000000` + string(rune('0'+id)) + `","list_id":1,"tally":1,"event_time":"2024-01-01T10:00:00Z","note":"`)
	// Text that does not compress to nothing, as real payloads do not.
	chunk := []byte(strings.Repeat("sluice holds memory to --memory ", 2048))
	for left := n; left > 0; left -= len(chunk) {
		w.Write(chunk[:min(left, len(chunk))])
	}
	w.WriteString("\"}\n")
}

// The largest record --memory allows, and a line far longer than any
// record allowed, go through within --memory plus the headroom the flag's
// help promises. The bound is the process's peak RSS, measured by the
// kernel; measured here it is about 145 MiB of the 384 MiB allowed.
func TestIngestHoldsMemoryWithTheLargestRecordAndALongerLine(t *testing.T) {
	const budget, maxRecord = 128 << 20, 4 << 20
	dir := t.TempDir()
	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	land := filepath.Join(dir, "land")
	os.MkdirAll(land, 0o755)
	f, err := os.Create(filepath.Join(land, "big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	writeLine(t, w, 1, maxRecord-200) // the largest record accepted
	writeLine(t, w, 2, 200<<20)       // 50 times too long: quarantined, cut
	writeLine(t, w, 3, 10)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	cmd := exec.Command(sluiceBin, "--json", "ingest", loc, "--from", land, "--memory", "128MiB", "--max-record-bytes", "4MiB")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, errb.String())
	}
	s := summaryOf(t, result{0, out.String(), errb.String()})
	if s["rows_written"] != 2.0 || s["records_quarantined"] != 1.0 {
		t.Errorf("summary %v: want 2 rows written, 1 record quarantined", s)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	t.Logf("peak RSS %d MiB", rss>>20)
	if limit := int64(budget + jobs.GCHeadroom); rss > limit {
		t.Errorf("peak RSS %d MiB, over --memory %d MiB plus %d MiB headroom", rss>>20, budget>>20, jobs.GCHeadroom>>20)
	}
}
