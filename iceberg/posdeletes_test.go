package iceberg

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"
)

// mergeOnReadTable creates an Iceberg table (id long, name string) of the
// format version in a SQLite catalog in a temporary folder, deleting by
// merge-on-read, its data files' row groups of 40 rows, and appends
// files data files of 100 rows each, ids counting from 0.
func mergeOnReadTable(t *testing.T, ctx context.Context, version string, files int) *table.Table {
	t.Helper()
	dir := t.TempDir()
	cat, err := OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	if err := cat.cat.CreateNamespace(ctx, table.Identifier{"lake"}, nil); err != nil {
		t.Fatal(err)
	}
	sch := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "name", Type: ice.PrimitiveTypes.String},
	)
	tbl, err := cat.cat.CreateTable(ctx, table.Identifier{"lake", "events"}, sch,
		icecat.WithLocation("file://"+filepath.Join(dir, "events")),
		icecat.WithProperties(ice.Properties{
			table.PropertyFormatVersion:   version,
			table.WriteDeleteModeKey:      table.WriteModeMergeOnRead,
			table.ParquetRowGroupLimitKey: "40",
		}))
	if err != nil {
		t.Fatal(err)
	}
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for f := range files {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		for i := range 100 {
			id := int64(f*100 + i)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("name-", id%7))
		}
		rec := b.NewRecordBatch()
		b.Release()
		data := array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
		rec.Release()
		tbl, err = tbl.AppendTable(ctx, data, 1000, nil)
		data.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// fileIDs reads the ids of a data file, in file order.
func fileIDs(t *testing.T, fs iceio.IO, path string) []int64 {
	t.Helper()
	r, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(r, info.Size())
	if err != nil {
		t.Fatal(err)
	}
	type idRow struct {
		ID int64 `parquet:"id"`
	}
	rows := make([]idRow, f.NumRows())
	rd := parquet.NewGenericReader[idRow](f)
	defer rd.Close()
	if n, err := rd.Read(rows); n != len(rows) || (err != nil && n != len(rows)) {
		t.Fatalf("%s: %d of %d rows read: %v", path, n, len(rows), err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// checkDeletedPositions plans tbl's scan and checks that each data file's
// deleted positions, from its delete files, are those of its rows whose id
// is in deleted; it returns the delete files seen, by path, with the
// number of data files each applied to.
func checkDeletedPositions(t *testing.T, ctx context.Context, tbl *table.Table, deleted []int64) map[string]int {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// One cache for the table's data files, as a compaction has: a
	// Parquet delete file applying to several is read once.
	var cache deleteFiles
	opened := &countingIO{IO: fs, opens: map[string]int{}}
	seen := map[string]int{}
	hit := 0
	for _, task := range tasks {
		deletes := slices.Concat(task.DeleteFiles, task.DeletionVectorFiles, task.EqualityDeleteFiles)
		for _, d := range deletes {
			seen[d.FilePath()]++
		}
		got, err := cache.positions(ctx, opened, task.File, deletes)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for pos, id := range fileIDs(t, fs, task.File.FilePath()) {
			if slices.Contains(deleted, id) {
				want = append(want, int64(pos))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: deleted positions %v, want %v", task.File.FilePath(), got, want)
		}
		hit += len(got)
	}
	if hit != len(deleted) {
		t.Errorf("%d positions deleted over the table's files, want %d", hit, len(deleted))
	}
	for path, n := range opened.opens {
		if strings.HasSuffix(path, ".parquet") && n != 1 {
			t.Errorf("position delete file %s read %d times, want once", path, n)
		}
	}
	return seen
}

// countingIO counts the opens of each file.
type countingIO struct {
	iceio.IO
	opens map[string]int
}

func (c *countingIO) Open(name string) (iceio.File, error) {
	c.opens[name]++
	return c.IO.Open(name)
}

// The first and last rows of a file, rows on both sides of a row group
// boundary (40 rows a group), rows of several files; deleted in two
// commits.
var (
	firstDeletes  = []int64{0, 39, 40, 99, 100, 150, 151, 279}
	secondDeletes = []int64{1, 80, 81, 200, 299}
)

// A v2 table's merge-on-read deletes are Parquet position delete files,
// each holding rows of several data files: a data file's deleted positions
// are exactly those of the rows the delete filters hit, over two deletes
// whose files add up.
func TestDeletedPositionsFromPositionDeleteFiles(t *testing.T) {
	ctx := context.Background()
	tbl := mergeOnReadTable(t, ctx, "2", 3)
	var err error
	if tbl, err = tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), firstDeletes...), nil); err != nil {
		t.Fatal(err)
	}
	checkDeletedPositions(t, ctx, tbl, firstDeletes)
	if tbl, err = tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), secondDeletes...), nil); err != nil {
		t.Fatal(err)
	}
	seen := checkDeletedPositions(t, ctx, tbl, slices.Concat(firstDeletes, secondDeletes))
	shared := false
	for path, n := range seen {
		if !strings.HasSuffix(path, ".parquet") {
			t.Errorf("delete file %s: want Parquet position deletes", path)
		}
		shared = shared || n > 1
	}
	if len(seen) < 2 || !shared {
		t.Fatalf("delete files %v: want several, one of them applying to several data files", seen)
	}
}

// A v3 table's merge-on-read deletes are deletion vectors in Puffin files,
// one per data file, merged over two deletes.
func TestDeletedPositionsFromDeletionVectors(t *testing.T) {
	ctx := context.Background()
	tbl := mergeOnReadTable(t, ctx, "3", 3)
	var err error
	if tbl, err = tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), firstDeletes...), nil); err != nil {
		t.Fatal(err)
	}
	checkDeletedPositions(t, ctx, tbl, firstDeletes)
	if tbl, err = tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), secondDeletes...), nil); err != nil {
		t.Fatal(err)
	}
	seen := checkDeletedPositions(t, ctx, tbl, slices.Concat(firstDeletes, secondDeletes))
	if len(seen) == 0 {
		t.Fatal("no deletion vector")
	}
	for path := range seen {
		if !strings.HasSuffix(path, ".puffin") {
			t.Errorf("delete file %s: want a deletion vector in a Puffin file", path)
		}
	}
}

// Equality delete files are refused with ErrEqualityDeletes, and a
// position past the data file's record count is an error naming it.
func TestDeletedPositionsRefusals(t *testing.T) {
	ctx := context.Background()
	tbl := mergeOnReadTable(t, ctx, "2", 1)
	var err error
	if tbl, err = tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), int64(5), int64(60)), nil); err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 || len(tasks[0].DeleteFiles) != 1 {
		t.Fatalf("%d tasks (%v), want one with one delete file", len(tasks), err)
	}
	task := tasks[0]

	eq, err := ice.NewDataFileBuilder(tbl.Spec(), ice.EntryContentEqDeletes, "file:///nowhere/eq.parquet", ice.ParquetFile, nil, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	_, err = deletedPositions(ctx, fs, task.File, append(task.DeleteFiles, eq.EqualityFieldIDs([]int{1}).Build()))
	if !errors.Is(err, ErrEqualityDeletes) || !strings.Contains(err.Error(), "eq.parquet") {
		t.Fatalf("err = %v, want ErrEqualityDeletes naming the delete file", err)
	}

	// The same path, said to hold 50 rows: position 60 is past them.
	short, err := ice.NewDataFileBuilder(tbl.Spec(), ice.EntryContentData, task.File.FilePath(), ice.ParquetFile, nil, nil, nil, 50, task.File.FileSizeBytes())
	if err != nil {
		t.Fatal(err)
	}
	_, err = deletedPositions(ctx, fs, short.Build(), task.DeleteFiles)
	if err == nil || !strings.Contains(err.Error(), "position 60") || !strings.Contains(err.Error(), task.File.FilePath()) {
		t.Fatalf("err = %v, want an error naming position 60 and the data file", err)
	}

	// Delete files of another data file delete nothing of this one.
	other, err := ice.NewDataFileBuilder(tbl.Spec(), ice.EntryContentData, "file:///nowhere/other.parquet", ice.ParquetFile, nil, nil, nil, 100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := deletedPositions(ctx, fs, other.Build(), task.DeleteFiles); err != nil || got != nil {
		t.Fatalf("another file's deleted positions %v (%v), want none", got, err)
	}
}
