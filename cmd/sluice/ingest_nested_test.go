package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nestedRecord is record k of the nested table's landing files: NULLs,
// empty lists and empty maps at every level, varying with k.
func nestedRecord(k int) string {
	day := 1 + k%2
	s := "null"
	switch k % 4 {
	case 1:
		s = fmt.Sprintf(`{"a":%d,"b":"b\"%d","t":"2024-03-0%dT01:02:03.5Z"}`, k, k, day)
	case 2:
		s = fmt.Sprintf(`{"a":%d}`, k)
	case 3:
		s = fmt.Sprintf(`{"a":%d,"b":null,"u":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","p":"%d.25"}`, k, k, k)
	}
	tags := [...]string{`null`, `[]`, `["x",null]`, fmt.Sprintf(`["t%d"]`, k)}[k%4]
	attrs := [...]string{`null`, `{}`, fmt.Sprintf(`{"k%d":%d,"n":null}`, k, k)}[k%3]
	items := [...]string{`null`, `[]`, fmt.Sprintf(`[{"a":%d,"b":"i"},{"a":null,"b":""}]`, k), `[{"b":"only"}]`, `[null]`}[k%5]
	ml := [...]string{`null`, `{}`, `{"e":[]}`, fmt.Sprintf(`{"a":[%d,%d],"z":null}`, k, -k)}[k%4]
	return fmt.Sprintf(`{"id":%d,"event_time":"2024-03-0%dT00:00:%02dZ","s":%s,"tags":%s,"attrs":%s,"items":%s,"ml":%s}`,
		k, day, k%60, s, tags, attrs, items, ml)
}

// JSON lines into a table with struct, list and map columns through the
// CLI, in three runs (several small files per day), then compacted: DuckDB
// reads the same rows, to_json of every row, before and after, and the
// records the table cannot hold are quarantined with their paths. A CSV
// file into the table fails, naming the column.
func TestIngestCommandNestedColumnsThenCompact(t *testing.T) {
	dir := t.TempDir()
	land, loc := filepath.Join(dir, "landing"), filepath.Join(dir, "nested")
	schema := "id:int64,event_time:timestamp," +
		"s:struct<a:int64,b:string?,t:timestamp?,u:uuid?,p:decimal(10,2)?>?," +
		"tags:list<string?>?,attrs:map<string,int64?>?," +
		"items:list<struct<a:int32?,b:string>?>?,ml:map<string,list<int64>?>?"
	mustSluice(t, "init", loc, "--schema", schema, "--partition-by", "day(event_time)")
	k := 0
	for run := range 3 {
		var b strings.Builder
		for range 40 {
			b.WriteString(nestedRecord(k) + "\n")
			k++
		}
		b.WriteString(fmt.Sprintf(`{"id":%d,"event_time":"2024-03-01T00:00:00Z","items":[{"a":1,"b":"x"},{"b":7}]}`+"\n", 1000+run))
		writeFile(t, land, fmt.Sprintf("run%d.jsonl", run), b.String())
		s := summaryOf(t, mustSluice(t, "ingest", loc, "--from", land, "--json"))
		if s["records_in"] != 41.0 || s["rows_written"] != 40.0 || s["records_quarantined"] != 1.0 {
			t.Fatalf("run %d: %v", run, s)
		}
	}
	for pos, reason := range quarantineReasons(t, loc) {
		if !strings.Contains(reason, `column "items[1].b" (string): want a string, got a number`) {
			t.Errorf("%s: reason %q", pos, reason)
		}
	}
	before := lines(mustSluice(t, "files", loc).stdout)
	want := duckJSONRows(t, before)
	if len(before) < 6 || len(want) != 120 {
		t.Fatalf("%d files, %d rows before compaction", len(before), len(want))
	}
	if want[1] != `{"id":1,"event_time":"2024-03-02 00:00:01+00","s":{"a":1,"b":"b\"1","t":"2024-03-02 01:02:03.5+00","u":null,"p":null},"tags":[],"attrs":{},"items":[],"ml":{}}` {
		t.Fatalf("row 1 reads %s", want[1])
	}
	if r := mustSluice(t, "compact", loc, "--min-input-files", "2", "--json"); !strings.Contains(r.stdout, fmt.Sprintf(`"files_in":%d`, len(before))) {
		t.Fatalf("compact summary: %s", r.stdout)
	}
	after := lines(mustSluice(t, "files", loc).stdout)
	if len(after) != 2 {
		t.Fatalf("%d files after compaction, want one per day", len(after))
	}
	if got := duckJSONRows(t, after); !slices.Equal(got, want) {
		t.Fatalf("after compaction DuckDB reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// CSV has no nested values: the file fails, in one line naming the
	// column.
	csvLand := filepath.Join(dir, "csv")
	writeFile(t, csvLand, "a.csv", "id,event_time\n1,2024-03-01T00:00:00Z\n")
	failsWithOneLine(t, sluice(t, nil, "ingest", loc, "--from", csvLand), "a.csv", "column s (struct<", "CSV has no nested values")
}

// duckJSONRows is DuckDB's to_json of every row of files, by id.
func duckJSONRows(t *testing.T, files []string) []string {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, "'"+strings.ReplaceAll(f, "'", "''")+"'")
	}
	cmd := exec.Command("node", filepath.Join(repoRoot(t), "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(fmt.Sprintf("select to_json(t) from read_parquet([%s], hive_partitioning=false) t order by id", strings.Join(paths, ",")))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckquery: %v (run \"make tools\" if DuckDB is missing)", err)
	}
	return lines(string(out))
}
