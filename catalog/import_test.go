package catalog_test

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
)

var importDay = time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)

// importRows are the rows of importedTable: two files a day, two days.
func importRows() [][]any {
	var rows [][]any
	for d := range 2 {
		for f := range 2 {
			rows = append(rows, eventRows(importDay.AddDate(0, 0, d), 100*d+10*f, 5)...)
		}
	}
	return rows
}

// writeImportFolder writes a Hive folder of four Parquet files (two a
// day, importRows) at loc, as Spark would.
func writeImportFolder(t *testing.T, loc string) {
	t.Helper()
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows := importRows()
	for i := 0; i < len(rows); i += 5 {
		day := rows[i][3].(time.Time).Format("2006-01-02")
		key := "date=" + day + "/part-" + string(rune('a'+i/5)) + ".parquet"
		if _, _, err := pqio.WriteParquet(ctx, st, key, eventSchema, rows[i:i+5]); err != nil {
			t.Fatal(err)
		}
	}
}

// importedTable writes the folder of writeImportFolder at loc and imports
// it in place, as `sluice import T --from T` does.
func importedTable(t *testing.T, loc string) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	writeImportFolder(t, loc)
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	res, err := tbl.Import(ctx, loc, catalog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded != 4 {
		t.Fatalf("first import added %d files, want 4", res.FilesAdded)
	}
	return tbl
}

// compactAll replaces every live file by one file per partition holding
// the same rows, as compaction does, and returns the files it replaced.
func compactAll(t *testing.T, tbl *catalog.Table) []catalog.DataFile {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	// The imported table's partitions are identity fields (values only in
	// folder names), so the files are written by hand, one a day.
	byDay := map[string][][]any{}
	for _, r := range importRows() {
		day := r[3].(time.Time).Format("2006-01-02")
		byDay[day] = append(byDay[day], r)
	}
	var merged []catalog.DataFile
	for _, day := range slices.Sorted(maps.Keys(byDay)) {
		part := "date=" + day
		key := catalog.NewDataFilePath(part)
		n, stats, err := pqio.WriteParquet(ctx, tbl.Store(), key, m.Schema, byDay[day])
		if err != nil {
			t.Fatal(err)
		}
		merged = append(merged, catalog.DataFile{Path: key, Partition: part,
			PartitionValues: map[string]*string{"date": &day}, Bytes: n, FileStats: stats})
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: old}); err != nil {
		t.Fatal(err)
	}
	return old
}

// importAgain imports the folder again and checks that it added nothing:
// the table keeps want as its live files and its rows.
func importAgain(t *testing.T, tbl *catalog.Table, from string, want map[string]catalog.DataFile, replaced int) {
	t.Helper()
	ctx := context.Background()
	res, err := tbl.Import(ctx, from, catalog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest != nil || res.FilesAdded != 0 || res.FilesReplaced != replaced {
		t.Fatalf("import again: %d files added (version %v), %d replaced; want nothing added and %d replaced",
			res.FilesAdded, res.Manifest != nil, res.FilesReplaced, replaced)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := livePaths(t, tbl, m); !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("live files after importing again:\n%v\nwant\n%v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if m.Rows != int64(len(importRows())) {
		t.Fatalf("table has %d rows after importing again, want %d", m.Rows, len(importRows()))
	}
}

// Regression (issue 13, item 1): import, compact, import again adopted
// the files the compaction replaced, doubling the table. They are still on
// disk until vacuum, but a version referenced them: history, not news.
func TestImportAfterCompactionAdoptsNoReplacedFile(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl := importedTable(t, loc)
			old := compactAll(t, tbl)
			m, _ := tbl.Latest(ctx)
			want := livePaths(t, tbl, m)
			importAgain(t, tbl, loc, want, len(old))

			// Spark output that lands later is still news.
			st := tbl.Store()
			if _, _, err := pqio.WriteParquet(ctx, st, "date=2024-07-02/part-new.parquet", eventSchema,
				eventRows(importDay.AddDate(0, 0, 1), 500, 3)); err != nil {
				t.Fatal(err)
			}
			res, err := tbl.Import(ctx, loc, catalog.ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.FilesAdded != 1 || res.Rows != 3 || res.FilesReplaced != len(old) {
				t.Fatalf("import of one new file: %d added (%d rows), %d replaced; want 1 (3 rows), %d",
					res.FilesAdded, res.Rows, res.FilesReplaced, len(old))
			}
		})
	}
}

// The same when the table adopted a folder outside its root: compaction
// writes under the table's root and leaves the folder's files where they
// are, no longer live.
func TestImportFromAnotherFolderAfterCompactionAdoptsNoReplacedFile(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	importedTable(t, src) // writes the folder (and a table of its own there)
	tbl, err := catalog.Open(ctx, t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if res, err := tbl.Import(ctx, src, catalog.ImportOptions{}); err != nil || res.FilesAdded != 4 {
		t.Fatalf("first import: %+v, %v", res, err)
	}
	old := compactAll(t, tbl)
	for _, f := range old {
		if !filepath.IsAbs(f.Path) {
			t.Fatalf("replaced file %s: want the absolute path of a file outside the table", f.Path)
		}
	}
	m, _ := tbl.Latest(ctx)
	importAgain(t, tbl, src, livePaths(t, tbl, m), len(old))
}

// Vacuum keeps a replaced file younger than the retention even when no
// retained version references it any more (here its modification time is
// newer than the commits, as after copying the table's folder). Import
// must still know it for what it is.
func TestImportAfterVacuumAdoptsNoReplacedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := importedTable(t, dir)
	old := compactAll(t, tbl)
	later := time.Now().Add(time.Hour)
	for _, f := range old {
		if err := os.Chtimes(filepath.Join(dir, f.Path), later, later); err != nil {
			t.Fatal(err)
		}
	}
	vac, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: time.Minute, Force: true, Now: later.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if vac.RetainedVersions != 1 || len(vac.Deleted) != 0 {
		t.Fatalf("vacuum retained %d versions and deleted %v; want only the latest retained, nothing deleted",
			vac.RetainedVersions, vac.Deleted)
	}
	m, _ := tbl.Latest(ctx)
	importAgain(t, tbl, dir, livePaths(t, tbl, m), len(old))
}

// After a rollback, the files that later versions added are not live, but
// they were referenced: importing again must not bring them back. Rolling
// back a compaction, then importing, would otherwise double the table with
// the compaction's output.
func TestImportAfterRollbackAdoptsNoDroppedFile(t *testing.T) {
	ctx := context.Background()
	for kind, loc := range testenv.Locations(t) {
		t.Run(kind, func(t *testing.T) {
			tbl := importedTable(t, loc)
			v1, _ := tbl.Latest(ctx)
			want := livePaths(t, tbl, v1)
			compactAll(t, tbl)
			m, _ := tbl.Latest(ctx)
			outputs := len(livePaths(t, tbl, m))
			if _, err := tbl.Rollback(ctx, v1.Version, "rb"); err != nil {
				t.Fatal(err)
			}
			importAgain(t, tbl, loc, want, outputs)
		})
	}
}

// A file that only a rolled-back import adopted is not adopted again
// either: the rollback said the table is better without it.
func TestImportAfterRollbackOfImportAdoptsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl := importedTable(t, dir)
	v1, _ := tbl.Latest(ctx)
	want := livePaths(t, tbl, v1)
	if _, _, err := pqio.WriteParquet(ctx, tbl.Store(), "date=2024-07-01/part-late.parquet", eventSchema,
		eventRows(importDay, 700, 2)); err != nil {
		t.Fatal(err)
	}
	if res, err := tbl.Import(ctx, dir, catalog.ImportOptions{}); err != nil || res.FilesAdded != 1 {
		t.Fatalf("import of the late file: %+v, %v", res, err)
	}
	if _, err := tbl.Rollback(ctx, v1.Version, "rb"); err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Import(ctx, dir, catalog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded != 0 || res.FilesReplaced != 1 {
		t.Fatalf("import after rollback: %d added, %d replaced; want 0 and 1", res.FilesAdded, res.FilesReplaced)
	}
	m, _ := tbl.Latest(ctx)
	if got := livePaths(t, tbl, m); len(got) != len(want) || m.Rows != int64(len(importRows())) {
		t.Fatalf("after rollback and import: %d files, %d rows; want %d files, %d rows", len(got), m.Rows, len(want), len(importRows()))
	}
}

// readCounter counts the pages and pieces read through it, by key; it
// wraps a real store.
type readCounter struct {
	cloud.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *readCounter) Get(ctx context.Context, key string) (io.ReadCloser, cloud.ObjectInfo, error) {
	if strings.HasPrefix(key, "_sluice/pages/") || strings.HasPrefix(key, "_sluice/pieces/") {
		c.mu.Lock()
		c.reads[key]++
		c.mu.Unlock()
	}
	return c.Store.Get(ctx, key)
}

// Import's look into history costs nothing for partitions it adds nothing
// to: with forty versions of appends and a compaction behind it, adopting
// a file in a new partition reads the latest version's pages and pieces
// (which import reads anyway, for the live files) and nothing older; a
// file in a partition with history reads that partition's old pieces, each
// once, and no other partition's.
func TestImportReadsHistoryOnlyOfPartitionsWithNewFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, _ := newTable(t, dir)
	for i := range 40 {
		appendRows(t, tbl, eventRows(importDay.AddDate(0, 0, i%4), 10*i, 2))
	}
	m, _ := tbl.Latest(ctx)
	var day0 []catalog.DataFile
	for _, f := range livePaths(t, tbl, m) {
		if f.Partition == "date=2024-07-01" {
			day0 = append(day0, f)
		}
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Remove: day0[:5]}); err != nil {
		t.Fatal(err)
	}
	// Vacuumed: the only file not live is the one each case adds.
	for _, f := range day0[:5] {
		if err := os.Remove(filepath.Join(dir, f.Path)); err != nil {
			t.Fatal(err)
		}
	}

	// importCounting adds a file at key, imports it through a fresh
	// handle, and returns what that read, and the pieces and pages of the
	// version it imported into.
	importCounting := func(t *testing.T, key string) (reads map[string]int, livePieces map[string]bool, pages int) {
		t.Helper()
		if _, _, err := pqio.WriteParquet(ctx, tbl.Store(), key, eventSchema, eventRows(importDay, 900, 1)); err != nil {
			t.Fatal(err)
		}
		cur, _ := tbl.Latest(ctx)
		refs, err := tbl.Partitions(ctx, cur)
		if err != nil {
			t.Fatal(err)
		}
		livePieces = map[string]bool{}
		for _, r := range refs {
			for _, p := range r.Pieces {
				livePieces[p.Key] = true
			}
		}
		st, err := cloud.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		rc := &readCounter{Store: st, reads: map[string]int{}}
		fresh := catalog.NewTable(dir, rc, catalog.Options{})
		defer fresh.Close()
		res, err := fresh.Import(ctx, dir, catalog.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesAdded != 1 {
			t.Fatalf("import added %d files, want the 1 new one", res.FilesAdded)
		}
		for key, n := range rc.reads {
			if n > 1 {
				t.Errorf("read %s %d times", key, n)
			}
		}
		return rc.reads, livePieces, len(cur.Pages)
	}

	t.Run("new partition", func(t *testing.T) {
		reads, live, pages := importCounting(t, "date=2024-07-09/part-new.parquet")
		for key := range reads {
			if strings.HasPrefix(key, "_sluice/pieces/") && !live[key] {
				t.Errorf("read piece %s of an older version", key)
			}
		}
		if n := len(reads) - len(live); n != pages {
			t.Errorf("read %d pages, want the latest version's %d", n, pages)
		}
	})
	t.Run("partition with history", func(t *testing.T) {
		reads, live, _ := importCounting(t, "date=2024-07-01/part-new.parquet")
		old := 0
		for key := range reads {
			if !strings.HasPrefix(key, "_sluice/pieces/") || live[key] {
				continue
			}
			old++
			b, err := os.ReadFile(filepath.Join(dir, key))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"p":"date=2024-07-01"`) {
				t.Errorf("read piece %s of another partition: %s", key, b)
			}
		}
		if old == 0 {
			t.Error("read no older piece of the partition: its history was not asked")
		}
	})
}

// Regression: import in place adopted a file sluice had written and not
// committed (a crashed ingest's or compaction's output, or a running
// one's), so its rows were counted again when the writer retried. A
// Spark file that lands beside it is still adopted.
func TestImportAdoptsNoUncommittedFileOfSluice(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	tbl := importedTable(t, loc)
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := eventRows(importDay, 500, 5)
	orphan := catalog.NewDataFilePath("date=2024-07-01")
	spark := "date=2024-07-01/part-00000-late.snappy.parquet"
	for _, key := range []string{orphan, spark} {
		if _, _, err := pqio.WriteParquet(ctx, tbl.Store(), key, m.Schema, rows); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tbl.Import(ctx, loc, catalog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded != 1 || res.FilesUncommitted != 1 {
		t.Fatalf("import: %d files added, %d uncommitted skipped; want 1 and 1", res.FilesAdded, res.FilesUncommitted)
	}
	got := livePaths(t, tbl, res.Manifest)
	if _, ok := got[spark]; !ok {
		t.Errorf("the late Spark file %s is not live: %v", spark, slices.Sorted(maps.Keys(got)))
	}
	if _, ok := got[orphan]; ok {
		t.Errorf("sluice's uncommitted file %s was adopted", orphan)
	}
	if want := m.Rows + int64(len(rows)); res.Manifest.Rows != want {
		t.Errorf("table has %d rows, want %d", res.Manifest.Rows, want)
	}
}

// Files an Iceberg writer wrote carry field ids; the table adopting them
// keeps none in its schema, nested ones included, so that the files it
// writes itself carry none (its Iceberg mirror numbers its columns).
func TestImportKeepsNoFieldIDs(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	st, err := cloud.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	schema := pqio.Schema{Columns: []pqio.Column{
		{Name: "id", Type: pqio.Type{Kind: pqio.KindInt64}, ID: 1},
		{Name: "attrs", Type: pqio.StructOf(pqio.Column{Name: "k", Type: pqio.Type{Kind: pqio.KindString}, Nullable: true, ID: 3}), Nullable: true, ID: 2},
	}}
	if _, _, err := pqio.WriteParquet(ctx, st, "part-0.parquet", schema, [][]any{{int64(1), map[string]any{"k": "a"}}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := catalog.Open(ctx, filepath.Join(t.TempDir(), "t"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	if _, err := tbl.Import(ctx, src, catalog.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Schema.String() != schema.String() {
		t.Fatalf("schema %s, want %s", m.Schema, schema)
	}
	if m.Schema.Columns[0].ID != 0 || m.Schema.Columns[1].ID != 0 || m.Schema.Columns[1].Type.Fields[0].ID != 0 {
		t.Errorf("the table's schema keeps field ids: %+v", m.Schema.Columns)
	}
}
