package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/icebergtest"
)

// liveDataFiles are the current snapshot's data files of tbl, by path,
// with their spec ids, and the number of delete files.
func liveDataFiles(t *testing.T, tbl *table.Table) (map[string]int32, int) {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int32{}
	deletes := map[string]bool{}
	for _, task := range tasks {
		files[task.File.FilePath()] = task.File.SpecID()
		for _, d := range task.DeleteFiles {
			deletes[d.FilePath()] = true
		}
		for _, d := range task.DeletionVectorFiles {
			deletes[d.FilePath()] = true
		}
	}
	return files, len(deletes)
}

// sameSnapshotsThen checks that every snapshot of before is in after with
// the same rows, and that the snapshots after them are compactions
// holding the rows of before's newest.
func sameSnapshotsThen(t *testing.T, before, after []icebergtest.Snap) {
	t.Helper()
	if len(after) <= len(before) {
		t.Fatalf("%d snapshots after the compaction, %d before: it committed none", len(after), len(before))
	}
	for i, b := range before {
		if a := after[i]; a.ID != b.ID || a.Rows != b.Rows || a.Checksum != b.Checksum {
			t.Errorf("snapshot %d changed: before %+v, after %+v", b.ID, b, a)
		}
	}
	last := before[len(before)-1]
	for _, a := range after[len(before):] {
		if a.Operation != "replace" {
			t.Errorf("snapshot %d is a %q, want replace", a.ID, a.Operation)
		}
	}
	final := after[len(after)-1]
	if final.Rows != last.Rows || final.Checksum != last.Checksum {
		t.Errorf("after the compaction the table holds %d rows (checksum %s), before %d (%s)", final.Rows, final.Checksum, last.Rows, last.Checksum)
	}
}

func TestCompactAnIcebergTableInPlace(t *testing.T) {
	for _, v := range []int{2, 3} {
		t.Run("v"+string(rune('0'+v)), func(t *testing.T) {
			tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), FormatVersion: v, Appends: 16, RowsPerAppend: 300,
				SpecChangeAt: 8, PositionDeletes: 3, Concurrent: 4, Seed: int64(v)})
			before := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
			filesBefore, deletesBefore := liveDataFiles(t, tb.Load(t))
			if deletesBefore == 0 {
				t.Fatal("the test table has no delete files")
			}

			r := mustSluice(t, "--json", "compact", tb.URL(), "--min-input-files", "2")
			sum := summaryOf(t, r)
			tbl := tb.Load(t)
			after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
			sameSnapshotsThen(t, before, after)

			filesAfter, deletesAfter := liveDataFiles(t, tbl)
			if len(filesAfter) >= len(filesBefore) {
				t.Errorf("%d data files after, %d before", len(filesAfter), len(filesBefore))
			}
			if deletesAfter != 0 {
				t.Errorf("%d delete files left: the compaction applies them and drops them", deletesAfter)
			}
			specs := map[int32]bool{}
			for _, s := range filesAfter {
				specs[s] = true
			}
			if !specs[0] || !specs[1] {
				t.Errorf("files after the compaction are of specs %v: each file is rewritten under its own spec", specs)
			}
			// Every deleted row was in a file rewritten: none is written.
			if got := int64(sum["rows_deleted"].(float64)); got != tb.RowsDeleted() {
				t.Errorf("summary: rows_deleted %d, the fixture deleted %d", got, tb.RowsDeleted())
			}
			if sum["rows_written"] != sum["rows_in"].(float64)-sum["rows_deleted"].(float64) {
				t.Errorf("summary: rows_written %v, rows_in %v less rows_deleted %v", sum["rows_written"], sum["rows_in"], sum["rows_deleted"])
			}
			checkFieldIDs(t, tbl, filesAfter, filesBefore)
			// A second run finds nothing to do.
			again := summaryOf(t, mustSluice(t, "--json", "compact", tb.URL(), "--min-input-files", "2"))
			if again["files_in"].(float64) != 0 {
				t.Errorf("a second compaction rewrote %v files", again["files_in"])
			}
		})
	}
}

// dataManifests counts the data manifests of tbl's current snapshot.
func dataManifests(t *testing.T, tbl *table.Table) int {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range mans {
		if m.ManifestContent() == ice.ManifestContentData {
			n++
		}
	}
	return n
}

// checkFieldIDs checks that each file the compaction wrote carries, for
// every column, the field id of the table's schema: Iceberg readers
// resolve columns by id.
func checkFieldIDs(t *testing.T, tbl *table.Table, after, before map[string]int32) {
	t.Helper()
	sch := tbl.Schema()
	n := 0
	for p := range after {
		if _, old := before[p]; old {
			continue
		}
		n++
		f, err := os.Open(strings.TrimPrefix(p, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range pf.Schema().Fields() {
			want, ok := sch.FindFieldByName(field.Name())
			if !ok {
				t.Errorf("%s: column %s is not in the table's schema", p, field.Name())
				continue
			}
			if got := field.ID(); got != want.ID {
				t.Errorf("%s: column %s has field id %d, want %d", p, field.Name(), got, want.ID)
			}
		}
		f.Close()
	}
	if n == 0 {
		t.Error("the compaction wrote no file")
	}
}

// A streaming writer leaves a manifest per commit, and every scan plan
// reads them all: compaction ends by merging many small ones, in a
// snapshot that changes no data file.
func TestCompactMergesAnIcebergTablesSmallManifests(t *testing.T) {
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 24, RowsPerAppend: 20, Seed: 17})
	before := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	n := dataManifests(t, tb.Load(t))
	if n < 16 {
		t.Fatalf("the test table has %d data manifests", n)
	}
	// No partition has enough small files: only the manifests change.
	sum := summaryOf(t, mustSluice(t, "--json", "compact", tb.URL(), "--min-input-files", "1000"))
	if note, _ := sum["checkpoint"].(string); !strings.Contains(note, "data manifests merged into") {
		t.Errorf("summary: checkpoint %q; want the manifests merged", sum["checkpoint"])
	}
	if got := dataManifests(t, tb.Load(t)); got >= n/4 {
		t.Errorf("%d data manifests after, %d before", got, n)
	}
	after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	if len(after) != len(before)+1 {
		t.Fatalf("%d snapshots after, %d before: want one more", len(after), len(before))
	}
	sameSnapshotsThen(t, before, after)
	if a := after[len(after)-1]; a.DataFiles != before[len(before)-1].DataFiles {
		t.Errorf("the manifests' snapshot holds %d data files, the one before %d", a.DataFiles, before[len(before)-1].DataFiles)
	}
}

// racingTable wraps an Iceberg table being compacted: before its first
// commit, a writer deletes rows of one of the commit's inputs.
type racingTable struct {
	*iceberg.Maintained
	tb      *icebergtest.Table
	once    sync.Once
	victims []string
	errs    []error
}

func (r *racingTable) Commit(ctx context.Context, c catalog.Change) (*catalog.Manifest, error) {
	r.once.Do(func() {
		victim := r.Maintained.FullPath(c.Remove[0].Path)
		r.victims = append(r.victims, victim)
		if err := r.tb.DeleteSomeRowsOf(ctx, victim); err != nil {
			r.errs = append(r.errs, err)
		}
	})
	m, err := r.Maintained.Commit(ctx, c)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	return m, err
}

func TestCompactAnIcebergTableBesideAWriter(t *testing.T) {
	ctx := context.Background()
	tb := icebergtest.Write(t, icebergtest.Options{Dir: t.TempDir(), Appends: 12, RowsPerAppend: 200, Seed: 7})
	stop := make(chan struct{})
	var appended atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	var appendErr error
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if err := tb.Append(ctx, 50); err != nil {
				appendErr = err
				return
			}
			appended.Add(50)
		}
	}()
	before := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))

	m, err := iceberg.Open(ctx, tb.URL(), iceberg.MaintainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rt := &racingTable{Maintained: m, tb: tb}
	res, err := compact.Run(ctx, rt, compact.Options{Plan: compact.PlanOptions{MinInputFiles: 2}, MaxCommits: 4, Workers: 2})
	time.Sleep(500 * time.Millisecond) // let the writer commit after the compaction too
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if appendErr != nil {
		t.Fatalf("the writer beside the compaction failed: %v", appendErr)
	}
	if len(res.Failed) != 0 {
		t.Fatalf("partitions failed: %v", res.Failed)
	}
	if len(res.Dropped) == 0 || len(rt.errs) == 0 || !errors.Is(rt.errs[0], catalog.ErrConflict) {
		t.Fatalf("the batch whose input gained deletes was not dropped: dropped %v, errors %v", res.Dropped, rt.errs)
	}
	if len(res.Versions) == 0 {
		t.Fatalf("no other batch committed: dropped %v, errors %v", res.Dropped, rt.errs)
	}
	after := icebergtest.SnapshotRows(t, tb.MetadataLocation(t))
	// Nothing lost: the newest snapshot holds what the fixture wrote and
	// the writer appended, less the rows the racing delete removed.
	want := tb.Rows()
	if got := after[len(after)-1].Rows; got != want {
		t.Errorf("the table holds %d rows, the writers wrote %d (less their deletes)", got, want)
	}
	if appended.Load() == 0 {
		t.Error("the writer appended nothing during the compaction")
	}
	_ = before
}
