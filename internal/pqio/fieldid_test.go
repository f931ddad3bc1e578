package pqio

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// --- helpers -----------------------------------------------------------------------

// withIDs returns a copy of s whose columns and nested children named in
// ids (by dotted path: "s.a", "tags.element", "attrs.key") carry those
// field ids. A path in ids that s lacks fails the test.
func withIDs(t *testing.T, s Schema, ids map[string]int) Schema {
	t.Helper()
	used := map[string]bool{}
	var set func(path string, cs []Column) []Column
	set = func(path string, cs []Column) []Column {
		cs = slices.Clone(cs)
		for i := range cs {
			p := cs[i].Name
			if path != "" {
				p = path + "." + p
			}
			if id, ok := ids[p]; ok {
				cs[i].ID, used[p] = id, true
			}
			cs[i].Type.Fields = set(p, cs[i].Type.Fields)
		}
		return cs
	}
	out := Schema{Columns: set("", s.Columns)}
	for p := range ids {
		if !used[p] {
			t.Fatalf("the schema %s has no column %q", s, p)
		}
	}
	return out
}

// schemaIDs returns the field ids of s's columns and nested children that
// have one, by dotted path.
func schemaIDs(s Schema) map[string]int {
	out := map[string]int{}
	var walk func(path string, c Column)
	walk = func(path string, c Column) {
		if c.ID != 0 {
			out[path] = c.ID
		}
		for _, f := range c.Type.Fields {
			walk(path+"."+f.Name, f)
		}
	}
	for _, c := range s.Columns {
		walk(c.Name, c)
	}
	return out
}

// preorderIDs is schemaIDs' ids in schema order, depth first.
func preorderIDs(s Schema) []int {
	var out []int
	var walk func(c Column)
	walk = func(c Column) {
		if c.ID != 0 {
			out = append(out, c.ID)
		}
		for _, f := range c.Type.Fields {
			walk(f)
		}
	}
	for _, c := range s.Columns {
		walk(c)
	}
	return out
}

// footer opens the Parquet file at path with parquet-go alone and returns
// its footer's schema elements.
func footer(t *testing.T, path string) []format.SchemaElement {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf.Metadata().Schema
}

// footerIDs returns the field ids a file's footer gives its schema
// elements, by dotted path through every group ("tags.list.element",
// "attrs.key_value.key"); the root's id, if any, under "".
func footerIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	elems := footer(t, path)
	out := map[string]int{}
	pos := 0
	var walk func(prefix string)
	walk = func(prefix string) {
		e := elems[pos]
		pos++
		p := prefix
		if pos > 1 {
			p = strings.TrimPrefix(prefix+"."+e.Name, ".")
		}
		if e.FieldID != 0 {
			out[p] = int(e.FieldID)
		}
		for range e.NumChildren.V {
			walk(p)
		}
	}
	walk("")
	return out
}

// footerPreorderIDs is a footer's field ids in schema order.
func footerPreorderIDs(t *testing.T, path string) []int {
	t.Helper()
	var out []int
	for _, e := range footer(t, path) {
		if e.FieldID != 0 {
			out = append(out, int(e.FieldID))
		}
	}
	return out
}

// duckFieldIDs is DuckDB's "name id" of every schema element of the file
// at path that has a field id, sorted.
func duckFieldIDs(t *testing.T, path string) []string {
	t.Helper()
	return duckRows(t, fmt.Sprintf("select name || ' ' || field_id from parquet_schema('%s') where field_id is not null", path))
}

// nestedTestIDs gives every column and nested child of nestedTestSchema a
// field id, top-level columns first, as Iceberg numbers them.
var nestedTestIDs = map[string]int{
	"id": 1, "s": 2, "tags": 3, "attrs": 4, "deep": 5, "req": 6,
	"s.a": 7, "s.b": 8,
	"tags.element": 9,
	"attrs.key":    10, "attrs.value": 11,
	"deep.element": 12, "deep.element.x": 13, "deep.element.ys": 14, "deep.element.ys.element": 15,
	"req.element": 16,
}

// nestedTestFooterIDs is where nestedTestIDs land in the footer: a list's
// on its LIST group and its element's on "element", a map's on its MAP
// group and its key's and value's on "key" and "value"; the repeated
// "list" and "key_value" groups and the root have none.
var nestedTestFooterIDs = map[string]int{
	"id": 1, "s": 2, "tags": 3, "attrs": 4, "deep": 5, "req": 6,
	"s.a": 7, "s.b": 8,
	"tags.list.element":   9,
	"attrs.key_value.key": 10, "attrs.key_value.value": 11,
	"deep.list.element": 12, "deep.list.element.x": 13, "deep.list.element.ys": 14, "deep.list.element.ys.list.element": 15,
	"req.list.element": 16,
}

// --- tests ---------------------------------------------------------------------------

// A schema with field ids on top-level columns, struct fields, list
// elements and map keys and values writes them into the footer, where
// parquet-go and DuckDB find them, reads back with the same ids, and its
// rows read back (in pqio and DuckDB) as written.
func TestFieldIDsRoundTripThroughAFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	schema := withIDs(t, pqSchema(t, nestedTestSchema), nestedTestIDs)
	rows := nestedTestRows()
	if _, _, err := WriteParquet(ctx, st, "ids.parquet", schema, rows); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ids.parquet")
	if got := footerIDs(t, path); !maps.Equal(got, nestedTestFooterIDs) {
		t.Errorf("the footer's field ids are\n%v\nwant\n%v", got, nestedTestFooterIDs)
	}
	var want []string
	for p, id := range nestedTestFooterIDs {
		want = append(want, fmt.Sprintf("%s %d", p[strings.LastIndex(p, ".")+1:], id))
	}
	slices.Sort(want)
	if got := duckFieldIDs(t, path); !slices.Equal(got, want) {
		t.Errorf("DuckDB reads the field ids\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	file, _, err := InspectParquet(ctx, st, "ids.parquet", pqSize(t, st, "ids.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaIDs(file); !maps.Equal(got, nestedTestIDs) {
		t.Errorf("the file's schema reads back with the ids\n%v\nwant\n%v", got, nestedTestIDs)
	}
	if file.String() != schema.String() {
		t.Errorf("the file reads as %s, want %s", file, schema)
	}
	got, err := ReadParquetRows(ctx, st, "ids.parquet", pqSize(t, st, "ids.parquet"), schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for j, c := range schema.Columns {
			if g, w := FormatValue(c.Type, got[i][j]), FormatValue(c.Type, rows[i][j]); g != w {
				t.Errorf("row %d column %s: read %s, wrote %s", i, c.Name, g, w)
			}
		}
	}
	duck := duckRows(t, fmt.Sprintf("select to_json(t) from read_parquet('%s') t", path))
	wantJSON := slices.Clone(nestedTestJSON)
	slices.Sort(wantJSON)
	if !slices.Equal(duck, wantJSON) {
		t.Errorf("DuckDB reads\n%s\nwant\n%s", strings.Join(duck, "\n"), strings.Join(wantJSON, "\n"))
	}
}

// Flat columns keep their field ids whatever encoding the writer picks
// for them: with or without a dictionary, a uuid's DELTA_LENGTH_BYTE_ARRAY,
// nullable or not.
func TestFieldIDsOnFlatColumnsWithAndWithoutDictionary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	ids := map[string]int{"k": 11, "distinct": 12, "repeated": 13, "v": 14, "d": 15, "ts": 16, "b": 17, "day": 18}
	schema := withIDs(t, pqSchema(t, "k:uuid,distinct:string,repeated:string?,v:int64?,d:decimal(20,2)?,ts:timestamp,b:binary?,day:date"), ids)
	var rows [][]any
	for i := range 2000 {
		rows = append(rows, []any{
			fmt.Sprintf("00000000-0000-4000-8000-%012d", i), fmt.Sprintf("value %d", i), []any{"a", nil}[i%2],
			int64(i), "12.50", time.Unix(int64(i), 0).UTC(), []byte{byte(i)}, day(2024, 5, 1+i%28),
		})
	}
	if _, _, err := WriteParquet(ctx, st, "flat.parquet", schema, rows); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "flat.parquet")
	if got := footerIDs(t, path); !maps.Equal(got, ids) {
		t.Errorf("the footer's field ids are %v, want %v", got, ids)
	}
	file, _, err := InspectParquet(ctx, st, "flat.parquet", pqSize(t, st, "flat.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaIDs(file); !maps.Equal(got, ids) {
		t.Errorf("the file's schema reads back with the ids %v, want %v", got, ids)
	}
	// The builders compaction writes with: every column without its
	// dictionary, and every column with it.
	for _, noDict := range [][]bool{nil, slices.Repeat([]bool{true}, len(schema.Columns))} {
		ps, err := ParquetSchemaNoDict(schema, noDict, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range ps.Fields() {
			if want := schema.Columns[i].ID; f.ID() != want {
				t.Errorf("noDict %v: column %q has the field id %d, want %d", noDict, f.Name(), f.ID(), want)
			}
		}
	}
}

// A schema without field ids writes none: not on a column, not on a
// nested child, not on the root; and its file reads back without any.
func TestSchemaWithoutFieldIDsWritesNone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	for key, s := range map[string]string{"nested.parquet": nestedTestSchema, "flat.parquet": "k:uuid,s:string?,v:int64"} {
		schema := pqSchema(t, s)
		var rows [][]any
		if key == "nested.parquet" {
			rows = nestedTestRows()
		} else {
			rows = [][]any{{"00000000-0000-4000-8000-000000000001", "x", int64(1)}}
		}
		if _, _, err := WriteParquet(ctx, st, key, schema, rows); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, key)
		if got := footerIDs(t, path); len(got) != 0 {
			t.Errorf("%s: the footer has the field ids %v, want none", key, got)
		}
		if got := duckFieldIDs(t, path); len(got) != 0 {
			t.Errorf("%s: DuckDB reads the field ids %v, want none", key, got)
		}
		file, _, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
		if err != nil {
			t.Fatal(err)
		}
		if got := schemaIDs(file); len(got) != 0 {
			t.Errorf("%s: the file's schema reads back with the ids %v, want none", key, got)
		}
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"id":`) {
			t.Errorf("%s: the schema's JSON %s names an id", key, b)
		}
	}
}

// A table's schema without ids and a file written with them (as an
// Iceberg writer does) are the same schema to every comparison that
// decides whether a file's columns, pages or rows carry over: Type.Equal,
// the schema's text, CheckCompatible and SameLayout. So is a table with
// ids and a file without.
func TestSchemaComparisonsIgnoreFieldIDs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openTestStore(t, dir)
	plain := pqSchema(t, nestedTestSchema)
	withID := withIDs(t, plain, nestedTestIDs)
	rows := nestedTestRows()
	for _, tc := range []struct {
		key          string
		table, wrote Schema
	}{
		{"file-with-ids.parquet", plain, withID},
		{"table-with-ids.parquet", withID, plain},
	} {
		if _, _, err := WriteParquet(ctx, st, tc.key, tc.wrote, rows); err != nil {
			t.Fatal(err)
		}
		size := pqSize(t, st, tc.key)
		file, _, err := InspectParquet(ctx, st, tc.key, size)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range tc.table.Columns {
			if !c.Type.Equal(file.Columns[i].Type) {
				t.Errorf("%s: column %q: Type.Equal tells the table's %s from the file's", tc.key, c.Name, c.Type)
			}
		}
		if file.Stored().String() != tc.table.Stored().String() {
			t.Errorf("%s: the file's schema reads %s, the table's %s", tc.key, file.Stored(), tc.table.Stored())
		}
		if err := CheckCompatible(tc.table, file, tc.key); err != nil {
			t.Errorf("%s: %v", tc.key, err)
		}
		r, err := os.Open(filepath.Join(dir, tc.key))
		if err != nil {
			t.Fatal(err)
		}
		f, err := OpenParquetFile(tc.key, r, size)
		if err != nil {
			r.Close()
			t.Fatal(err)
		}
		if !SameLayout(tc.table, tc.key, f) {
			t.Errorf("%s: SameLayout says the file is not stored as the table's files are", tc.key)
		}
		r.Close()
	}
}

// A file written by another writer with field ids on every column and
// nested child (Delta's Iceberg-compatible files: structs, lists of lists,
// maps of lists, maps of maps) reads with those ids, in the footer's
// order; its rows written again by pqio with the schema read keep them.
func TestFieldIDsOfAnotherWritersFileReadAndWriteBack(t *testing.T) {
	ctx := context.Background()
	src, err := filepath.Glob("../../testdata/delta-golden/table-with-icebegCompatV2Enabled/*.parquet")
	if err != nil || len(src) == 0 {
		t.Fatalf("no test file: %v", err)
	}
	want := footerPreorderIDs(t, src[0])
	if len(want) < 40 {
		t.Fatalf("the test file has %d field ids, want one per column and nested child", len(want))
	}
	st := openTestStore(t, filepath.Dir(src[0]))
	key := filepath.Base(src[0])
	schema, _, err := InspectParquet(ctx, st, key, pqSize(t, st, key))
	if err != nil {
		t.Fatal(err)
	}
	if got := preorderIDs(schema); !slices.Equal(got, want) {
		t.Errorf("the file's schema reads with the field ids\n%v\nthe footer has\n%v", got, want)
	}
	rows, err := ReadParquetRows(ctx, st, key, pqSize(t, st, key), schema)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := openTestStore(t, dir)
	if _, _, err := WriteParquet(ctx, out, "again.parquet", schema, rows); err != nil {
		t.Fatal(err)
	}
	if got := footerPreorderIDs(t, filepath.Join(dir, "again.parquet")); !slices.Equal(got, want) {
		t.Errorf("written again, the footer has the field ids\n%v\nwant\n%v", got, want)
	}
}

// Field ids a footer cannot hold, or that two columns share (a reader
// resolving columns by id would read the wrong one), are refused when
// the writer starts, naming the columns.
func TestWriterRefusesBadFieldIDs(t *testing.T) {
	base := pqSchema(t, "a:int64,s:struct<b:int64,c:list<int32>>")
	for why, ids := range map[string]map[string]int{
		`field id 1 is given to both "a" and "s.b"`:         {"a": 1, "s.b": 1},
		`field id 3 is given to both "s" and "s.c.element"`: {"s": 3, "s.c.element": 3},
		`column "s.c": field id -1 is out of range`:         {"s.c": -1},
		`column "a": field id 2147483648 is out of range`:   {"a": math.MaxInt32 + 1},
	} {
		schema := withIDs(t, base, ids)
		if _, err := NewParquetWriter(schema, nil); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%v: NewParquetWriter: got %v, want an error saying %q", ids, err, why)
		}
		if _, err := ParquetSchema(schema); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%v: ParquetSchema: got %v, want an error saying %q", ids, err, why)
		}
	}
}

// Merged schemas keep the ids both sides agree on, or that one side
// alone gives; different ids for one name give none.
func TestMergeSchemasKeepsFieldIDs(t *testing.T) {
	a := withIDs(t, pqSchema(t, "x:int32,s:struct<p:int64,q:string>,l:list<int32>,only_a:string"),
		map[string]int{"x": 1, "s": 2, "s.p": 3, "s.q": 4, "l": 5, "l.element": 6, "only_a": 7})
	b := withIDs(t, pqSchema(t, "x:int64,s:struct<p:int64,q:string,r:bool>,l:list<int64>,only_b:string"),
		map[string]int{"x": 1, "s.p": 3, "s.q": 9, "s.r": 10, "l.element": 6, "only_b": 8})
	got, err := MergeSchemas(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"x": 1, "s": 2, "s.p": 3, "s.r": 10, "l": 5, "l.element": 6, "only_a": 7, "only_b": 8}
	if ids := schemaIDs(got); !maps.Equal(ids, want) {
		t.Errorf("merged %s with the ids %v, want %v", got, ids, want)
	}
}

// A column's field id is in the schema's JSON (a manifest's) as "id", and
// reads back.
func TestColumnFieldIDInJSON(t *testing.T) {
	schema := withIDs(t, pqSchema(t, "a:int64,b:string?"), map[string]int{"a": 1, "b": 2})
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"columns":[{"name":"a","type":"int64","id":1},{"name":"b","type":"string","nullable":true,"id":2}]}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var back Schema
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := schemaIDs(back); !maps.Equal(got, map[string]int{"a": 1, "b": 2}) {
		t.Errorf("read back with the ids %v", got)
	}
}
