package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A live file damaged behind sluice's back (cut short, deleted,
// overwritten, swapped for another file) stops the compaction of its
// partition: the command fails with one line naming the file (its --json
// summary too), the partition's live files are as they were, and every
// version holds the table's rows. The other partitions are compacted, each
// in its own commit, as they would be without it.
func TestCompactBadInputFailsCleanly(t *testing.T) {
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	cases := map[string]struct {
		damage func(t *testing.T, victim, other string)
		want   []string
	}{
		"a live file cut in half": {
			damage: func(t *testing.T, victim, _ string) {
				b := readBytes(t, victim)
				writeBytes(t, victim, b[:len(b)/2])
			},
		},
		"a live file deleted": {
			damage: func(t *testing.T, victim, _ string) {
				if err := os.Remove(victim); err != nil {
					t.Fatal(err)
				}
			},
		},
		"a live file overwritten with other bytes of its size": {
			damage: func(t *testing.T, victim, _ string) {
				b := readBytes(t, victim)
				for i := 4; i < len(b)-8; i++ {
					b[i] = byte(i * 7)
				}
				writeBytes(t, victim, b)
			},
		},
		"a live file swapped for another of the table": {
			damage: func(t *testing.T, victim, other string) { writeBytes(t, victim, readBytes(t, other)) },
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "events")
			copyDir(t, sample, dir)
			mustSluice(t, "import", dir, "--from", dir)
			live := strings.Fields(mustSluice(t, "files", dir).stdout)
			victim, other := liveFilePair(t, live)
			c.damage(t, victim, other)

			r := sluice(t, nil, "compact", dir, "--min-input-files", "2")
			failsWithOneLine(t, r, filepath.Base(victim))
			r = sluice(t, nil, "compact", dir, "--min-input-files", "2", "--json")
			var sum struct {
				Error string `json:"error"`
			}
			if r.code != 1 || json.Unmarshal([]byte(r.stdout), &sum) != nil || !strings.Contains(sum.Error, filepath.Base(victim)) {
				t.Fatalf("--json: exit %d, stdout %q: want a summary whose error names %s", r.code, r.stdout, filepath.Base(victim))
			}
			after := strings.Fields(mustSluice(t, "files", dir).stdout)
			if got, want := inFolder(after, filepath.Dir(victim)), inFolder(live, filepath.Dir(victim)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("the damaged partition's live files changed:\nbefore %v\nafter  %v", want, got)
			}
			if len(after) >= len(live) {
				t.Fatalf("%d live files after, %d before: the other partitions were not compacted", len(after), len(live))
			}
			var h struct {
				Versions []struct {
					Version int64 `json:"version"`
					Rows    int64 `json:"rows"`
				} `json:"versions"`
			}
			if err := json.Unmarshal([]byte(mustSluice(t, "history", dir, "--json").stdout), &h); err != nil {
				t.Fatal(err)
			}
			for _, v := range h.Versions {
				if v.Rows != h.Versions[0].Rows {
					t.Fatalf("version %d holds %d rows, the import %d", v.Version, v.Rows, h.Versions[0].Rows)
				}
			}
		})
	}
}

// liveFilePair returns two live files of one partition with at least two
// (so that compaction takes that partition): the one to damage and another.
func liveFilePair(t *testing.T, live []string) (victim, other string) {
	t.Helper()
	byDir := map[string][]string{}
	for _, f := range live {
		byDir[filepath.Dir(f)] = append(byDir[filepath.Dir(f)], f)
	}
	for _, fs := range byDir {
		if len(fs) >= 2 {
			return fs[0], fs[1]
		}
	}
	t.Fatalf("no partition with two live files among %d", len(live))
	return "", ""
}

// inFolder returns the files of files in folder dir, sorted.
func inFolder(files []string, dir string) []string {
	var in []string
	for _, f := range files {
		if filepath.Dir(f) == dir {
			in = append(in, f)
		}
	}
	slices.Sort(in)
	return in
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
