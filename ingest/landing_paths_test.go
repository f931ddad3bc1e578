package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/ingest"
)

// A symbolic link in a landing folder that leads out of it, to a file or
// a folder, is never read through: the run fails naming the link, nothing
// of what lies outside reaches the table, and the files outside are left
// as they were (issue 19).
func TestIngestNeverFollowsALandingLinkOutOfTheLandingRoot(t *testing.T) {
	for name, link := range map[string]struct{ name, target string }{
		"a link to a file outside":        {"stolen.jsonl", "outside/secret.jsonl"},
		"a link to a folder outside":      {"more", "outside"},
		"a relative link climbing out":    {"up.jsonl", "../outside/secret.jsonl"},
		"a relative folder link climbing": {"deeper/up", "../../outside"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			landing, outside := filepath.Join(dir, "landing"), filepath.Join(dir, "outside")
			tb := newTable(t, filepath.Join(dir, "events"))
			put(t, landing, "a.jsonl", events(0, 3, "2024-01-31"))
			put(t, outside, "secret.jsonl", events(100, 5, "2024-01-31"))
			target := link.target
			if !strings.HasPrefix(target, "..") {
				target = filepath.Join(dir, target)
			}
			at := filepath.Join(landing, filepath.FromSlash(link.name))
			if err := os.MkdirAll(filepath.Dir(at), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.FromSlash(target), at); err != nil {
				t.Fatal(err)
			}
			_, err := ingest.Run(context.Background(), tb, landing, ingest.Options{})
			if !errors.Is(err, cloud.ErrOutsideRoot) || !strings.Contains(err.Error(), filepath.Base(link.name)) {
				t.Fatalf("err = %v, want ErrOutsideRoot naming %s", err, link.name)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("the error is not one line: %q", err)
			}
			if ids := listIDs(t, tb); slices.ContainsFunc(ids, func(id int64) bool { return id >= 100 }) {
				t.Errorf("rows from outside the landing folder reached the table: %v", ids)
			}
			b, err := os.ReadFile(filepath.Join(outside, "secret.jsonl"))
			if err != nil || string(b) != string(events(100, 5, "2024-01-31")) {
				t.Errorf("the file outside changed: %v", err)
			}
		})
	}
}

// A landing file whose name no store takes as a key (a backslash, which
// another system can leave in a name) is never read as some other path:
// that file fails, named, with ErrInvalidKey, and the others are taken.
func TestIngestRefusesALandingFileNamedWithBackslashes(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	tb := newTable(t, filepath.Join(dir, "events"))
	put(t, landing, "a.jsonl", events(0, 3, "2024-01-31"))
	name := `b\..\..\b.jsonl`
	if err := os.WriteFile(filepath.Join(landing, name), events(3, 3, "2024-01-31"), 0o640); err != nil {
		t.Fatal(err)
	}
	res, err := ingest.Run(context.Background(), tb, landing, ingest.Options{})
	if !errors.Is(err, cloud.ErrInvalidKey) || !strings.Contains(err.Error(), name) {
		t.Fatalf("err = %v, want ErrInvalidKey naming %s", err, name)
	}
	if res.FilesIn != 1 || res.FilesFailed != 1 || len(res.Failures) != 1 || !strings.HasSuffix(res.Failures[0].File, name) {
		t.Fatalf("%+v: want a.jsonl taken and %s failed", res, name)
	}
	if ids := listIDs(t, tb); !slices.Equal(ids, seq(0, 3)) {
		t.Fatalf("the table holds %v, want %v", ids, seq(0, 3))
	}
}
