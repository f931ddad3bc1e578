package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// contractCommands are every built command, each with arguments that pass
// flag parsing on an existing table at loc (a landing folder at land).
func contractCommands(loc, land string) map[string][]string {
	return map[string][]string{
		"init":     {"init", loc, "--schema", "a:int64"},
		"import":   {"import", loc, "--from", land},
		"files":    {"files", loc},
		"history":  {"history", loc},
		"rollback": {"rollback", loc, "--to", "1"},
		"vacuum":   {"vacuum", loc},
		"compact":  {"compact", loc},
		"ingest":   {"ingest", loc, "--from", land},
		"version":  {"version"},
	}
}

// jsonObject decodes stdout as exactly one JSON object.
func jsonObject(t *testing.T, r result) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("stdout %q is not a JSON object: %v (exit %d, stderr %s)", r.stdout, err, r.code, r.stderr)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value: %q", r.stdout)
	}
	return m
}

// An unknown command or flag is a usage error, exit 2, for every command;
// with --json the error is a JSON object on stdout too.
func TestUnknownCommandOrFlagExitsTwo(t *testing.T) {
	loc, land := filepath.Join(t.TempDir(), "t"), t.TempDir()
	cases := map[string][]string{
		"unknown command":            {"bogus"},
		"misspelt command":           {"fils", loc},
		"unknown command, then flag": {"bogus", "--json"},
		"unknown help topic":         {"help", "bogus"},
	}
	for name, args := range contractCommands(loc, land) {
		cases[name+" unknown flag"] = append(args, "--bogus")
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := sluice(t, nil, args...)
			if r.code != 2 {
				t.Fatalf("sluice %q: exit %d, want 2; stderr %s", args, r.code, r.stderr)
			}
			if first, _, _ := strings.Cut(r.stderr, "\n"); !strings.HasPrefix(first, "sluice: ") || !strings.Contains(first, "unknown ") ||
				r.stdout != "" && !strings.Contains(name, "then flag") {
				t.Fatalf("stdout %q, stderr %q: want the mistake named on stderr alone", r.stdout, r.stderr)
			}
			r = sluice(t, nil, append([]string{"--json"}, args...)...)
			s := jsonObject(t, r)
			if r.code != 2 || s["usage"] != true || !strings.Contains(s["error"].(string), "unknown") {
				t.Fatalf("with --json: exit %d, %v; want 2 and {\"error\":\"unknown ...\",\"usage\":true}", r.code, s)
			}
		})
	}
	if r := sluice(t, nil, "fils", loc); !strings.Contains(r.stderr, "did you mean files?") {
		t.Fatalf("a misspelt command: %q, want a suggestion", r.stderr)
	}
}

// Every command that fails after its flags are parsed prints, with
// --json, one JSON object with a non-empty "error" on stdout, exits 1, and
// says it in one line on stderr.
func TestJSONOnEveryFailure(t *testing.T) {
	dir := t.TempDir()
	table, land := filepath.Join(dir, "t"), filepath.Join(dir, "landing")
	mustSluice(t, "init", table, "--schema", "a:int64")
	os.MkdirAll(land, 0o755)
	missing := filepath.Join(dir, "missing")
	cases := map[string][]string{
		"init on an existing table":  {"init", table, "--schema", "a:int64"},
		"init at a bad location":     {"init", "ftp://host/t", "--schema", "a:int64"},
		"import at a bad location":   {"import", "ftp://host/t", "--from", land},
		"import of no files":         {"import", missing, "--from", land},
		"files of a missing table":   {"files", missing},
		"files of a missing version": {"files", table, "--version", "7"},
		"history of a missing table": {"history", missing},
		"rollback to a missing one":  {"rollback", table, "--to", "7"},
		"vacuum at a bad location":   {"vacuum", "ftp://host/t"},
		"vacuum under 24h":           {"vacuum", table, "--retain", "1h"},
		"compact a missing table":    {"compact", missing},
		"ingest into a missing one":  {"ingest", missing, "--from", land},
		"serve of a missing config":  {"serve", "--config", missing},
		"rollup of a missing source": {"rollup", missing, "--source", missing, "--snapshot", missing, "--key", "a", "--time", "t", "--measure", "n=count()"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := sluice(t, nil, append(args, "--json")...)
			s := jsonObject(t, r)
			failsWithOneLine(t, result{r.code, "", r.stderr})
			msg, _ := s["error"].(string)
			if msg == "" || s["command"] != args[0] {
				t.Fatalf("--json on a failure: %v; want a non-empty \"error\" and \"command\": %q", s, args[0])
			}
			if want := strings.TrimPrefix(strings.TrimSpace(r.stderr), "sluice: "); msg != want {
				t.Fatalf("--json error %q, stderr %q: want the same message", msg, want)
			}
		})
	}
}

// A failure after some work says, in --json, what was done before it: the
// files ingest committed, the versions compaction committed.
func TestJSONFailureSaysWhatWasDone(t *testing.T) {
	t.Run("ingest", func(t *testing.T) {
		dir := t.TempDir()
		loc, land := filepath.Join(dir, "events"), filepath.Join(dir, "landing")
		initEvents(t, loc)
		writeEvents(t, land, "a.jsonl", 0, 10)
		os.WriteFile(filepath.Join(land, "b.jsonl.gz"), []byte("\x1f\x8b\x08\x00truncated"), 0o644)
		r := sluice(t, nil, "ingest", loc, "--from", land, "--json")
		s := jsonObject(t, r)
		if r.code != 1 || s["error"] == nil || !strings.Contains(s["error"].(string), "b.jsonl.gz") ||
			s["files_in"] != 1.0 || s["rows_written"] != 10.0 || s["version"] != 2.0 {
			t.Fatalf("exit %d, %v; want 1 with the error naming b.jsonl.gz, files_in 1, rows_written 10, version 2", r.code, s)
		}
	})
	t.Run("compact", func(t *testing.T) {
		loc := filepath.Join(t.TempDir(), "events")
		writeSmallFiles(t, loc, 2, 6, 50)
		files := lines(mustSluice(t, "files", loc).stdout)
		var bad string
		for _, f := range files {
			if strings.Contains(f, "date=2024-02-02") {
				bad = f
			}
		}
		b, err := os.ReadFile(bad)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(bad, b[:len(b)/2], 0o644)
		r := sluice(t, nil, "compact", loc, "--json")
		s := jsonObject(t, r)
		versions, _ := s["versions"].([]any)
		if r.code != 1 || s["error"] == nil || !strings.Contains(s["error"].(string), "date=2024-02-02") ||
			len(versions) != 1 || s["partitions"] != 1.0 || s["failed"] != 1.0 {
			t.Fatalf("exit %d, %v; want 1 with the error naming date=2024-02-02, one version and one partition committed", r.code, s)
		}
	})
}

// sluice --version and sluice version print the main module's version and
// VCS commit as the binary's build information records them.
func TestVersionPrintsBuildInfo(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", sluiceBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	version, commit, modified := "", "unknown", ""
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			version = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			commit = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && f[1] == "vcs.modified=true":
			modified = " (modified)"
		}
	}
	if version == "" {
		t.Fatalf("go version -m: no main module in\n%s", out)
	}
	want := "sluice " + version + " commit " + commit + modified + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if r := mustSluice(t, args...); r.stdout != want {
			t.Fatalf("sluice %s: %q, want %q", args[0], r.stdout, want)
		}
	}
	s := jsonObject(t, mustSluice(t, "--version", "--json"))
	if s["version"] != version || s["command"] != "version" {
		t.Fatalf("--version --json: %v, want version %q", s, version)
	}
}

// A number flag given a value it cannot mean is a usage error, exit 2,
// before anything is read: not the latest version for files --version -1.
func TestNumberFlagsOutOfRangeExitTwo(t *testing.T) {
	dir := t.TempDir()
	table, land := filepath.Join(dir, "t"), filepath.Join(dir, "landing")
	mustSluice(t, "init", table, "--schema", "a:int64")
	os.MkdirAll(land, 0o755)
	for name, args := range map[string][]string{
		"files --version -1":                {"files", table, "--version", "-1"},
		"files --version 0":                 {"files", table, "--version", "0"},
		"rollback --to -1":                  {"rollback", table, "--to", "-1"},
		"rollback --to 0":                   {"rollback", table, "--to", "0"},
		"compact --min-input-files -3":      {"compact", table, "--min-input-files", "-3"},
		"compact --min-input-files 0":       {"compact", table, "--min-input-files", "0"},
		"compact --target-file-size 0":      {"compact", table, "--target-file-size", "0"},
		"compact --target-file-size -1":     {"compact", table, "--target-file-size", "-1"},
		"compact --workers -1":              {"compact", table, "--workers", "-1"},
		"compact --workers 0":               {"compact", table, "--workers", "0"},
		"compact --max-commits -2":          {"compact", table, "--max-commits", "-2"},
		"compact --memory 0":                {"compact", table, "--memory", "0"},
		"compact --min-file-age -1h":        {"compact", table, "--min-file-age", "-1h"},
		"compact -3 on a missing table":     {"compact", filepath.Join(dir, "missing"), "--min-input-files", "-3"},
		"ingest --max-records -1":           {"ingest", table, "--from", land, "--max-records", "-1"},
		"ingest --max-records 0":            {"ingest", table, "--from", land, "--max-records", "0"},
		"ingest --min-age -1s":              {"ingest", table, "--from", land, "--min-age", "-1s"},
		"ingest --memory -1":                {"ingest", table, "--from", land, "--memory", "-1"},
		"ingest --dedup-window -1h":         {"ingest", table, "--from", land, "--dedup-key", "a", "--dedup-window", "-1h"},
		"init --target-file-size 0":         {"init", filepath.Join(dir, "u"), "--schema", "a:int64", "--target-file-size", "0"},
		"init --target-file-size -1":        {"init", filepath.Join(dir, "u"), "--schema", "a:int64", "--target-file-size", "-1"},
		"files --version not a number":      {"files", table, "--version", "x"},
		"rollback --to with a fraction":     {"rollback", table, "--to", "1.5"},
		"compact --min-input-files ten":     {"compact", table, "--min-input-files", "ten"},
		"ingest --max-records beyond int64": {"ingest", table, "--from", land, "--max-records", "99999999999999999999"},
	} {
		t.Run(name, func(t *testing.T) {
			r := sluice(t, nil, args...)
			if r.code != 2 || r.stdout != "" {
				t.Fatalf("sluice %q: exit %d, stdout %q, want 2 and nothing listed; stderr %s", args, r.code, r.stdout, r.stderr)
			}
		})
	}
}
