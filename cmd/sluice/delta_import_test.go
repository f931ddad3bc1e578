package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deltaRead is what the independent Delta reader (tools/deltarows.mjs)
// reads of a table at a version (< 0: the newest): the rows and checksum
// of its live files' data columns, each read as the table's type says.
func deltaRead(t *testing.T, dir string, version int) duck {
	t.Helper()
	return deltaReadArgs(t, dir, version)
}

// deltaReadAsStored is deltaRead with each column hashed as DuckDB reads
// it from the files (--as-stored): what a plain DuckDB read of the same
// files gives, for checking that a table adopted exactly those files.
func deltaReadAsStored(t *testing.T, dir string, version int) duck {
	t.Helper()
	return deltaReadArgs(t, dir, version, "--as-stored")
}

func deltaReadArgs(t *testing.T, dir string, version int, extra ...string) duck {
	t.Helper()
	args := append([]string{filepath.Join(repoRoot(t), "tools", "deltarows.mjs"), dir}, extra...)
	if version >= 0 {
		args = append(args, "--version", strconv.Itoa(version))
	}
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		t.Fatalf("deltarows %s: %v: %s", dir, err, stderrOf(err))
	}
	var d duck
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("deltarows output %q: %v", out, err)
	}
	return d
}

// stderrOf is what a failed command printed on stderr.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// Regression (review item 11, then the Delta issue): import of a Delta
// Lake folder adopted every Parquet file in it, those its log removed
// included (111 rows where Delta reads 41). It adopts exactly the files
// live at the log's newest version, or at --version N: the rows the
// independent reader replays from the log, never a removed file.
func TestImportAdoptsADeltaTablesLiveFiles(t *testing.T) {
	for _, c := range []struct {
		src, name string
		version   int
		rows      int64
	}{
		{filepath.Join("delta", "basic-with-inserts-deletes-checkpoint"), "deletes", -1, 41},
		{filepath.Join("delta", "basic-with-inserts-deletes-checkpoint"), "deletes-v4", 4, 50},
		{filepath.Join("delta", "basic-with-inserts-merge"), "merge", -1, 140},
		{filepath.Join("delta-golden", "time-travel-partition-changes-b"), "partitioned", -1, 10},
		{filepath.Join("delta-golden", "v2-checkpoint-parquet"), "v2-checkpoint", -1, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), c.name)
			copyDir(t, filepath.Join(repoRoot(t), "testdata", c.src), dir)
			want := deltaReadAsStored(t, dir, c.version)
			if want.Rows != c.rows {
				t.Fatalf("the independent reader reads %d rows, the table holds %d", want.Rows, c.rows)
			}
			args := []string{"--json", "import", dir, "--from", dir}
			if c.version >= 0 {
				args = append(args, "--version", strconv.Itoa(c.version))
			}
			sum := summaryOf(t, mustSluice(t, args...))
			if sum["rows_in"] != float64(c.rows) {
				t.Errorf("import summary: %v; want rows_in %d", sum, c.rows)
			}
			if got := dataRead(t, lines(mustSluice(t, "files", dir).stdout)); got.Rows != want.Rows || got.Checksum != want.Checksum {
				t.Errorf("DuckDB reads the imported table as %+v; the Delta log's live files %+v", got, want)
			}
			// Again: nothing new.
			again := summaryOf(t, mustSluice(t, "--json", "import", dir, "--from", dir))
			if _, ok := again["version"]; ok && c.version < 0 {
				t.Errorf("a second import committed: %v", again)
			}
		})
	}
}

// A Delta table using what sluice does not read is refused, exit 1, one
// line naming the feature, and no table is created.
func TestImportRefusesDeltaFeaturesItCannotRead(t *testing.T) {
	for name, says := range map[string]string{
		"dv-partitioned-with-checkpoint":     "deletion vectors",
		"table-with-columnmapping-mode-name": "column mapping",
		"type-widening":                      "typeWidening-preview",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), name)
			copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta-golden", name), dir)
			r := sluice(t, nil, "import", dir, "--from", dir, "--json")
			failsWithOneLine(t, r, "import "+dir+": ", says)
			if !strings.Contains(r.stdout, `"error"`) {
				t.Fatalf("--json on failure: %q, want an error object", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(dir, "_sluice")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after the refusal %s/_sluice: %v, want none", dir, err)
			}
		})
	}
}

// A Delta table nested below the folder imported is still refused, naming
// its log: a glob of the outer folder would bring back what it removed.
// --version on a folder that is no Delta table is a usage error.
func TestImportRefusesANestedDeltaTable(t *testing.T) {
	outer := t.TempDir()
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta", "basic-with-inserts-deletes-checkpoint"), filepath.Join(outer, "inner"))
	table := filepath.Join(t.TempDir(), "t")
	r := sluice(t, nil, "import", table, "--from", outer)
	failsWithOneLine(t, r, filepath.Join(outer, "inner", "_delta_log")+" is a Delta Lake log", "rows it deleted")
	plain := filepath.Join(t.TempDir(), "plain")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), plain)
	if r := sluice(t, nil, "import", table, "--from", plain, "--version", "2"); r.code != 2 || !strings.Contains(r.stderr, "not a Delta table") {
		t.Fatalf("import --version of a plain folder: exit %d, %s; want 2 saying it is not a Delta table", r.code, r.stderr)
	}
}

// files lists a Delta table's live files, at the newest version and at
// --version N (from 0), as the independent reader replays them: DuckDB
// reads them to the same rows and checksum.
func TestFilesOfADeltaTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "deletes")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "delta", "basic-with-inserts-deletes-checkpoint"), dir)
	for _, v := range []int{-1, 0, 4, 12} {
		args := []string{"files", dir}
		if v >= 0 {
			args = append(args, "--version", strconv.Itoa(v))
		}
		got, want := dataRead(t, lines(mustSluice(t, args...).stdout)), deltaReadAsStored(t, dir, v)
		if got.Rows != want.Rows || got.Checksum != want.Checksum {
			t.Errorf("version %d: DuckDB reads the files listed as %+v, the independent reader %+v", v, got, want)
		}
	}
	sum := summaryOf(t, mustSluice(t, "--json", "files", dir))
	if sum["format"] != "delta" || sum["version"] != float64(13) || sum["rows"] != float64(41) {
		t.Errorf("files --json: %v; want format delta, version 13, rows 41", sum)
	}
	r := sluice(t, nil, "files", dir, "--version", "99")
	failsWithOneLine(t, r, "version 99", "no such version")
}
