package catalog_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// A folder whose files have struct columns that differ (a field added
// later, a leaf widened) imports as the merged schema; the manifest keeps
// it, with statistics for leaves only; a later file with a leaf of another
// type is refused naming the leaf's path.
func TestImportNestedColumnsMergesAndRefuses(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	write := func(key, schema string, rows [][]any) {
		t.Helper()
		sc, err := catalog.ParseSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := pqio.WriteParquet(ctx, st, key, sc, rows); err != nil {
			t.Fatal(err)
		}
	}
	write("date=2024-07-01/a.parquet", "id:int64,s:struct<a:int32>?,tags:list<string>",
		[][]any{{int64(1), map[string]any{"a": int32(5)}, []any{"x"}}, {int64(2), nil, []any{}}})
	write("date=2024-07-02/b.parquet", "id:int64,s:struct<a:int64,b:string?>?,tags:list<string?>",
		[][]any{{int64(3), map[string]any{"a": int64(7), "b": "y"}, []any{nil}}})
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Import(ctx, loc, catalog.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "id:int64,s:struct<a:int64,b:string?>?,tags:list<string?>"
	reopened, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	m, err := reopened.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Schema.String(); got != want {
		t.Fatalf("the manifest's schema is %s, want %s", got, want)
	}
	files, err := reopened.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := f.FileStats.Columns["s"]; ok {
			t.Errorf("%s: statistics for the struct s as a whole", f.Path)
		}
		if cs, ok := f.FileStats.Columns["s.a"]; !ok || cs.Min == nil {
			t.Errorf("%s: no bounds for the leaf s.a: %+v", f.Path, f.FileStats.Columns)
		}
	}
	// The rows read as the table: the older file's s.a widened, its
	// missing s.b NULL.
	for _, f := range files {
		if !strings.Contains(f.Path, "a.parquet") {
			continue
		}
		rows, err := pqio.ReadParquetRows(ctx, st, f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := pqio.FormatValue(m.Schema.Columns[1].Type, rows[0][1]); got != `{"a":"5","b":null}` {
			t.Errorf("s read as %s", got)
		}
	}
	write("date=2024-07-03/c.parquet", "id:int64,s:struct<a:string,b:string?>?,tags:list<string?>",
		[][]any{{int64(4), map[string]any{"a": "z"}, []any{}}})
	_, err = reopened.Import(ctx, loc, catalog.ImportOptions{})
	if !errors.Is(err, pqio.ErrIncompatibleSchema) || !strings.Contains(err.Error(), `column "s.a": the file has string, the table int64`) ||
		!strings.Contains(err.Error(), filepath.Join("date=2024-07-03", "c.parquet")) {
		t.Fatalf("importing a file whose s.a is a string: %v; want ErrIncompatibleSchema naming the file and s.a", err)
	}
}
