package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// deltaLive is what the independent reader replays of the table in dir
// at its newest version, without reading rows: the checkpoint it started
// from and the live files' paths.
type deltaLive struct {
	Version    int64  `json:"version"`
	Checkpoint *int64 `json:"checkpoint"`
	Files      []struct {
		Path string `json:"path"`
	} `json:"files"`
}

func deltaLiveFiles(t *testing.T, dir string) deltaLive {
	t.Helper()
	out, err := exec.Command("node", filepath.Join(repoRoot(t), "tools", "deltarows.mjs"), "--files-only", dir).Output()
	if err != nil {
		t.Fatalf("deltarows --files-only %s: %v: %s", dir, err, stderrOf(err))
	}
	var l deltaLive
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("deltarows output %q: %v", out, err)
	}
	return l
}

// dataFilesIn are the data files in the table's folder, relative to it,
// sorted, leaving out hidden folders such as _delta_log/.
func dataFilesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), "_") || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// age sets the modification time of the files at paths (relative to dir)
// to d ago.
func age(t *testing.T, dir string, d time.Duration, paths ...string) {
	t.Helper()
	at := time.Now().Add(-d)
	for _, p := range paths {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(p)), at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// After a compaction, vacuum of the Delta table keeps the files the
// compaction removed until their removal is older than the retention,
// and deletes a file no commit ever named once it is older; with
// --retain 0h --force only the live files are left, and the table reads
// as before. --dry-run says why each file would go and deletes nothing;
// nothing under _delta_log/ is touched.
func TestVacuumOfADeltaTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := deltaTableOfCopies(t, dir, 40, 4)
	mustSluice(t, "compact", dir, "--include-current", "-q")
	want := deltaRead(t, dir, -1)
	// A killed writer's file: on disk, in no commit.
	orphan := "p=1/part-00000-orphan-c000.snappy.parquet"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(orphan)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	all := dataFilesIn(t, dir)
	age(t, dir, 10*24*time.Hour, all...)
	logBefore, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}

	// The default week: the removed files were removed just now and stay;
	// the orphan, ten days old, goes.
	dry := mustSluice(t, "vacuum", dir, "--dry-run")
	if !strings.Contains(dry.stdout, orphan) || !strings.Contains(dry.stdout, "in no version of the log") || strings.Count(dry.stdout, "\n") != 1 {
		t.Errorf("dry run listed:\n%s\nwant the orphan alone, with why", dry.stdout)
	}
	if got := dataFilesIn(t, dir); len(got) != len(all) {
		t.Fatalf("the dry run deleted files: %d left of %d", len(got), len(all))
	}
	sum := summaryOf(t, mustSluice(t, "--json", "vacuum", dir))
	if sum["files_deleted"] != float64(1) {
		t.Errorf("vacuum summary %v: want the orphan deleted", sum)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(orphan))); !os.IsNotExist(err) {
		t.Errorf("the orphan is still there: %v", err)
	}

	// --retain 0h --force: what the compaction removed goes too.
	live := deltaLiveFiles(t, dir)
	dry = mustSluice(t, "vacuum", dir, "--dry-run", "--retain", "0h", "--force")
	if n := strings.Count(dry.stdout, "removed from the table at"); n != len(all)-1-len(live.Files) {
		t.Errorf("dry run with --retain 0h listed %d removed files, want %d:\n%s", n, len(all)-1-len(live.Files), dry.stdout)
	}
	mustSluice(t, "vacuum", dir, "--retain", "0h", "--force", "-q")
	var wantFiles []string
	for _, f := range live.Files {
		wantFiles = append(wantFiles, f.Path)
	}
	sort.Strings(wantFiles)
	if got := dataFilesIn(t, dir); strings.Join(got, ",") != strings.Join(wantFiles, ",") {
		t.Errorf("after vacuum --retain 0h the folder holds %v; the log's live files are %v", got, wantFiles)
	}
	if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Errorf("after vacuum the table reads %+v; before %+v", got, want)
	}
	logAfter, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logAfter) != len(logBefore) {
		t.Errorf("vacuum changed _delta_log/: %d entries before, %d after", len(logBefore), len(logAfter))
	}
}

// A table whose delta.deletedFileRetentionDuration is longer than
// --retain keeps its files that long, saying so, unless --force.
func TestVacuumOfADeltaTableHonoursItsRetention(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := deltaTableOfCopies(t, dir, 4, 0)
	// The table's property, set as Spark's ALTER TABLE sets one: a new
	// metaData action.
	c0, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 0)))
	if err != nil {
		t.Fatal(err)
	}
	meta := strings.Replace(strings.Split(string(c0), "\n")[1], `"configuration":{}`, `"configuration":{"delta.deletedFileRetentionDuration":"interval 30 days"}`, 1)
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 2)), []byte(meta+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	orphan := "part-00099-orphan-c000.snappy.parquet"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, orphan), b, 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, dir, 10*24*time.Hour, orphan)
	r := mustSluice(t, "vacuum", dir)
	if !strings.Contains(r.stderr, "0 files") || !strings.Contains(r.stderr, "delta.deletedFileRetentionDuration") {
		t.Errorf("vacuum under a 30-day table retention said %q: want nothing deleted and why", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, orphan)); err != nil {
		t.Fatalf("a ten-day-old file went under a 30-day retention: %v", err)
	}
	sum := summaryOf(t, mustSluice(t, "--json", "vacuum", dir, "--force"))
	if sum["files_deleted"] != float64(1) {
		t.Errorf("vacuum --force summary %v: want the orphan deleted", sum)
	}
}

// Log entries older than delta.logRetentionDuration go once a checkpoint
// stands in front of them (the one a compaction writes at its end), and
// the independent reader then reads the table from that checkpoint, at
// the same rows.
func TestVacuumCleansTheDeltaLogBehindACheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	deltaTableOfCopies(t, dir, 30, 3)
	sum := summaryOf(t, mustSluice(t, "--json", "compact", dir, "--include-current"))
	last := int64(sum["version"].(float64))
	if cp, _ := sum["checkpoint"].(string); !strings.Contains(cp, fmt.Sprintf("checkpoint of version %d", last)) {
		t.Fatalf("compaction summary %v: want a checkpoint of its last version %d", sum, last)
	}
	if got := deltaLiveFiles(t, dir); got.Checkpoint == nil || *got.Checkpoint != last {
		t.Fatalf("the independent reader starts from checkpoint %v, want %d", got.Checkpoint, last)
	}
	want := deltaRead(t, dir, -1)
	var old []string
	for v := int64(0); v <= last; v++ {
		old = append(old, fmt.Sprintf("_delta_log/%020d.json", v))
	}
	age(t, dir, 40*24*time.Hour, old...)
	dry := mustSluice(t, "vacuum", dir, "--dry-run")
	if n := strings.Count(dry.stdout, "a log entry older than"); n != int(last) {
		t.Errorf("dry run lists %d log entries, want the %d commits before the checkpoint:\n%s", n, last, dry.stdout)
	}
	mustSluice(t, "vacuum", dir, "-q")
	for v := int64(0); v <= last; v++ {
		_, err := os.Stat(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
		if gone := os.IsNotExist(err); gone != (v < last) {
			t.Errorf("commit %d: gone %v, want gone only below the checkpoint's version %d", v, gone, last)
		}
	}
	if got := deltaRead(t, dir, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Errorf("after the cleanup the table reads %+v; before %+v", got, want)
	}
}

// A folder holding a sluice table imported in place beside its Delta log
// is not vacuumed, whatever --format says: either vacuum would delete
// files the other table references.
func TestVacuumRefusesAFolderWithBothLogs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	deltaTableOfCopies(t, dir, 4, 0)
	mustSluice(t, "import", dir, "--from", dir, "-q")
	for _, format := range []string{"", "delta", "sluice"} {
		args := []string{"vacuum", dir, "--dry-run"}
		if format != "" {
			args = append(args, "--format", format)
		}
		failsWithOneLine(t, sluice(t, nil, args...), "both a sluice table and a Delta log")
	}
}
