package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluice-data/sluice/inspect"
	"github.com/sluice-data/sluice/internal/icebergtest"
)

// A table in an Iceberg catalog reads at its current snapshot; one whose
// rows are deleted by delete files is refused, not shown with them.
func TestIcebergTableReadsAtItsSnapshotAndRefusesDeletes(t *testing.T) {
	ctx := context.Background()
	t.Run("appends only", func(t *testing.T) {
		tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 3, RowsPerAppend: 10, Seed: 1})
		tbl := open(t, tb.URL())
		n := -1
		if _, err := inspect.Rows(ctx, tbl, inspect.RowOptions{}, func([]any) error { n++; return nil }); err != nil || n != 30 {
			t.Fatalf("%d rows, %v; want 30", n, err)
		}
		d, err := inspect.Describe(ctx, tbl, inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Format != "iceberg" || d.Rows != 30 || d.Files < 3 || len(d.Schema) == 0 {
			t.Fatalf("describe: format %s, %d rows, %d files, schema %v", d.Format, d.Rows, d.Files, d.Schema)
		}
	})
	t.Run("position deletes", func(t *testing.T) {
		tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 3, RowsPerAppend: 10, PositionDeletes: 1, Seed: 2})
		tbl := open(t, tb.URL())
		_, err := inspect.Rows(ctx, tbl, inspect.RowOptions{}, func([]any) error { return nil })
		if !errors.Is(err, inspect.ErrDeletes) {
			t.Fatalf("rows of a table with delete files: %v", err)
		}
	})
}
