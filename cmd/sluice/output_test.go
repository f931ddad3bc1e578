package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// A newline in a folder name does not split a `files` line: the name
// prints quoted and escaped, one file a line, and unquotes to the file;
// other names print as they are. -0 prints the raw names, each ended by
// a NUL, as find -print0 does; --json holds them too.
func TestFilesWithControlCharactersInNames(t *testing.T) {
	table := filepath.Join(t.TempDir(), "events")
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	odd := filepath.Join(table, "src=late\nbatch")
	copyDir(t, sample, odd)
	copyDir(t, sample, filepath.Join(table, "src=ok"))
	mustSluice(t, "import", table, "--from", table)
	want := parquetFiles(t, table)
	slices.Sort(want)

	text := mustSluice(t, "files", table).stdout
	ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(ls) != len(want) {
		t.Fatalf("files printed %d lines for %d files:\n%s", len(ls), len(want), text)
	}
	var got []string
	quoted := 0
	for _, l := range ls {
		if strings.HasPrefix(l, `"`) {
			name, err := strconv.Unquote(l)
			if err != nil || !strings.HasPrefix(name, odd+"/") {
				t.Fatalf("line %q: unquotes to %q (%v), want a file under %q", l, name, err, odd)
			}
			quoted++
			l = name
		}
		got = append(got, l)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) || quoted != len(want)/2 {
		t.Fatalf("files (%d quoted):\n%q\nwant\n%q", quoted, got, want)
	}

	nul := mustSluice(t, "files", table, "-0").stdout
	if !strings.HasSuffix(nul, "\x00") {
		t.Fatalf("files -0 output does not end with a NUL: %q", nul)
	}
	raw := strings.Split(strings.TrimSuffix(nul, "\x00"), "\x00")
	slices.Sort(raw)
	if !slices.Equal(raw, want) {
		t.Fatalf("files -0:\n%q\nwant\n%q", raw, want)
	}

	var s struct {
		Files []string `json:"files"`
	}
	if err := json.Unmarshal([]byte(mustSluice(t, "files", table, "--json").stdout), &s); err != nil {
		t.Fatal(err)
	}
	slices.Sort(s.Files)
	if !slices.Equal(s.Files, want) {
		t.Fatalf("files --json:\n%q\nwant\n%q", s.Files, want)
	}
}

// A --run-id holding a control character is refused (exit 2, nothing
// done); one that a manifest holds already (another writer's) prints
// escaped in history, so that one version is always one line.
func TestRunIDControlCharacters(t *testing.T) {
	table := filepath.Join(t.TempDir(), "t")
	for _, id := range []string{"a\nb", "a\x1b[2Kb", "a\tb"} {
		r := sluice(t, nil, "init", table, "--schema", "a:int64", "--run-id", id)
		if r.code != 2 {
			t.Fatalf("--run-id %q: exit %d, want 2; stderr %s", id, r.code, r.stderr)
		}
		if strings.ContainsAny(r.stderr, "\x1b\t") {
			t.Fatalf("the refusal prints the control character: %q", r.stderr)
		}
	}
	if r := sluice(t, nil, "history", table); r.code != 1 {
		t.Fatalf("a refused --run-id created the table: history exit %d\n%s", r.code, r.stdout)
	}

	mustSluice(t, "init", table, "--schema", "a:int64", "--run-id", "first run")
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, table, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	fake := "x\n99        2099-01-01 00:00:00Z  create     fake"
	if _, err := tbl.Rollback(ctx, 1, fake); err != nil {
		t.Fatal(err)
	}
	hist := lines(mustSluice(t, "history", table).stdout)
	if len(hist) != 3 || !strings.Contains(hist[1], "first run") || !strings.Contains(hist[2], strconv.Quote(fake)) {
		t.Fatalf("history:\n%s\nwant a header and two versions, the second's run %s", strings.Join(hist, "\n"), strconv.Quote(fake))
	}
}

// A failure's line on stderr escapes a control character of a name in
// it: the message stays one line, and cannot drive the terminal.
func TestFailureLineEscapesControlCharacters(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no\x1b[31mtable")
	r := sluice(t, nil, "files", missing)
	failsWithOneLine(t, r, `no\x1b[31mtable`)
	if strings.Contains(r.stderr, "\x1b") {
		t.Fatalf("stderr holds a raw escape: %q", r.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("files created the table folder")
	}
}
