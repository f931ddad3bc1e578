package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// duplicateKeys returns the keys that one JSON object line names twice
// at its top level (encoding/json would keep the last silently).
func duplicateKeys(line []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	seen, dups := map[string]bool{}, []string(nil)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		if seen[k] {
			dups = append(dups, k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return dups, nil
}

// Off a terminal the logs are JSON lines, and each names its run once:
// before, every commit line and every line of sluice run's scheduler
// carried "run" twice (the process's and the job run's), which a log
// pipeline reads as one or the other.
func TestJSONLogLinesNameTheRunOnce(t *testing.T) {
	lake := t.TempDir()
	r := sluice(t, []string{"SLUICE_LAKE=" + lake}, "run", "--config", demoConfig(t), "ingest-events", "--verbose", "--json")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	// A command's own commit line.
	rb := sluice(t, nil, "rollback", filepath.Join(lake, "events"), "--to", "1", "--verbose", "--json")
	if rb.code != 0 {
		t.Fatalf("rollback: exit %d: %s", rb.code, rb.stderr)
	}
	lines, commits := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr+"\n"+rb.stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		lines++
		dups, err := duplicateKeys([]byte(line))
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if len(dups) > 0 {
			t.Errorf("log line names %v twice: %s", dups, line)
		}
		if strings.Contains(line, `"msg":"commit"`) {
			commits++
			if !strings.Contains(line, `"run":"`) {
				t.Errorf("a commit line names no run: %s", line)
			}
		}
	}
	if lines == 0 || commits == 0 {
		t.Fatalf("%d JSON log lines, %d commit lines: want some of each; stderr:\n%s", lines, commits, r.stderr)
	}
}

// One damaged run record does not hide the history: sluice runs lists
// the others, names the damaged one on stderr and in --json, and exits 0.
func TestRunsSkipsAnUnreadableRecord(t *testing.T) {
	lake := t.TempDir()
	env := []string{"SLUICE_LAKE=" + lake}
	if r := sluice(t, env, "run", "--config", demoConfig(t), "ingest-events", "--json"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	dir := filepath.Join(lake, "_sluice", "runs", "compact-events")
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 {
		t.Fatalf("compact-events' records: %v, %v", names, err)
	}
	damaged := filepath.Join(dir, names[0].Name())
	if err := os.WriteFile(damaged, []byte(`{"job": "compact-events", "sta`), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(damaged, old, old)
	r := sluice(t, env, "runs", "--config", demoConfig(t), "--json")
	if r.code != 0 {
		t.Fatalf("runs with a damaged record: exit %d: %s", r.code, r.stderr)
	}
	s := summaryOf(t, r)
	if runs := s["runs"].([]any); len(runs) != 3 {
		t.Errorf("runs listed %d records, want the 3 readable ones", len(runs))
	}
	unreadable := s["unreadable"].([]any)
	if len(unreadable) != 1 || !strings.Contains(unreadable[0].(string), "compact-events/"+names[0].Name()) {
		t.Errorf("unreadable = %v; want the damaged record named", unreadable)
	}
	if !strings.Contains(r.stderr, "unreadable run record") || !strings.Contains(r.stderr, names[0].Name()) {
		t.Errorf("stderr does not name the damaged record: %s", r.stderr)
	}
}
