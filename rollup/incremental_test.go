package rollup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/rollup"
)

// compactPartition rewrites a partition's files as one, as compaction
// does: the same rows, committed as no data change.
func compactPartition(t *testing.T, tb *catalog.Table, partition string) {
	t.Helper()
	ctx := context.Background()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var old []catalog.DataFile
	var rows [][]any
	for _, f := range files {
		if f.Partition != partition {
			continue
		}
		r, err := pqio.ReadParquetRows(ctx, tb.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		old, rows = append(old, f), append(rows, r...)
	}
	if len(old) < 2 {
		t.Fatalf("partition %s has %d files, want at least 2 to compact", partition, len(old))
	}
	add, err := tb.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, catalog.Change{Operation: "compact", RunID: "test", Add: add, Remove: old, DataChange: false}); err != nil {
		t.Fatal(err)
	}
}

// A compaction of the source changes no data: the rerun reads nothing
// and commits nothing. A new day is then rolled up alone, from the
// stored totals of the day before.
func TestRollupSkipsCompactionsAndAddsANewDay(t *testing.T) {
	dir := t.TempDir()
	src, snap, evs := dataSet(t, dir)
	tb, err := catalog.Open(context.Background(), src, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	appendEvents(t, tb, evs[:100]) // a second file in some partitions
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	first := run(t, out, o)
	compactPartition(t, tb, "date="+fmt.Sprint(evs[0].ts.UTC().Format(time.DateOnly)))
	if res := run(t, out, o); res.Version != 0 || res.EventsRead != 0 {
		t.Fatalf("after a compaction: %+v, want nothing read nor committed", res)
	}

	var day31 []event
	for a := int64(1); a <= 1200; a += 3 {
		day31 = append(day31, event{a: a, b: "us", ts: day(31).Add(time.Hour), v: 1})
	}
	appendEvents(t, tb, day31)
	res := run(t, out, o)
	if res.Full || res.First != day(31).Format(time.DateOnly) || res.PartitionsReplaced != 0 || res.PartitionsWritten != 1 ||
		res.CellsWritten != int64(first.Keys) || res.EventsRead != int64(len(day31)) {
		t.Fatalf("day 31: %+v, want one new partition of %d cells from %d events", res, first.Keys, len(day31))
	}
	sameRows(t, "after day 31", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
}

// A rollback of the source is restated: a full recompute, said.
func TestRollupSourceRollbackRecomputes(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	tb, err := catalog.Open(context.Background(), src, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	appendEvents(t, tb, []event{{a: 5, b: "eu", ts: day(9), v: 100}})
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	run(t, out, o)
	if _, err := tb.Rollback(context.Background(), 2, "test"); err != nil {
		t.Fatal(err)
	}
	res := run(t, out, o)
	if !res.Full || !strings.Contains(res.Reason, "rolled back") {
		t.Fatalf("after a source rollback: %+v, want a full recompute saying so", res)
	}
	sameRows(t, "after a rollback", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
}

// tableRows reads a table's rows in Go, sorted, for comparisons too many
// to run through DuckDB.
func tableRows(t *testing.T, loc string) []string {
	t.Helper()
	ctx := context.Background()
	tb, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		rows, err := pqio.ReadParquetRows(ctx, tb.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprint(r))
		}
	}
	slices.Sort(out)
	return out
}

// Two runs at once on one output never double-count: the loser of the
// commit race recomputes on the winner's table. 20 rounds of late events.
func TestRollupConcurrentRunsEqualOne(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "events")
	tb := newEvents(t, src)
	r := rand.New(rand.NewPCG(3, 4))
	gen := func(n int) []event {
		var evs []event
		for range n {
			evs = append(evs, event{a: int64(1 + r.IntN(40)), b: regions[r.IntN(2)],
				ts: day(1 + r.IntN(12)).Add(time.Duration(r.IntN(86400)) * time.Second), v: int32(r.IntN(5) - 1)})
		}
		return evs
	}
	appendEvents(t, tb, gen(300))
	snap := filepath.Join(dir, "snapshot.parquet")
	var snapRows [][]any
	for a := int64(1); a <= 30; a++ {
		snapRows = append(snapRows, []any{a, "eu", day0, a})
	}
	writeSnapshot(t, snap, snapshotSchema, snapRows)
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	for round := range 20 {
		if round > 0 {
			appendEvents(t, tb, gen(20))
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := catalog.Open(context.Background(), out, catalog.Options{})
				if err != nil {
					errs[i] = err
					return
				}
				defer h.Close()
				_, errs[i] = rollup.Run(context.Background(), h, o)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		full := filepath.Join(dir, fmt.Sprintf("full%d", round))
		fo := o
		fo.Full = true
		run(t, full, fo)
		if got, want := tableRows(t, out), tableRows(t, full); !slices.Equal(got, want) {
			t.Fatalf("round %d: two runs at once gave %d rows unlike a --full run's %d", round, len(got), len(want))
		}
	}
}

// The source named another way (a file:// URL of the same folder) is the
// same source: a rerun with nothing new commits nothing.
func TestRollupSourceSpelledAnotherWayIsTheSame(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	out := filepath.Join(dir, "rollup")
	run(t, out, options(t, src, snap))
	o := options(t, src, snap)
	o.Source = "file://" + filepath.ToSlash(src) + "/"
	if res := run(t, out, o); res.Version != 0 || res.Full {
		t.Fatalf("the source as %s: %+v, want nothing committed", o.Source, res)
	}
}
