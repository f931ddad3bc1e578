package pqio

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// duckRows runs sql in DuckDB (tools/duckquery.mjs, the independent
// reader) and returns its rows, sorted.
func duckRows(t *testing.T, sql string) []string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("node", filepath.Join(root, "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// nestedTestSchema has a struct, lists, a map, and a list of structs of
// lists, nullable and not at every level.
const nestedTestSchema = "id:int64,s:struct<a:int64,b:string?>?,tags:list<string?>?,attrs:map<string,int64?>?," +
	"deep:list<struct<x:int32?,ys:list<int64>?>?>?,req:list<int32>"

// nestedTestRows covers NULLs at every level, empty lists and maps, and
// lists whose only difference is where a list ends ([[1],[2]] and
// [[1,2]]).
func nestedTestRows() [][]any {
	return [][]any{
		{int64(1), map[string]any{"a": int64(1), "b": "x"}, []any{"p", "q"}, []MapEntry{{"k", int64(1)}, {"j", nil}},
			[]any{map[string]any{"x": int32(1), "ys": []any{int64(1)}}, map[string]any{"ys": []any{int64(2)}}}, []any{int32(1)}},
		{int64(2), nil, nil, nil, nil, []any{}},
		{int64(3), map[string]any{"a": int64(2)}, []any{}, []MapEntry{}, []any{}, []any{int32(2), int32(3)}},
		{int64(4), map[string]any{"a": int64(3), "b": nil}, []any{nil, "r", nil}, map[string]any{"z": int64(5), "a": nil},
			[]any{nil, map[string]any{"x": nil, "ys": nil}, map[string]any{"ys": []any{}}}, []any{}},
		{int64(5), nil, []any{nil}, []MapEntry{{"", int64(0)}},
			[]any{map[string]any{"ys": []any{int64(1), int64(2)}}}, []any{int32(4)}},
	}
}

// wantJSON is DuckDB's to_json of nestedTestRows' rows.
var nestedTestJSON = []string{
	`{"id":1,"s":{"a":1,"b":"x"},"tags":["p","q"],"attrs":{"k":1,"j":null},"deep":[{"x":1,"ys":[1]},{"x":null,"ys":[2]}],"req":[1]}`,
	`{"id":2,"s":null,"tags":null,"attrs":null,"deep":null,"req":[]}`,
	`{"id":3,"s":{"a":2,"b":null},"tags":[],"attrs":{},"deep":[],"req":[2,3]}`,
	`{"id":4,"s":{"a":3,"b":null},"tags":[null,"r",null],"attrs":{"a":null,"z":5},"deep":[null,{"x":null,"ys":null},{"x":null,"ys":[]}],"req":[]}`,
	`{"id":5,"s":null,"tags":[null],"attrs":{"":0},"deep":[{"x":null,"ys":[1,2]}],"req":[4]}`,
}

// pqio's writer writes nested columns that DuckDB reads as the same
// values, and its reader reads them back as they were written.
func TestNestedWriteReadRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	schema := pqSchema(t, nestedTestSchema)
	rows := nestedTestRows()
	if _, stats, err := WriteParquet(ctx, st, "n.parquet", schema, rows); err != nil {
		t.Fatal(err)
	} else {
		// Leaf statistics only, one per leaf path.
		var paths []string
		for p := range stats.Columns {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		want := "attrs.key attrs.value deep.element.x deep.element.ys.element id req.element s.a s.b tags.element"
		if strings.Join(paths, " ") != want {
			t.Errorf("statistics for %v, want %s", paths, want)
		}
		if got := stats.Columns["s.a"]; got.Min == nil || *got.Min != "1" || *got.Max != "3" || got.NullCount != 2 {
			t.Errorf("s.a statistics %+v, want 1..3 with 2 NULLs", got)
		}
	}
	file, _, err := InspectParquet(ctx, st, "n.parquet", pqSize(t, st, "n.parquet"))
	if err != nil || file.String() != schema.String() {
		t.Fatalf("the file reads as %s (%v), want %s", file, err, schema)
	}
	got, err := ReadParquetRows(ctx, st, "n.parquet", pqSize(t, st, "n.parquet"), schema)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows read, want %d", len(got), len(rows))
	}
	for i := range rows {
		for j, c := range schema.Columns {
			if g, w := FormatValue(c.Type, got[i][j]), FormatValue(c.Type, rows[i][j]); g != w || (got[i][j] == nil) != (rows[i][j] == nil) {
				t.Errorf("row %d column %s: read %s, wrote %s", i, c.Name, g, w)
			}
		}
	}
	duck := duckRows(t, fmt.Sprintf("select to_json(t) from read_parquet('%s') t", filepath.Join(dir, "n.parquet")))
	want := slices.Clone(nestedTestJSON)
	slices.Sort(want)
	if !slices.Equal(duck, want) {
		t.Errorf("DuckDB reads\n%s\nwant\n%s", strings.Join(duck, "\n"), strings.Join(want, "\n"))
	}
}

// [[1],[2]] and [[1,2]] are different values, and so are their texts.
func TestNestedTextKeepsStructure(t *testing.T) {
	typ := pqSchema(t, "l:list<list<int64>>").Columns[0].Type
	a := FormatValue(typ, []any{[]any{int64(1)}, []any{int64(2)}})
	b := FormatValue(typ, []any{[]any{int64(1), int64(2)}})
	if a == b {
		t.Errorf("both render as %s", a)
	}
}

// Bad nested values fail their row, naming the column's path.
func TestNestedWriteRefusesBadValues(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "s:struct<a:int64,b:list<int32>>")
	for why, bad := range map[string][]any{
		`column "s.a": NULL in a column that is not nullable`: {map[string]any{"b": []any{}}},
		`column "s.b.element": NULL`:                          {map[string]any{"a": int64(1), "b": []any{nil}}},
		`column "s.b": string for a list`:                     {map[string]any{"a": int64(1), "b": "x"}},
		`column "s": NULL`:                                    {nil},
	} {
		_, _, err := WriteParquet(ctx, st, "bad.parquet", schema, [][]any{bad})
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "row 0") {
			t.Errorf("%v: got %v, want an error naming row 0 and saying %q", bad, err, why)
		}
	}
}

// Spark's nested columns, in the current and the legacy layouts, read as
// the values DuckDB reads from the same files: each file is read by pqio
// and written again, and DuckDB's to_json of every row's nested columns
// is the same from both files.
func TestSparkNestedColumnsReadAsDuckDB(t *testing.T) {
	ctx := context.Background()
	st := sparkStore(t)
	out := t.TempDir()
	ost := openTestStore(t, out)
	files := sparkFiles(t)
	n := 0
	for _, folder := range []string{"parquet-all-types", "parquet-all-types-legacy-format", "data-reader-partition-values"} {
		for _, key := range files[folder] {
			size := pqSize(t, st, key)
			schema, _, err := InspectParquet(ctx, st, key, size)
			if err != nil {
				t.Fatal(err)
			}
			var nested []string
			for _, c := range schema.Columns {
				if c.Type.Nested() {
					nested = append(nested, `"`+c.Name+`"`)
				}
			}
			rows, err := ReadParquetRows(ctx, st, key, size, schema)
			if err != nil {
				t.Fatal(err)
			}
			okey := fmt.Sprintf("%d.parquet", n)
			n++
			if _, _, err := WriteParquet(ctx, ost, okey, schema, rows); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(filepath.Join(sparkDir, key))
			q := func(p string) []string {
				return duckRows(t, fmt.Sprintf("select to_json(struct_pack(%s)) from read_parquet('%s')",
					strings.Join(nested, ","), strings.ReplaceAll(p, "'", "''")))
			}
			want, got := q(abs), q(filepath.Join(out, okey))
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s: DuckDB reads pqio's rows as\n%s\nand the file as\n%s", key, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

// legacyList is a LIST-annotated group with the children given: the
// two-level layouts parquet-mr's writeLegacyFormat and older writers
// leave, which parquet.List cannot build.
type legacyList struct{ parquet.Node }

func (legacyList) Type() parquet.Type { return parquet.List(parquet.Int(32)).Type() }

// The two-level list layouts of the Parquet format's backward-compatibility
// rules, and a repeated field outside any LIST, read as lists of required
// elements.
func TestLegacyTwoLevelListsRead(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	group := parquet.Group{
		// optional group a (LIST) { repeated int32 array; }
		"a": parquet.Optional(legacyList{parquet.Group{"array": parquet.Repeated(parquet.Int(32))}}),
		// optional group b (LIST) { repeated group array { required int32 x; } }
		"b": parquet.Optional(legacyList{parquet.Group{"array": parquet.Repeated(parquet.Group{"x": parquet.Int(32)})}}),
		// repeated int64 c;
		"c": parquet.Repeated(parquet.Int(64)),
	}
	v32 := func(x int32, r, d, c int) parquet.Value { return parquet.Int32Value(x).Level(r, d, c) }
	null := func(r, d, c int) parquet.Value { return parquet.Value{}.Level(r, d, c) }
	rows := []parquet.Row{
		// a=[1,2], b=[{x:3}], c=[4,5]
		{v32(1, 0, 2, 0), v32(2, 1, 2, 0), v32(3, 0, 2, 1), parquet.Int64Value(4).Level(0, 1, 2), parquet.Int64Value(5).Level(1, 1, 2)},
		// a=NULL, b=[], c=[]
		{null(0, 0, 0), null(0, 1, 1), null(0, 0, 2)},
	}
	size := putRaw(t, st, "legacy.parquet", group, rows)
	schema, _, err := InspectParquet(ctx, st, "legacy.parquet", size)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:list<int32>?,b:list<struct<x:int32>>?,c:list<int64>"; schema.String() != want {
		t.Fatalf("schema %s, want %s", schema, want)
	}
	got, err := ReadParquetRows(ctx, st, "legacy.parquet", size, schema)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range got {
		for j, c := range schema.Columns {
			texts = append(texts, FormatValue(c.Type, r[j]))
		}
	}
	want := `["1","2"] [{"x":"3"}] ["4","5"]  [] []`
	if strings.Join(texts, " ") != want {
		t.Errorf("rows read as %s, want %s", strings.Join(texts, " "), want)
	}
}
