package main

import (
	"bytes"
	"database/sql"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Builds of sluice with and without cgo compress Parquet pages with
// different zstd libraries (internal/pqio: the C one, klauspost's pure Go
// one), and a lake may be written by one and compacted or published by the
// other: a static binary ingesting, the default one in the scheduler. Each
// writes a table with flat and nested columns, dictionaries and NULLs, in
// two runs of a few rows (small pages: the pure-Go encoder's frames of
// under 256 bytes do not say their size), and the other publishes it to
// SQLite and compacts it. SQLite holds the rows DuckDB reads from the
// written files, and DuckDB reads the same rows after the compaction.
// Before the fix, the cgo build failed both on the pure-Go build's files:
// "corrupt or not a Parquet file ... input of length 10 is too short to
// contain a PLAIN encoded byte array value" (issue 12).
func TestTablesOfEitherBuildCompactAndPublishWithTheOther(t *testing.T) {
	bins := buildsWithAndWithoutCgo(t)
	for _, c := range []struct{ writer, reader string }{{"pure Go", "cgo"}, {"cgo", "pure Go"}} {
		t.Run(c.writer+" writes, "+c.reader+" compacts and publishes", func(t *testing.T) {
			crossBuildTables(t, bins[c.writer], bins[c.reader])
		})
	}
}

// buildsWithAndWithoutCgo returns the binaries of sluice built with cgo
// ("cgo") and without ("pure Go"): the one TestMain built, and the other
// built now.
func buildsWithAndWithoutCgo(t *testing.T) map[string]string {
	t.Helper()
	bi, err := buildinfo.ReadFile(sluiceBin)
	if err != nil {
		t.Fatal(err)
	}
	thisCgo := false
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			thisCgo = s.Value == "1"
		}
	}
	other := filepath.Join(t.TempDir(), "sluice-other")
	env := "CGO_ENABLED=0"
	if !thisCgo {
		env = "CGO_ENABLED=1"
		out, err := exec.Command("go", "env", "CC").Output()
		if err != nil {
			t.Fatalf("go env CC: %v", err)
		}
		cc := strings.Fields(string(out)) // the compiler, then its flags
		if len(cc) == 0 {
			cc = []string{"gcc"}
		}
		if _, err := exec.LookPath(cc[0]); err != nil {
			// This run is CGO_ENABLED=0 and the machine cannot build with
			// cgo at all; the suite's cgo run (make test) covers both ways.
			t.Skipf("the cgo build of sluice needs a C compiler (gcc; go env CC is %q): %v; this run is CGO_ENABLED=0",
				strings.TrimSpace(string(out)), err)
		}
	}
	cmd := exec.Command("go", "build", "-o", other, ".")
	cmd.Env = append(os.Environ(), env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s go build: %v\n%s", env, err, out)
	}
	if thisCgo {
		return map[string]string{"cgo": sluiceBin, "pure Go": other}
	}
	return map[string]string{"cgo": other, "pure Go": sluiceBin}
}

// runBin runs the sluice binary bin, failing t unless it exits 0.
func runBin(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// flatRecord is record k of the flat table: repeated strings (a
// dictionary) and a NULL in every nullable column every few records.
func flatRecord(k int) string {
	opt := func(every int, v string) string {
		if k%every == 0 {
			return "null"
		}
		return v
	}
	return fmt.Sprintf(`{"id":%d,"kind":%q,"note":%s,"amount":%s,"ok":%s,"score":%s,"u":%s,"event_time":"2024-03-0%dT00:00:%02dZ"}`,
		k, []string{"click", "view", "buy"}[k%3], opt(2, fmt.Sprintf(`"note %d"`, k)), opt(3, fmt.Sprintf(`"%d.25"`, k)),
		opt(4, []string{"true", "false"}[k%2]), opt(5, fmt.Sprintf("%d.5", k)),
		opt(3, fmt.Sprintf(`"6f1c3b9e-2a4d-4b8e-9c1f-%012d"`, k)), 1+k%2, k)
}

// crossBuildTables has writer ingest a flat and a nested table, two small
// files a day each, and reader publish the flat one and compact both.
func crossBuildTables(t *testing.T, writer, reader string) {
	dir := t.TempDir()
	tables := []struct {
		name, schema string
		record       func(int) string
	}{
		{"flat", "id:int64,kind:string,note:string?,amount:decimal(10,2)?,ok:bool?,score:float64?,u:uuid?,event_time:timestamp", flatRecord},
		{"nested", "id:int64,event_time:timestamp," +
			"s:struct<a:int64,b:string?,t:timestamp?,u:uuid?,p:decimal(10,2)?>?," +
			"tags:list<string?>?,attrs:map<string,int64?>?," +
			"items:list<struct<a:int32?,b:string>?>?,ml:map<string,list<int64>?>?", nestedRecord},
	}
	want := map[string][]string{}
	for _, tb := range tables {
		loc, land := filepath.Join(dir, tb.name), filepath.Join(dir, tb.name+"-landing")
		runBin(t, writer, "init", loc, "--schema", tb.schema, "--partition-by", "day(event_time)")
		for run := range 2 {
			var b strings.Builder
			for k := run * 8; k < run*8+8; k++ {
				b.WriteString(tb.record(k) + "\n")
			}
			writeFile(t, land, fmt.Sprintf("run%d.jsonl", run), b.String())
			runBin(t, writer, "ingest", loc, "--from", land)
		}
		want[tb.name] = duckJSONRows(t, lines(runBin(t, writer, "files", loc)))
		if len(want[tb.name]) != 16 {
			t.Fatalf("%s: DuckDB reads %d rows of the written files, want 16", tb.name, len(want[tb.name]))
		}
	}

	// Publish first, so that it reads the writer's files.
	flat := filepath.Join(dir, "flat")
	db := filepath.Join(dir, "warehouse.db")
	runBin(t, reader, "publish", flat, "--to", "sqlite://"+db, "--as", "flat")
	duck := duckQueryRows(t, fmt.Sprintf(`select id, kind, note, amount::varchar, ok::int, score, u,
		strftime(event_time, '%%Y-%%m-%%d %%H:%%M:%%S.%%f') from read_parquet([%s], hive_partitioning=false) order by id`,
		quotedPaths(lines(runBin(t, writer, "files", flat)))))
	if got := sqliteQueryRows(t, db, "select id, kind, note, amount, ok, score, u, event_time || '' from flat order by id"); !slices.Equal(got, duck) {
		t.Fatalf("SQLite holds\n%s\nDuckDB reads\n%s", strings.Join(got, "\n"), strings.Join(duck, "\n"))
	}

	for _, tb := range tables {
		loc := filepath.Join(dir, tb.name)
		before := lines(runBin(t, reader, "files", loc))
		if r := runBin(t, reader, "compact", loc, "--min-input-files", "2", "--json"); !strings.Contains(r, fmt.Sprintf(`"files_in":%d`, len(before))) {
			t.Fatalf("%s: compact summary %s, want all %d files in", tb.name, r, len(before))
		}
		after := lines(runBin(t, reader, "files", loc))
		if len(after) != 2 {
			t.Fatalf("%s: %d files after compaction, want one per day", tb.name, len(after))
		}
		if got := duckJSONRows(t, after); !slices.Equal(got, want[tb.name]) {
			t.Fatalf("%s: after compaction DuckDB reads\n%s\nwant\n%s", tb.name, strings.Join(got, "\n"), strings.Join(want[tb.name], "\n"))
		}
	}
}

// quotedPaths is files as a DuckDB list's items.
func quotedPaths(files []string) string {
	var q []string
	for _, f := range files {
		q = append(q, "'"+strings.ReplaceAll(f, "'", "''")+"'")
	}
	return strings.Join(q, ",")
}

// duckQueryRows runs query in DuckDB: its rows, tab-separated text, NULL
// as "NULL".
func duckQueryRows(t *testing.T, query string) []string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(repoRoot(t), "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(query)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, errb.String())
	}
	return lines(string(out))
}

// sqliteQueryRows runs query in the SQLite file db: its rows as duckQueryRows
// prints them.
func sqliteQueryRows(t *testing.T, db, query string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		text := make([]string, len(cols))
		for i, v := range vals {
			text[i] = "NULL"
			if v.Valid {
				text[i] = v.String
			}
		}
		out = append(out, strings.Join(text, "\t"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
