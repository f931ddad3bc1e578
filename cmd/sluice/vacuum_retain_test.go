package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sampleCopy copies the sample table's folder (12 files, 3 days) to a
// fresh folder and returns it with the rows DuckDB reads there.
func sampleCopy(t *testing.T) (string, duck) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), dir)
	return dir, duckRead(t, parquetFiles(t, dir))
}

// compactAllOf compacts every partition of the table (the sample has 4
// files a day, under the default minimum of 5) and returns the live files.
func compactAllOf(t *testing.T, table string) []string {
	t.Helper()
	sum := summaryOf(t, mustSluice(t, "compact", table, "--min-input-files", "2", "--json"))
	if sum["files_in"] != float64(12) || sum["files_out"] != float64(3) {
		t.Fatalf("compaction summary %v: want 12 files in, 3 out", sum)
	}
	return lines(mustSluice(t, "files", table).stdout)
}

// compactedSample imports a copy of the sample in place and compacts it:
// the 12 files it replaced stay on disk for vacuum. It returns the table
// and the replaced files.
func compactedSample(t *testing.T) (string, []string) {
	t.Helper()
	dir, _ := sampleCopy(t)
	mustSluice(t, "import", dir, "--from", dir)
	live := compactAllOf(t, dir)
	var replaced []string
	for _, f := range parquetFiles(t, dir) {
		if !slices.Contains(live, f) {
			replaced = append(replaced, f)
		}
	}
	if len(replaced) != 12 {
		t.Fatalf("%d replaced files on disk, want 12", len(replaced))
	}
	return dir, replaced
}

func countExisting(files []string) int {
	n := 0
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			n++
		}
	}
	return n
}

// Regression (issue 13, item 3): --retain 0 was read as unset, so it kept
// a week and skipped the under-24h check. An explicit 0 means 0: refused
// without --force, and with it everything the latest version does not
// reference goes.
func TestVacuumRetainZeroMeansZero(t *testing.T) {
	dir, replaced := compactedSample(t)
	// A retention under a day is refused as unsafe (exit 1, one line),
	// before the table is opened, as validate refuses it in a pipeline.
	r := sluice(t, nil, "vacuum", dir, "--retain", "0")
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "24h") || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("vacuum --retain 0: exit %d, %s; want 1 and one line naming 24h and --force", r.code, r.stderr)
	}
	if n := countExisting(replaced); n != len(replaced) {
		t.Fatalf("a refused vacuum deleted %d files", len(replaced)-n)
	}

	sum := summaryOf(t, mustSluice(t, "vacuum", dir, "--retain", "0", "--force", "--json"))
	if sum["files_deleted"] != float64(len(replaced)) || sum["retained_versions"] != float64(1) {
		t.Fatalf("vacuum --retain 0 --force: %v; want the %d replaced files deleted, 1 version retained", sum, len(replaced))
	}
	if n := countExisting(replaced); n != 0 {
		t.Fatalf("%d replaced files left after vacuum --retain 0 --force", n)
	}
	live := lines(mustSluice(t, "files", dir).stdout)
	if n := countExisting(live); n != 3 || len(live) != 3 {
		t.Fatalf("after vacuum %d of the %d live files exist, want 3 of 3", n, len(live))
	}
}

// A negative retention is a usage error (exit 2), with or without --force
// (with it, the cutoff lay in the future and vacuum deleted files younger
// than now), and deletes nothing.
func TestVacuumNegativeRetentionIsUsageError(t *testing.T) {
	dir, replaced := compactedSample(t)
	for _, args := range [][]string{
		{"vacuum", dir, "--retain", "-1h"},
		{"vacuum", dir, "--retain", "-1h", "--force"},
	} {
		r := sluice(t, nil, args...)
		if r.code != 2 {
			t.Fatalf("sluice %v: exit %d, want 2; stderr %s", args, r.code, r.stderr)
		}
		if n := countExisting(replaced); n != len(replaced) {
			t.Fatalf("sluice %v deleted %d files", args, len(replaced)-n)
		}
	}
}
