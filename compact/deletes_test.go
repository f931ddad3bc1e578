package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// writeGroups writes rows as one Parquet file at key, a row group of each
// of groups' sizes, in order.
func writeGroups(t testing.TB, st cloud.Store, key string, schema catalog.Schema, rows [][]any, groups ...int) catalog.DataFile {
	t.Helper()
	ctx := context.Background()
	w, err := pqio.NewParquetWriter(schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	off := 0
	for _, g := range groups {
		if err := w.Write(ctx, rows[off:off+g]); err != nil {
			t.Fatal(err)
		}
		if err := w.FlushRowGroup(); err != nil {
			t.Fatal(err)
		}
		off += g
	}
	if off != len(rows) {
		t.Fatalf("row groups of %d rows for %d rows", off, len(rows))
	}
	n, stats, err := w.Close(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	return catalog.DataFile{Path: key, Bytes: n, FileStats: stats}
}

// fileLayout returns the first row of each row group of f but the first
// and, for a column chunk of several pages, the first row of its second
// page, as positions in the file.
func fileLayout(t testing.TB, st cloud.Store, f catalog.DataFile) (groups []int64, page int64) {
	t.Helper()
	pf, err := pqio.OpenParquetFileWithIndex(f.Path, pqio.NewReaderAt(context.Background(), st, f.Path, f.Bytes), f.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	page = -1
	var start int64
	for g, rg := range pf.RowGroups() {
		if g > 0 {
			groups = append(groups, start)
		}
		for _, c := range rg.ColumnChunks() {
			oi, err := c.OffsetIndex()
			if err != nil {
				t.Fatal(err)
			}
			if page < 0 && oi.NumPages() > 1 {
				page = start + oi.FirstRowIndex(1)
			}
		}
		start += rg.NumRows()
	}
	return groups, page
}

// keptRows renders the rows of f but those at the deleted positions, as
// readRows does.
func keptRows(t testing.TB, st cloud.Store, schema catalog.Schema, f catalog.DataFile, deleted []int64) []string {
	t.Helper()
	rows, err := pqio.ReadParquetRows(context.Background(), st, f.Path, f.Bytes, schema)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, r := range rows {
		if slices.Contains(deleted, int64(i)) {
			continue
		}
		parts := make([]string, len(r))
		for c, v := range r {
			if v == nil {
				parts[c] = "NULL"
			} else {
				parts[c] = pqio.FormatValue(schema.Columns[c].Type, v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// deletedBy returns a RewriteOptions.Deleted of the positions by path.
func deletedBy(m map[string][]int64) func(catalog.DataFile) []int64 {
	return func(f catalog.DataFile) []int64 { return m[f.Path] }
}

// checkKept rewrites inputs with the deleted rows of del and checks the
// outputs hold exactly the kept rows and the result counts them.
func checkKept(t *testing.T, st cloud.Store, schema catalog.Schema, inputs []catalog.DataFile, del map[string][]int64) RewriteResult {
	t.Helper()
	var want []string
	var rowsIn, deleted int64
	for _, f := range inputs {
		want = append(want, keptRows(t, st, schema, f, del[f.Path])...)
		rowsIn += f.Rows
		deleted += int64(len(del[f.Path]))
	}
	slices.Sort(want)
	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{Deleted: deletedBy(del)})
	if err != nil {
		t.Fatal(err)
	}
	if res.RowsIn != rowsIn || res.RowsDeleted != deleted || res.RowsOut != rowsIn-deleted {
		t.Fatalf("rows in %d, deleted %d, out %d; want %d, %d, %d", res.RowsIn, res.RowsDeleted, res.RowsOut, rowsIn, deleted, rowsIn-deleted)
	}
	if got := readRows(t, st, schema, res.Outputs); !slices.Equal(got, want) {
		t.Fatalf("the outputs hold %d rows, want the %d kept", len(got), len(want))
	}
	return res
}

// boundaryDeletes returns the positions to delete in f, of rows rows: its
// first and last rows, the rows on either side of each row group boundary
// and of a page boundary, and every 997th row.
func boundaryDeletes(t *testing.T, st cloud.Store, f catalog.DataFile, rows int64) []int64 {
	t.Helper()
	groups, page := fileLayout(t, st, f)
	if len(groups) == 0 || page < 0 {
		t.Fatalf("%s: row groups from %v, a second page from %d: want several of each", f.Path, groups, page)
	}
	del := []int64{0, rows - 1, page - 1, page}
	for _, g := range groups {
		del = append(del, g-1, g)
	}
	for p := int64(500); p < rows; p += 997 {
		del = append(del, p)
	}
	return slices.Compact(slices.Sorted(slices.Values(del)))
}

// A bin of flat inputs, some with deleted rows: the first and last rows,
// rows on both sides of a row group and of a page boundary, every row of a
// file, rows of a file whose columns are converted or missing. The
// outputs hold exactly the kept rows, and the result counts the deleted.
func TestRewriteLeavesOutDeletedRows(t *testing.T) {
	privateTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	big := writeGroups(t, st, "in/big.parquet", schema, eventRows(0, 45000), 40000, 5000)
	plain := writeFile(t, st, "in/plain.parquet", "", schema, eventRows(50000, 100))
	gone := writeFile(t, st, "in/gone.parquet", "", schema, eventRows(60000, 100))
	old := parseSchema(t, "id:int32,name:string,at:timestamp,day:date")
	var oldRows [][]any
	for _, r := range eventRows(70000, 300) {
		oldRows = append(oldRows, []any{int32(r[0].(int64)), r[1], r[2], r[6]})
	}
	older := writeFile(t, st, "in/old.parquet", "", old, oldRows)
	all := make([]int64, 100)
	for i := range all {
		all[i] = int64(i)
	}
	del := map[string][]int64{
		big.Path:   boundaryDeletes(t, st, big, 45000),
		gone.Path:  all,
		older.Path: {1, 2, 150, 299},
	}
	res := checkKept(t, st, schema, []catalog.DataFile{plain, big, gone, older}, del)
	t.Logf("%d rows in, %d deleted, %d out", res.RowsIn, res.RowsDeleted, res.RowsOut)
	noTempFiles(t)
}

// Positions given out of order or twice are sorted and counted once.
func TestRewriteSortsDeletedPositions(t *testing.T) {
	st := tempStore(t)
	schema := parseSchema(t, eventSchema)
	inputs := eventInputs(t, st, schema, 2)
	res, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs,
		RewriteOptions{Deleted: deletedBy(map[string][]int64{inputs[1].Path: {9, 3, 9, 0}})})
	if err != nil {
		t.Fatal(err)
	}
	want := append(keptRows(t, st, schema, inputs[0], nil), keptRows(t, st, schema, inputs[1], []int64{0, 3, 9})...)
	slices.Sort(want)
	if got := readRows(t, st, schema, res.Outputs); res.RowsDeleted != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d rows deleted, %d rows out; want 3, %d", res.RowsDeleted, len(got), len(want))
	}
}

// Inputs without deleted rows keep the fast paths beside one with them:
// their pages are still reused.
func TestRewriteDeletesKeepOtherInputsFast(t *testing.T) {
	st := tempStore(t)
	schema, inputs := reusableInputs(t, st, 24)
	res := checkKept(t, st, schema, inputs, map[string][]int64{inputs[3].Path: {0, 1999, 3999}, inputs[20].Path: {7}})
	if res.PagesReused == 0 {
		t.Fatal("no page reused")
	}
}

// A bin whose every row is deleted writes nothing.
func TestRewriteEveryRowDeleted(t *testing.T) {
	for name, schemaText := range map[string]string{"flat": eventSchema, "nested": nestedSchema} {
		t.Run(name, func(t *testing.T) {
			st := tempStore(t)
			schema := parseSchema(t, schemaText)
			var f catalog.DataFile
			if name == "flat" {
				f = writeFile(t, st, "in/0.parquet", "", schema, eventRows(0, 50))
			} else {
				f = writeFile(t, st, "in/0.parquet", "", schema, nestedRows(0, 50))
			}
			all := make([]int64, 50)
			for i := range all {
				all[i] = int64(i)
			}
			before := listKeys(t, st)
			res := checkKept(t, st, schema, []catalog.DataFile{f}, map[string][]int64{f.Path: all})
			if len(res.Outputs) != 0 || res.RowsDeleted != 50 {
				t.Fatalf("%d outputs, %d rows deleted; want none, 50", len(res.Outputs), res.RowsDeleted)
			}
			if after := listKeys(t, st); !slices.Equal(before, after) {
				t.Fatalf("objects: %v", after)
			}
		})
	}
}

// nestedRows returns rows nestedRow(base) on, n of them.
func nestedRows(base, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = nestedRow(base + i)
	}
	return rows
}

// narrowNested returns the narrow schema of TestCompactNestedMixedInputs
// (a struct leaf int32 where the table's is int64), which an input is
// read through the assembling path for, and rows of it.
func narrowNested(t *testing.T, base, n int) (catalog.Schema, [][]any) {
	t.Helper()
	narrow := parseSchema(t, strings.Replace(nestedSchema, "s:struct<a:int64,", "s:struct<a:int32,", 1))
	rows := nestedRows(base, n)
	for _, r := range rows {
		if s, ok := r[2].(map[string]any); ok {
			s["a"] = int32(s["a"].(int64))
		}
	}
	return narrow, rows
}

// The nested rewrite leaves deleted rows out on both of its paths: an
// input stored as the output (copied as Parquet rows) with deletes on
// both sides of a row group and a page boundary, and one read through the
// assembling path.
func TestRewriteNestedLeavesOutDeletedRows(t *testing.T) {
	privateTempDir(t)
	st := tempStore(t)
	schema := parseSchema(t, nestedSchema)
	big := writeGroups(t, st, "in/big.parquet", schema, nestedRows(0, 45000), 40000, 5000)
	narrow, narrowRows := narrowNested(t, 100000, 200)
	assembled := writeFile(t, st, "in/narrow.parquet", "", narrow, narrowRows)
	plain := writeFile(t, st, "in/plain.parquet", "", schema, nestedRows(200000, 100))
	del := map[string][]int64{
		big.Path:       boundaryDeletes(t, st, big, 45000),
		assembled.Path: {0, 17, 18, 199},
	}
	res := checkKept(t, st, schema, []catalog.DataFile{big, assembled, plain}, del)
	t.Logf("%d rows in, %d deleted, %d out", res.RowsIn, res.RowsDeleted, res.RowsOut)
	noTempFiles(t)
}

// withWriteRowHook sets testHookWriteRow for the test.
func withWriteRowHook(t *testing.T, hook func(file string, pos int64, deleted bool) bool) {
	t.Helper()
	testHookWriteRow = hook
	t.Cleanup(func() { testHookWriteRow = nil })
}

// A deleted row that slips through into the outputs fails the
// verification, nothing left behind: written beside the kept rows (a row
// too many), and written in place of a kept row (the same count, another
// checksum); on flat and nested tables, on each path that reads rows.
func TestRewriteCatchesDeletedRowSlippingThrough(t *testing.T) {
	// Row 9 is NULL where row 6 is, so that only the checksum tells a
	// row 6 written in place of row 9: for the nested rows, row 6's
	// pattern comes back after 2,520 rows.
	rows := nestedRows(1000, 40)
	rows[9] = nestedRow(1006 + 2520)
	narrow, narrowRows := narrowNested(t, 1000, 40)
	_, again := narrowNested(t, 1006+2520, 1)
	narrowRows[9] = again[0]
	inputs := map[string]func(t *testing.T, st cloud.Store) (catalog.Schema, catalog.DataFile){
		"flat": func(t *testing.T, st cloud.Store) (catalog.Schema, catalog.DataFile) {
			return parseSchema(t, eventSchema), writeFile(t, st, "in/x.parquet", "", parseSchema(t, eventSchema), eventRows(1000, 40))
		},
		"nested rows": func(t *testing.T, st cloud.Store) (catalog.Schema, catalog.DataFile) {
			return parseSchema(t, nestedSchema), writeFile(t, st, "in/x.parquet", "", parseSchema(t, nestedSchema), rows)
		},
		"nested assembled": func(t *testing.T, st cloud.Store) (catalog.Schema, catalog.DataFile) {
			return parseSchema(t, nestedSchema), writeFile(t, st, "in/x.parquet", "", narrow, narrowRows)
		},
	}
	faults := map[string]struct {
		write func(pos int64, deleted bool) bool
		want  string
	}{
		"a deleted row written":                {func(pos int64, deleted bool) bool { return !deleted || pos == 6 }, "rows out"},
		"a deleted row written for a kept one": {func(pos int64, deleted bool) bool { return (!deleted && pos != 9) || pos == 6 }, "checksum"},
	}
	for in, mk := range inputs {
		for fault, tc := range faults {
			t.Run(in+"/"+fault, func(t *testing.T) {
				privateTempDir(t)
				st := tempStore(t)
				schema, f := mk(t, st)
				other := writeFile(t, st, "in/other.parquet", "", schema, nestedOrFlat(schema, 5000, 30))
				before := listKeys(t, st)
				hit := false
				withWriteRowHook(t, func(file string, pos int64, deleted bool) bool {
					w := tc.write(pos, deleted)
					hit = hit || w == deleted
					return w
				})
				_, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", []catalog.DataFile{other, f},
					RewriteOptions{Deleted: deletedBy(map[string][]int64{f.Path: {5, 6, 7}})})
				if !hit {
					t.Fatal("the hook changed no row")
				}
				if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrVerify for the %s", err, tc.want)
				}
				if after := listKeys(t, st); !slices.Equal(before, after) {
					t.Fatalf("objects after a failed verification: %v", after)
				}
				noTempFiles(t)
			})
		}
	}
}

// nestedOrFlat returns n rows from base on of the flat event schema or the
// nested one, whichever schema is.
func nestedOrFlat(schema catalog.Schema, base, n int) [][]any {
	if pqio.HasNested(schema) {
		return nestedRows(base, n)
	}
	return eventRows(base, n)
}

// A deleted position that is not a row of its file fails the rewrite
// with ErrDeletePosition naming the file and the position; nothing is
// left behind.
func TestRewriteRefusesDeletePositionOutOfRange(t *testing.T) {
	for _, schemaText := range []string{eventSchema, nestedSchema} {
		for _, pos := range []int64{100, 1 << 40, -1} {
			name := fmt.Sprintf("nested=%v/%d", schemaText == nestedSchema, pos)
			t.Run(name, func(t *testing.T) {
				privateTempDir(t)
				st := tempStore(t)
				schema := parseSchema(t, schemaText)
				var inputs []catalog.DataFile
				for i := range 3 {
					inputs = append(inputs, writeFile(t, st, fmt.Sprintf("in/%d.parquet", i), "", schema, nestedOrFlat(schema, i*100, 100)))
				}
				before := listKeys(t, st)
				// A small target writes an output before the bad input.
				_, err := Rewrite(context.Background(), storeOpener(st), st, schema, "", inputs, RewriteOptions{
					TargetFileSize: 1, Deleted: deletedBy(map[string][]int64{inputs[0].Path: {3}, inputs[2].Path: {0, 5, pos}}),
				})
				if !errors.Is(err, ErrDeletePosition) || !strings.Contains(err.Error(), "in/2.parquet") || !strings.Contains(err.Error(), fmt.Sprint(pos)) {
					t.Fatalf("err = %v, want ErrDeletePosition naming in/2.parquet and %d", err, pos)
				}
				if after := listKeys(t, st); !slices.Equal(before, after) {
					t.Fatalf("objects after the failed rewrite: %v", after)
				}
				noTempFiles(t)
			})
		}
	}
}
