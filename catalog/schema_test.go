package catalog_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// wantClash asserts an error on one line that names every one of names
// and says why.
func wantClash(t *testing.T, err error, why string, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal naming %q", names)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, why) {
		t.Fatalf("error %q: want one line saying %q", msg, why)
	}
	for _, n := range names {
		if !strings.Contains(msg, n) {
			t.Fatalf("error %q does not name %s", msg, n)
		}
	}
}

// Regression (issue 13, item 7): column names differing only in case were
// accepted; Spark, Hive and most warehouses fold case, so they cannot tell
// such columns apart.
func TestSchemaRefusesNamesDifferingOnlyInCase(t *testing.T) {
	for name, s := range map[string]string{
		"two columns":         "a:int64,A:string",
		"apart":               "event_id:uuid,n:int32,Event_ID:string",
		"non-ASCII":           "größe:int64,GRÖSSE:int64,Größe:int32",
		"decimals in between": "Amount:decimal(10,2),x:int32,amount:decimal(10,2)",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := catalog.ParseSchema(s)
			cols := strings.Split(s, ",")
			first, second := "", ""
			for i, c := range cols {
				n, _, _ := strings.Cut(c, ":")
				for _, d := range cols[:i] {
					m, _, _ := strings.Cut(d, ":")
					if first == "" && strings.EqualFold(m, n) {
						first, second = m, n
					}
				}
			}
			wantClash(t, err, "differ only in case", `"`+first+`"`, `"`+second+`"`)
		})
	}
	_, err := catalog.ParseSchema("a:int64,a:int64")
	wantClash(t, err, "appears twice", `"a"`)
	if _, err := catalog.ParseSchema("a:int64,b:int64,ab:string"); err != nil {
		t.Fatalf("distinct names refused: %v", err)
	}
}

// A schema built in code is checked too, when a table is created.
func TestCreateRefusesNamesDifferingOnlyInCase(t *testing.T) {
	tbl, err := catalog.Open(context.Background(), t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	sc := catalog.Schema{Columns: []catalog.Column{{Name: "id", Type: catalog.Type{Kind: catalog.KindInt64}},
		{Name: "ID", Type: catalog.Type{Kind: catalog.KindString}}}}
	_, err = tbl.Create(context.Background(), sc, catalog.PartitionSpec{}, nil, "test")
	wantClash(t, err, "differ only in case", `"id"`, `"ID"`)
}

// day() partitions write date= folders: a column Date would be the same
// column to a reader that folds case.
func TestPartitionSpecRefusesDateColumnInAnyCase(t *testing.T) {
	sc := mustSchema("Date:string,ts:timestamp")
	_, err := catalog.ParsePartitionSpec("day(ts)", sc)
	wantClash(t, err, "clashes", `"date"`, `"Date"`)
}

// Import infers a schema from the files' footers: a file with columns a
// and A, two files spelling one column two ways, and a partition folder key
// that a column spells another way are all refused, naming both.
func TestImportRefusesNamesDifferingOnlyInCase(t *testing.T) {
	ctx := context.Background()
	col := func(name string) catalog.Column {
		return catalog.Column{Name: name, Type: catalog.Type{Kind: catalog.KindInt64}, Nullable: true}
	}
	write := func(t *testing.T, st cloud.Store, key string, names ...string) string {
		var sc catalog.Schema
		row := []any{}
		for _, n := range names {
			sc.Columns = append(sc.Columns, col(n))
			row = append(row, int64(1))
		}
		if _, _, err := pqio.WriteParquet(ctx, st, key, sc, [][]any{row}); err != nil {
			t.Fatal(err)
		}
		return key
	}
	for name, tc := range map[string]struct {
		files [][]string // key, then column names
		want  []string
	}{
		"one file with a and A": {files: [][]string{{"x=1/f.parquet", "a", "A"}},
			want: []string{"f.parquet", `"a"`, `"A"`, "differ only in case"}},
		"a in one file, A in another": {files: [][]string{{"x=1/f1.parquet", "id", "a"}, {"x=2/f2.parquet", "id", "A"}},
			want: []string{"f2.parquet", `"a"`, `"A"`, "differ only in case"}},
		"partition keys X and x": {files: [][]string{{"X=1/x=2/f.parquet", "y"}},
			want: []string{`"X"`, `"x"`, "partition keys", "differ only in case"}},
		"partition key X, column x": {files: [][]string{{"X=1/f.parquet", "x", "y"}},
			want: []string{`"X"`, `"x"`, "differ only in case"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := cloud.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, f := range tc.files {
				write(t, st, f[0], f[1:]...)
			}
			tbl, err := catalog.Open(ctx, filepath.Join(dir, "table"), catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Close()
			_, err = tbl.Import(ctx, dir, catalog.ImportOptions{})
			wantClash(t, err, tc.want[len(tc.want)-1], tc.want...)
			if _, err := tbl.Latest(ctx); err == nil {
				t.Fatal("a refused import created the table")
			}
		})
	}
}
