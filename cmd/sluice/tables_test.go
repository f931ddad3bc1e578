package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Import of a Hive folder in place, then `files`: DuckDB reading exactly
// the listed files sees the same rows as reading the folder before import.
func TestImportThenFilesMatchesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), dir)
	before := duckRead(t, parquetFiles(t, dir))
	if before.Rows == 0 {
		t.Fatal("sample folder is empty")
	}
	r := mustSluice(t, "import", dir, "--from", dir, "--json")
	var sum map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("--json summary %q: %v", r.stdout, err)
	}
	if sum["version"] != float64(1) || sum["created"] != true || sum["rows_in"] != float64(before.Rows) {
		t.Fatalf("summary %v: want version 1, created, rows_in %d", sum, before.Rows)
	}
	files := lines(mustSluice(t, "files", dir).stdout)
	for _, f := range files {
		if !filepath.IsAbs(f) {
			t.Fatalf("files prints %q, want an absolute path", f)
		}
	}
	after := duckRead(t, files)
	if after.Rows != before.Rows || after.Checksum != before.Checksum || !slices.Equal(after.Columns, before.Columns) {
		t.Fatalf("DuckDB over `sluice files` = %+v, over the folder = %+v", after, before)
	}
	// A second import adds nothing and commits nothing.
	r = mustSluice(t, "import", dir, "--from", dir, "--json")
	if strings.Contains(r.stdout, `"version"`) {
		t.Fatalf("re-import committed a version: %s", r.stdout)
	}
	// A new file dropped into the folder is adopted by the next import,
	// in one commit.
	src := files[0]
	extra := filepath.Join(filepath.Dir(src), "part-99999-extra.parquet")
	b, _ := os.ReadFile(src)
	os.WriteFile(extra, b, 0o644)
	r = mustSluice(t, "import", dir, "--from", dir, "--json")
	if !strings.Contains(r.stdout, `"files_added":1`) || !strings.Contains(r.stdout, `"version":2`) {
		t.Fatalf("import of one new file: %s", r.stdout)
	}
}

func TestHistoryAndRollback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), dir)
	// Version 1 holds the first day, version 2 the rest.
	days, _ := filepath.Glob(filepath.Join(dir, "date=*"))
	slices.Sort(days)
	hidden := filepath.Join(t.TempDir(), "later")
	os.MkdirAll(hidden, 0o755)
	for _, d := range days[1:] {
		os.Rename(d, filepath.Join(hidden, filepath.Base(d)))
	}
	mustSluice(t, "import", dir, "--from", dir)
	v1 := lines(mustSluice(t, "files", dir).stdout)
	for _, d := range days[1:] {
		os.Rename(filepath.Join(hidden, filepath.Base(d)), d)
	}
	mustSluice(t, "import", dir, "--from", dir)
	v2 := lines(mustSluice(t, "files", dir).stdout)
	if len(v2) <= len(v1) {
		t.Fatalf("version 2 has %d files, version 1 %d", len(v2), len(v1))
	}
	r := mustSluice(t, "rollback", dir, "--to", "1", "--json")
	if !strings.Contains(r.stdout, `"version":3`) {
		t.Fatalf("rollback summary: %s", r.stdout)
	}
	now := lines(mustSluice(t, "files", dir).stdout)
	if !slices.Equal(now, v1) {
		t.Fatalf("after rollback --to 1 the live files are\n%v\nwant version 1's\n%v", now, v1)
	}
	if got := lines(mustSluice(t, "files", dir, "--version", "2").stdout); !slices.Equal(got, v2) {
		t.Fatalf("files --version 2 changed after the rollback")
	}
	var hist struct {
		Versions []struct {
			Version      int64  `json:"version"`
			Operation    string `json:"operation"`
			FilesAdded   int64  `json:"files_added"`
			FilesRemoved int64  `json:"files_removed"`
			RolledBackTo int64  `json:"rolled_back_to"`
		} `json:"versions"`
	}
	if err := json.Unmarshal([]byte(mustSluice(t, "history", dir, "--json").stdout), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist.Versions) != 3 || hist.Versions[2].Operation != "rollback" || hist.Versions[2].RolledBackTo != 1 ||
		hist.Versions[1].FilesAdded != int64(len(v2)-len(v1)) || hist.Versions[2].FilesRemoved != int64(len(v2)-len(v1)) {
		t.Fatalf("history: %+v", hist.Versions)
	}
	text := mustSluice(t, "history", dir).stdout
	if !strings.Contains(text, "rollback to 1") || len(lines(text)) != 4 {
		t.Fatalf("history table:\n%s", text)
	}
}

// Every folder of Spark-written fixtures imports as its Delta log says,
// or is refused naming the feature; without its Delta log, it imports, or
// is refused with an error naming the file and the column; what imports
// reads back the same through DuckDB.
func TestImportSparkFixtures(t *testing.T) {
	entries, err := os.ReadDir(sparkDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			// Each folder is a Delta table: while its log is there, the
			// log, not a glob, says which files are live. The import
			// adopts those, the rows the independent reader reads, or
			// refuses naming the feature it cannot read.
			withLog := filepath.Join(t.TempDir(), e.Name())
			copyDir(t, filepath.Join(sparkDir(t), e.Name()), withLog)
			r := sluice(t, nil, "import", withLog, "--from", withLog)
			if says, ok := map[string]string{"125-iterator-bug": "deletion vectors", "type-widening": "typeWidening-preview"}[e.Name()]; ok {
				failsWithOneLine(t, r, "unsupported Delta table feature", says)
			} else if r.code != 0 {
				t.Fatalf("import of the Delta table: exit %d: %s", r.code, r.stderr)
			} else if got, want := dataRead(t, lines(mustSluice(t, "files", withLog).stdout)), deltaReadAsStored(t, withLog, -1); got.Rows != want.Rows || got.Checksum != want.Checksum {
				t.Fatalf("DuckDB reads the imported Delta table as %+v, the independent reader %+v", got, want)
			}
			// Without it, the folder is Spark's plain Parquet output.
			dir := filepath.Join(t.TempDir(), e.Name())
			copyDir(t, filepath.Join(sparkDir(t), e.Name()), dir)
			if err := os.RemoveAll(filepath.Join(dir, "_delta_log")); err != nil {
				t.Fatal(err)
			}
			r = sluice(t, nil, "import", dir, "--from", dir, "--json")
			// Only Delta's date -> timestamp_ntz widening is refused, by
			// design (see testdata/spark-written/README.md); every other
			// folder, the nested ones included, imports.
			if (r.code != 0) != (e.Name() == "type-widening") {
				t.Fatalf("import exit %d: %s", r.code, r.stderr)
			}
			if r.code != 0 {
				// A refusal names the file and the column, and says
				// why: a type sluice cannot represent yet, or columns
				// whose types no one type reads (Delta's date ->
				// timestamp_ntz widening: a date is never silently
				// read as a timestamp).
				failsWithOneLine(t, r, ".parquet", "column")
				if !strings.Contains(r.stderr, "not supported") && !strings.Contains(r.stderr, "incompatible") {
					t.Fatalf("refusal must say what is not supported: %s", r.stderr)
				}
				t.Logf("refused: %s", strings.TrimSpace(r.stderr))
				return
			}
			files := lines(mustSluice(t, "files", dir).stdout)
			want := duckRead(t, parquetFiles(t, dir))
			got := duckRead(t, files)
			if got.Rows != want.Rows || got.Checksum != want.Checksum {
				t.Fatalf("DuckDB over sluice files: %+v; over the folder: %+v", got, want)
			}
		})
	}
}

// A schema file may declare nested columns: the table's manifest keeps
// them as written.
func TestInitNestedSchemaFromYAML(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "schema.yaml")
	if err := os.WriteFile(yaml, []byte("- {name: id, type: int64}\n"+
		"- {name: s, type: 'struct<a:int64,b:string?>', nullable: true}\n"+
		"- {name: tags, type: 'list<string?>'}\n"+
		"- {name: attrs, type: 'map<string,list<int32>?>', nullable: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(t.TempDir(), "t")
	mustSluice(t, "init", table, "--schema", "@"+yaml)
	tbl, err := catalog.Open(context.Background(), table, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	m, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Schema.String(), "id:int64,s:struct<a:int64,b:string?>?,tags:list<string?>,attrs:map<string,list<int32>?>?"; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	r := sluice(t, nil, "init", filepath.Join(t.TempDir(), "u"), "--schema", "m:map<string?,int64>")
	if r.code != 2 || !strings.Contains(r.stderr, "a map's key cannot be nullable") {
		t.Fatalf("exit %d, stderr %q; want exit 2 saying a map's key cannot be nullable", r.code, r.stderr)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown flag":        {"files", "x", "--bogus"},
		"missing table":       {"files"},
		"init without schema": {"init", t.TempDir()},
		"bad schema type":     {"init", t.TempDir(), "--schema", "a:int128"},
		"rollback without to": {"rollback", t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			r := sluice(t, nil, args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %s", r.code, r.stderr)
			}
		})
	}
}

// The scheduler's commands name the pipeline file they could not read.
func TestServeOfAMissingConfigSaysSo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, cmd := range []string{"serve", "run", "validate", "runs"} {
		args := []string{cmd, "--config", missing}
		if cmd == "run" {
			args = append(args, "job")
		}
		failsWithOneLine(t, sluice(t, nil, args...), "read pipeline", missing)
	}
}

// Import works the same on object stores: the folder is adopted where it
// lies and `files` prints full URLs.
func TestImportOnObjectStores(t *testing.T) {
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	want := duckRead(t, parquetFiles(t, sample))
	for _, kind := range []string{"s3", "azure"} {
		t.Run(kind, func(t *testing.T) {
			loc := testenv.Location(t, kind) + "/events"
			ctx := context.Background()
			st, err := cloud.Open(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, f := range parquetFiles(t, sample) {
				rel, _ := filepath.Rel(sample, f)
				b, _ := os.ReadFile(f)
				if _, err := st.Put(ctx, filepath.ToSlash(rel), bytes.NewReader(b), int64(len(b)), cloud.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := mustSluice(t, "import", loc, "--from", loc, "--json")
			if !strings.Contains(r.stdout, fmt.Sprintf(`"rows_in":%d`, want.Rows)) || !strings.Contains(r.stdout, `"files_added":12`) {
				t.Fatalf("import summary: %s", r.stdout)
			}
			files := lines(mustSluice(t, "files", loc).stdout)
			if len(files) != 12 {
				t.Fatalf("%d files listed, want 12", len(files))
			}
			for _, f := range files {
				if !strings.HasPrefix(f, strings.SplitN(loc, "/", 4)[0]+"//") || !strings.HasSuffix(f, ".parquet") {
					t.Fatalf("files prints %q, want a full URL under %s", f, loc)
				}
			}
		})
	}
}

// A table may adopt a folder outside its own root: the files stay where
// they are and `files` names them there.
func TestImportFromAnotherFolder(t *testing.T) {
	sample := filepath.Join(repoRoot(t), "testdata", "sample", "events")
	table := filepath.Join(t.TempDir(), "events")
	mustSluice(t, "import", table, "--from", sample)
	files := lines(mustSluice(t, "files", table).stdout)
	want := parquetFiles(t, sample)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Fatalf("files:\n%v\nwant the sample's own paths:\n%v", files, want)
	}
	// Vacuum never touches files outside the table root, and says it
	// deleted nothing with an empty list.
	if out := mustSluice(t, "vacuum", table, "--retain", "1s", "--force", "--json").stdout; !strings.Contains(out, `"deleted":[]`) {
		t.Fatalf("vacuum --json: %s; want \"deleted\":[]", out)
	}
	for _, f := range want {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("vacuum removed %s outside the table", f)
		}
	}
}

// Regression (review item 9): rollback checked only the files under the
// table's root, so after a file adopted from another folder was deleted,
// `rollback --to 1` committed a version whose files do not all exist. It
// fails, exit 1, naming the file, and commits nothing.
func TestRollbackRefusesMissingFileOfAnotherFolder(t *testing.T) {
	src := filepath.Join(t.TempDir(), "spark")
	copyDir(t, filepath.Join(repoRoot(t), "testdata", "sample", "events"), src)
	days, _ := filepath.Glob(filepath.Join(src, "date=*"))
	slices.Sort(days)
	later := filepath.Join(t.TempDir(), "later")
	if err := os.Rename(days[len(days)-1], later); err != nil {
		t.Fatal(err)
	}
	table := filepath.Join(t.TempDir(), "events")
	mustSluice(t, "import", table, "--from", src)
	v1 := lines(mustSluice(t, "files", table).stdout)
	if err := os.Rename(later, days[len(days)-1]); err != nil {
		t.Fatal(err)
	}
	mustSluice(t, "import", table, "--from", src) // version 2: the last day too
	if err := os.Remove(v1[0]); err != nil {
		t.Fatal(err)
	}
	failsWithOneLine(t, sluice(t, nil, "rollback", table, "--to", "1"), "rollback to version 1", v1[0], "data file missing")
	if out := mustSluice(t, "history", table, "--json").stdout; strings.Contains(out, `"rollback"`) {
		t.Fatalf("a rollback was committed: %s", out)
	}
}
