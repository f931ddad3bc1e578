package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Regression (issue 13, item 7): column names differing only in case were
// accepted. Spark, Hive and most warehouses fold case; sluice refuses them
// in --schema (a usage error) and in the files import adopts.
func TestColumnsDifferingOnlyInCaseAreRefused(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "schema.yaml")
	if err := os.WriteFile(yaml, []byte("- {name: id, type: int64}\n- {name: ID, type: string}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		schema string
		a, b   string
	}{
		"schema string": {"a:int64,A:string", "a", "A"},
		"schema file":   {"@" + yaml, "id", "ID"},
	} {
		t.Run("init with a "+name, func(t *testing.T) {
			table := filepath.Join(t.TempDir(), "t")
			r := sluice(t, nil, "init", table, "--schema", tc.schema)
			first, _, _ := strings.Cut(r.stderr, "\n")
			if r.code != 2 || !strings.Contains(first, `"`+tc.a+`"`) || !strings.Contains(first, `"`+tc.b+`"`) ||
				!strings.Contains(first, "differ only in case") {
				t.Fatalf("exit %d, stderr %q; want exit 2 and a line naming %q and %q", r.code, r.stderr, tc.a, tc.b)
			}
			if _, err := os.Stat(table); err == nil {
				t.Fatalf("a refused init left %s behind", table)
			}
		})
	}
	t.Run("import of a file with a and A", func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		st, err := cloud.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sc := catalog.Schema{Columns: []catalog.Column{
			{Name: "a", Type: catalog.Type{Kind: catalog.KindInt64}},
			{Name: "A", Type: catalog.Type{Kind: catalog.KindString}}}}
		if _, _, err := pqio.WriteParquet(ctx, st, "date=2024-05-01/part-0.parquet", sc, [][]any{{int64(1), "x"}}); err != nil {
			t.Fatal(err)
		}
		r := sluice(t, nil, "import", dir, "--from", dir)
		failsWithOneLine(t, r, "part-0.parquet", `"a"`, `"A"`, "differ only in case")
		if r := sluice(t, nil, "files", dir); r.code == 0 {
			t.Fatalf("a refused import created a table: %s", r.stdout)
		}
	})
}
