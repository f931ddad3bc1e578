package iceberg_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/iceberg"
)

// TestIcebergColumnBounds: the mirror's data files carry each column's
// lower and upper bounds and null count from the sluice manifest's
// statistics, so an Iceberg reader prunes by them: a scan planned with
// id > 45 gets exactly the files whose largest id is above 45.
func TestIcebergColumnBounds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := allTypesTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
		t.Fatal(err)
	}
	it, err := cat.Load(ctx, table.Identifier{"lake", "events"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, mustLatest(t, ctx, tbl))
	if err != nil {
		t.Fatal(err)
	}
	maxID := map[string]int64{}
	for _, f := range files {
		n, err := strconv.ParseInt(*f.Columns["id"].Max, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		maxID["file://"+tbl.FileURL(f)] = n
	}
	idField, _ := it.Schema().FindFieldByName("id")
	nameField, _ := it.Schema().FindFieldByName("name")
	tsField, _ := it.Schema().FindFieldByName("event_time")
	tasks, err := it.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != len(files) {
		t.Fatalf("the scan plans %d files, the table has %d", len(tasks), len(files))
	}
	for _, task := range tasks {
		df := task.File
		for _, f := range files {
			if "file://"+tbl.FileURL(f) != df.FilePath() {
				continue
			}
			for field, col := range map[ice.NestedField]string{idField: "id", tsField: "event_time"} {
				st := f.Columns[col]
				lo, err := ice.LiteralFromBytes(field.Type, df.LowerBoundValues()[field.ID])
				if err != nil {
					t.Fatalf("%s: %s's lower bound: %v", df.FilePath(), col, err)
				}
				hi, err := ice.LiteralFromBytes(field.Type, df.UpperBoundValues()[field.ID])
				if err != nil {
					t.Fatalf("%s: %s's upper bound: %v", df.FilePath(), col, err)
				}
				if want := literalText(t, field.Type, *st.Min); lo.String() != want {
					t.Errorf("%s: %s lower bound %s, sluice's min %s", df.FilePath(), col, lo, want)
				}
				if want := literalText(t, field.Type, *st.Max); hi.String() != want {
					t.Errorf("%s: %s upper bound %s, sluice's max %s", df.FilePath(), col, hi, want)
				}
			}
			if got := df.NullValueCounts()[nameField.ID]; got != f.Columns["name"].NullCount || got == 0 {
				t.Errorf("%s: name has %d nulls in the mirror, %d in sluice's manifest", df.FilePath(), got, f.Columns["name"].NullCount)
			}
		}
	}
	pruned, err := it.Scan(table.WithRowFilter(ice.GreaterThan(ice.Reference("id"), int64(45)))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, n := range maxID {
		if n > 45 {
			want++
		}
	}
	for _, task := range pruned {
		if maxID[task.File.FilePath()] <= 45 {
			t.Errorf("the scan for id > 45 plans %s, whose largest id is %d", task.File.FilePath(), maxID[task.File.FilePath()])
		}
	}
	if len(pruned) != want || want == len(files) {
		t.Errorf("the scan for id > 45 plans %d of %d files, want the %d whose largest id is above 45 (and some pruned)", len(pruned), len(files), want)
	}
}

// literalText is how an Iceberg literal of type typ prints the sluice
// text s of a bound.
func literalText(t *testing.T, typ ice.Type, s string) string {
	t.Helper()
	lit, err := ice.StringLiteral(s).To(typ)
	if err != nil {
		t.Fatalf("%q as %s: %v", s, typ, err)
	}
	return lit.String()
}
