package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// compactedTable makes a table of four versions: create, two appends of
// ten rows each (files A and B), and a compaction of both into one file
// C with the same rows. It returns the table and A, B, C's locations.
func compactedTable(t *testing.T, ctx context.Context, loc string) (*catalog.Table, []string, string) {
	t.Helper()
	tbl, m := newTable(t, ctx, loc, "id:int64,ts:timestamp", "day(ts)")
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	rows := func(from, n int64) [][]any {
		var out [][]any
		for i := from; i < from+n; i++ {
			out = append(out, []any{i, day.Add(time.Duration(i) * time.Minute)})
		}
		return out
	}
	var inputs []catalog.DataFile
	for _, from := range []int64{0, 10} {
		var files []catalog.DataFile
		m, files = appendRows(t, ctx, tbl, m, rows(from, 10))
		inputs = append(inputs, files...)
	}
	merged, err := tbl.WriteFiles(ctx, m, rows(0, 20))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 2 || len(merged) != 1 {
		t.Fatalf("fixture: %d files merged into %d", len(inputs), len(merged))
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "compact", Add: merged, Remove: inputs}); err != nil {
		t.Fatal(err)
	}
	return tbl, []string{tbl.FileURL(inputs[0]), tbl.FileURL(inputs[1])}, tbl.FileURL(merged[0])
}

// pause makes the next clock reading later than the last one by more
// than the millisecond Iceberg snapshot times are counted in.
func pause() { time.Sleep(20 * time.Millisecond) }

// TestIcebergVacuumKeepsRetainedSnapshots: a vacuum whose retention has
// passed every version but the latest (a compaction) still keeps the
// replaced files while the mirror's snapshots of the older versions are
// within the retention, so icebird reads every snapshot; once those
// snapshots are past it too, vacuum expires them in the mirror (the
// current one stays) and deletes the files, and icebird reads the
// mirror's one snapshot as DuckDB reads `sluice files`.
func TestIcebergVacuumKeepsRetainedSnapshots(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, replaced, merged := compactedTable(t, ctx, filepath.Join(dir, "events"))
	cat := sqliteCatalog(t, ctx, dir)
	opts := iceberg.Options{Namespace: "lake", Name: "events"}
	pause()
	beforeSync := time.Now() // after every commit and file, before every snapshot
	pause()
	if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
		t.Fatal(err)
	}
	const retain = 48 * time.Hour
	vacuumAt := func(cutoff time.Time, keep bool, dryRun bool) (catalog.VacuumResult, iceberg.RetainResult) {
		t.Helper()
		var rr iceberg.RetainResult
		o := catalog.VacuumOptions{Retain: retain, Now: cutoff.Add(retain), DryRun: dryRun}
		if keep {
			o.Keep = iceberg.VacuumKeep(tbl, cat, opts, dryRun, &rr)
		}
		res, err := tbl.Vacuum(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return res, rr
	}

	// Without the mirror's files to keep, the replaced files would go:
	// only the latest version is within the retention.
	if res, _ := vacuumAt(beforeSync, false, true); !sameSet(res.Deleted, replaced) {
		t.Fatalf("dry run without the mirror would delete %v, want the replaced files %v", res.Deleted, replaced)
	}
	res, rr := vacuumAt(beforeSync, true, false)
	if len(res.Deleted) != 0 || rr.Expired != 0 || rr.Retained != 4 {
		t.Fatalf("vacuum while every snapshot is retained: deleted %v, expired %d, retained %d snapshots", res.Deleted, rr.Expired, rr.Retained)
	}
	for _, f := range replaced {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a file a retained snapshot references is gone: %v", err)
		}
	}
	checkMirror(t, ctx, tbl, rr.MetadataLocation, []string{"append", "append", "append", "replace"})

	pause()
	afterSync := time.Now()
	if res, rr := vacuumAt(afterSync, true, true); !sameSet(res.Deleted, replaced) || rr.Expired != 3 {
		t.Fatalf("dry run past every snapshot but the current: would delete %v and expire %d snapshots, want %v and 3", res.Deleted, rr.Expired, replaced)
	}
	res, rr = vacuumAt(afterSync, true, false)
	if !sameSet(res.Deleted, replaced) || rr.Expired != 3 || rr.Retained != 1 {
		t.Fatalf("vacuum past every snapshot but the current: deleted %v, expired %d, retained %d; want %v deleted, 3 expired", res.Deleted, rr.Expired, rr.Retained, replaced)
	}
	snaps := icebirdSnapshots(t, rr.MetadataLocation)
	if len(snaps) != 1 || snaps[0].Summary[iceberg.PropVersion] != "4" {
		t.Fatalf("after the expiry icebird sees %d snapshots (%+v), want version 4's only", len(snaps), snaps)
	}
	want := duckFiles(t, []string{merged})
	if len(snaps[0].Paths) != 1 || snaps[0].Rows != 20 || snaps[0].Duck != want {
		t.Errorf("icebird reads %v: %d rows, %+v; sluice files: %s, %+v", snaps[0].Paths, snaps[0].Rows, snaps[0].Duck, merged, want)
	}
	// A later sync goes on from the current snapshot.
	if again, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil || again.Mirrored != 0 || again.Version != 4 {
		t.Fatalf("sync after the expiry: %+v, %v", again, err)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
