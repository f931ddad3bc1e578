package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
	"github.com/sluice-data/sluice/internal/pqio"
)

// nestedIngestSchema has a struct of converted leaves, a list, a map, a
// list of structs, a map of lists and a map with int32 keys, nullable at
// some levels and not at others.
const nestedIngestSchema = "id:int64,event_time:timestamp," +
	"s:struct<a:int64,b:string?,t:timestamp?,u:uuid?,p:decimal(10,2)?,raw:string?>?," +
	"tags:list<string?>?," +
	"attrs:map<string,int64?>?," +
	"items:list<struct<a:int32?,b:string>>?," +
	"ml:map<string,list<int64>?>?," +
	"km:map<int32,string>?"

// nestedGood are records that ingest, each with DuckDB's to_json of its
// row: NULLs, empty lists and empty maps at every level; escapes in
// nested strings; an unknown struct field (dropped, as an undeclared
// top-level field is); a nested value in a string field (kept as its
// JSON text); fields absent at every level; an escaped name (the tree
// path).
var nestedGood = []struct{ rec, want string }{
	{`{"id":1,"event_time":"2024-03-01T00:00:01Z","s":{"a":1,"b":"x","t":"2024-03-01T10:00:00.5Z","u":"6F1C3B9E-2A4D-4B8E-9C1F-000000000001","p":"12.30","raw":{"k":[1, 2]}},"tags":["p",null,"q"],"attrs":{"k1":1,"k2":null},"items":[{"a":1,"b":"one"},{"b":"two"}],"ml":{"x":[1,2],"y":[],"z":null},"km":{"7":"seven","-1":"minus"}}`,
		`{"id":1,"event_time":"2024-03-01 00:00:01+00","s":{"a":1,"b":"x","t":"2024-03-01 10:00:00.5+00","u":"6f1c3b9e-2a4d-4b8e-9c1f-000000000001","p":12.3,"raw":"{\"k\":[1,2]}"},"tags":["p",null,"q"],"attrs":{"k1":1,"k2":null},"items":[{"a":1,"b":"one"},{"a":null,"b":"two"}],"ml":{"x":[1,2],"y":[],"z":null},"km":{"7":"seven","-1":"minus"}}`},
	{`{"id":2,"event_time":"2024-03-01T00:00:02Z","s":null,"tags":[],"attrs":{},"items":[],"ml":{},"km":{}}`,
		`{"id":2,"event_time":"2024-03-01 00:00:02+00","s":null,"tags":[],"attrs":{},"items":[],"ml":{},"km":{}}`},
	{`{"id":3,"event_time":"2024-03-02T00:00:03Z"}`,
		`{"id":3,"event_time":"2024-03-02 00:00:03+00","s":null,"tags":null,"attrs":null,"items":null,"ml":null,"km":null}`},
	{`{"id":4,"event_time":"2024-03-02T00:00:04Z","s":{"a":-4,"b":"q\"uote\\ \u00e9 \ud83d\ude00","zz":{"ignored":true}},"tags":[null],"items":[{"a":null,"b":""}],"ml":{"e":[]}}`,
		`{"id":4,"event_time":"2024-03-02 00:00:04+00","s":{"a":-4,"b":"q\"uote\\ é 😀","t":null,"u":null,"p":null,"raw":null},"tags":[null],"attrs":null,"items":[{"a":null,"b":""}],"ml":{"e":[]},"km":null}`},
	{`{ "id" : 5, "event_time":"2024-03-02T00:00:05Z", "s" : { "\u0061" : 5, "t": 1709251200 } , "attrs" : { "a\"b" : 7 } }`,
		`{"id":5,"event_time":"2024-03-02 00:00:05+00","s":{"a":5,"b":null,"t":"2024-03-01 00:00:00+00","u":null,"p":null,"raw":null},"tags":null,"attrs":{"a\"b":7},"items":null,"ml":null,"km":null}`},
}

// nestedBad are records quarantined, each with what its reason says: the
// path of the value and what was wrong with it.
var nestedBad = []struct{ rec, reason string }{
	{`{"id":10,"event_time":"2024-03-01T00:00:00Z","s":{"a":null}}`, `column "s.a" (int64): null but the column is not nullable`},
	{`{"id":11,"event_time":"2024-03-01T00:00:00Z","s":{"b":"x"}}`, `column "s.a" (int64): required but missing`},
	{`{"id":12,"event_time":"2024-03-01T00:00:00Z","items":[{"b":"x"},{"b":"y"},{"b":"z"},{"b":null}]}`, `column "items[3].b" (string): null but the column is not nullable`},
	{`{"id":13,"event_time":"2024-03-01T00:00:00Z","tags":{"x":1}}`, `column "tags" (list<string?>): want an array, got an object`},
	{`{"id":14,"event_time":"2024-03-01T00:00:00Z","ml":{"k":[1,"two"]}}`, `column "ml[k][1]" (int64): want an integer, got a string`},
	{`{"id":15,"event_time":"2024-03-01T00:00:00Z","items":[{"a":3000000000,"b":"x"}]}`, `column "items[0].a" (int32): "3000000000" out of range`},
	{`{"id":16,"event_time":"2024-03-01T00:00:00Z","s":{"a":1,"u":"cat /etc/passwd"}}`, `column "s.u" (uuid): not a UUID: "cat /etc/passwd"`},
	{`{"id":17,"event_time":"2024-03-01T00:00:00Z","km":{"x":"y"}}`, `column "km.key" (int32): not an integer: "x"`},
	{`{"id":18,"event_time":"2024-03-01T00:00:00Z","km":{"1":"a","01":"b"}}`, `column "km.key" (int32): key "01" given twice (as "1")`},
	{`{"id":19,"event_time":"2024-03-01T00:00:00Z","s":{"a":1,"a":2}}`, `duplicate key "a"`},
	{`{"id":20,"event_time":"2024-03-01T00:00:00Z","ml":{"k":[null]}}`, `column "ml[k][0]" (int64): null but the column is not nullable`},
	{`{"id":21,"event_time":"2024-03-01T00:00:00Z","s":{"a":1,"t":"yesterday"}}`, `column "s.t" (timestamp): not an RFC 3339 timestamp`},
	{`{"id":22,"event_time":"2024-03-01T00:00:00Z","s":[1]}`, `column "s" (struct<a:int64,b:string?,t:timestamp?,u:uuid?,p:decimal(10,2)?,raw:string?>): want an object, got an array`},
	{`{"id":23,"event_time":"2024-03-01T00:00:00Z","km":{"1":null}}`, `column "km[1]" (string): null but the column is not nullable`},
	{`{"id":24,"event_time":"2024-03-01T00:00:00Z","attrs":"k1=1"}`, `column "attrs" (map<string,int64?>): want an object, got a string`},
	{`{"id":25,"event_time":"2024-03-01T00:00:00Z","items":[{"a":1.5,"b":"x"}]}`, `column "items[0].a" (int32): not an integer: "1.5"`},
	{`{"id":26,"event_time":"2024-03-01T00:00:00Z","s":{"a":1,"p":"12.345"}}`, `column "s.p" (decimal(10,2))`},
	{`{"id":27,"event_time":"2024-03-01T00:00:00Z","attrs":{"":"x"}}`, `column "attrs[]" (int64): want an integer, got a string`},
	{`{"id":28,"event_time":"2024-03-01T00:00:00Z","items":[{"b":"x"},{"b":"y","a":{"n":1}}]}`, `column "items[1].a" (int32): want an integer, got an object`},
}

// JSON lines into struct, list and map columns: DuckDB reads every row as
// the record wrote it, the bad records are quarantined with reasons that
// name the path, and the counts reconcile. The table then compacts into
// the same rows (see the CLI's test); a CSV file into it fails whole.
func TestIngestJSONIntoNestedColumns(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	loc := filepath.Join(t.TempDir(), "nested")
	tb := newTableWithSchema(t, loc, nestedIngestSchema)
	var b strings.Builder
	for i, r := range nestedGood {
		b.WriteString(r.rec + "\n")
		if i == 2 {
			for _, q := range nestedBad {
				b.WriteString(q.rec + "\n")
			}
		}
	}
	put(t, land, "nested.jsonl", []byte(b.String()))
	res := runOK(t, tb, land, ingest.Options{RunID: "n1"})
	if res.RecordsIn != int64(len(nestedGood)+len(nestedBad)) || res.RowsWritten != int64(len(nestedGood)) ||
		res.RecordsQuarantined != int64(len(nestedBad)) {
		t.Fatalf("result %+v", res)
	}
	got := duckRowsJSON(t, tb)
	var want []string
	for _, r := range nestedGood {
		want = append(want, r.want)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DuckDB reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	q := quarantined(t, loc)
	for i, r := range nestedBad {
		pos := fmt.Sprintf("nested.jsonl:%d", 4+i)
		if !strings.Contains(q[pos], r.reason) {
			t.Errorf("%s (%s): reason %q, want it to say %q", pos, r.rec, q[pos], r.reason)
		}
	}

	// CSV has no nested values: the file fails whole, naming the column.
	put(t, land, "flat.csv", []byte("id,event_time\n30,2024-03-01T00:00:00Z\n"))
	res, err := ingest.Run(ctx, tb, land, ingest.Options{RunID: "n2"})
	if !errors.Is(err, ingest.ErrFilesFailed) || res.FilesFailed != 1 || len(res.Failures) != 1 {
		t.Fatalf("CSV into a nested table: %+v, %v", res, err)
	}
	if msg := res.Failures[0].Err.Error(); !errors.Is(res.Failures[0].Err, ingest.ErrNestedColumn) ||
		!strings.Contains(msg, "column s (struct<") || !strings.Contains(msg, "CSV has no nested values") || strings.Contains(msg, "\n") {
		t.Fatalf("CSV failure %q", msg)
	}
}

// duckRowsJSON is DuckDB's to_json of every live row of tb, by id.
func duckRowsJSON(t *testing.T, tb *catalog.Table) []string {
	t.Helper()
	ctx := context.Background()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, "'"+strings.ReplaceAll(filepath.Join(tb.Location(), f.Path), "'", "''")+"'")
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("node", filepath.Join(filepath.Dir(file), "..", "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(fmt.Sprintf("select to_json(t) from read_parquet([%s], hive_partitioning=false) t order by id", strings.Join(paths, ",")))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// The same records into a table that keeps an _extra column, which
// decodes every record through fastjson's tree rather than the flat
// scanner: the same rows; and there a struct's undeclared field, which
// _extra cannot keep, quarantines the record with its path.
func TestIngestJSONIntoNestedColumnsWithExtra(t *testing.T) {
	land := t.TempDir()
	loc := filepath.Join(t.TempDir(), "nested")
	tb := newTableWithSchema(t, loc, nestedIngestSchema+",_extra:string?")
	var b strings.Builder
	for _, r := range nestedGood {
		if !strings.Contains(r.rec, `"zz"`) {
			b.WriteString(r.rec + "\n")
		}
	}
	b.WriteString(`{"id":9,"event_time":"2024-03-01T00:00:00Z","s":{"a":1,"zz":2},"other":[1]}` + "\n")
	put(t, land, "nested.jsonl", []byte(b.String()))
	res := runOK(t, tb, land, ingest.Options{RunID: "x1"})
	if res.RowsWritten != int64(len(nestedGood)-1) || res.RecordsQuarantined != 1 {
		t.Fatalf("result %+v", res)
	}
	var want []string
	for _, r := range nestedGood {
		if !strings.Contains(r.rec, `"zz"`) {
			want = append(want, strings.TrimSuffix(r.want, "}")+`,"_extra":null}`)
		}
	}
	if got := duckRowsJSON(t, tb); !slices.Equal(got, want) {
		t.Fatalf("DuckDB reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	q := quarantined(t, loc)
	if r := q["nested.jsonl:5"]; !strings.Contains(r, `column "s" (struct<`) || !strings.Contains(r, `field "zz" is not in the struct`) {
		t.Fatalf("quarantine %v", q)
	}
}

// A Parquet landing file with the table's nested columns ingests as it
// is, its leaves checked as flat columns' are: a uuid field that is no
// UUID quarantines its row with the path.
func TestIngestParquetIntoNestedColumns(t *testing.T) {
	land := t.TempDir()
	loc := filepath.Join(t.TempDir(), "nested")
	schema := "id:int64,event_time:timestamp,tags:list<string?>?,attrs:map<string,int64?>?,s:struct<a:int64,u:uuid?>?"
	tb := newTableWithSchema(t, loc, schema)
	ts := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	putParquet(t, land, "n.parquet", strings.Replace(schema, "u:uuid?", "u:string?", 1), [][]any{
		{int64(1), ts, []any{"x", nil}, []pqio.MapEntry{{Key: "k", Value: int64(1)}, {Key: "n", Value: nil}}, map[string]any{"a": int64(1), "u": "6F1C3B9E-2A4D-4B8E-9C1F-000000000001"}},
		{int64(2), ts, []any{}, []pqio.MapEntry{}, nil},
		{int64(3), ts, nil, nil, map[string]any{"a": int64(3)}},
		{int64(4), ts, nil, nil, map[string]any{"a": int64(4), "u": "cat /etc/passwd"}},
	})
	res := runOK(t, tb, land, ingest.Options{RunID: "p1"})
	if res.RowsWritten != 3 || res.RecordsQuarantined != 1 {
		t.Fatalf("result %+v", res)
	}
	want := []string{
		`{"id":1,"event_time":"2024-03-01 00:00:00+00","tags":["x",null],"attrs":{"k":1,"n":null},"s":{"a":1,"u":"6f1c3b9e-2a4d-4b8e-9c1f-000000000001"}}`,
		`{"id":2,"event_time":"2024-03-01 00:00:00+00","tags":[],"attrs":{},"s":null}`,
		`{"id":3,"event_time":"2024-03-01 00:00:00+00","tags":null,"attrs":null,"s":{"a":3,"u":null}}`,
	}
	if got := duckRowsJSON(t, tb); !slices.Equal(got, want) {
		t.Fatalf("DuckDB reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if q := quarantined(t, loc); !strings.Contains(q["n.parquet:4"], `column "s.u" (uuid): not a UUID: "cat /etc/passwd"`) {
		t.Fatalf("quarantine %v", q)
	}
}
