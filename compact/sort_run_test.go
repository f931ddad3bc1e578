package compact_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/pqio"
	"golang.org/x/sync/errgroup"
)

// partitionKeys reads the list_id of every row of each live file of a
// partition, the files in the order of their first key.
func partitionKeys(t *testing.T, tbl *catalog.Table) map[string][][]int64 {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]int64{}
	for _, f := range files {
		st, key, err := tbl.DataFileStore(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pqio.ReadParquetRows(ctx, st, key, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		var keys []int64
		for _, r := range rows {
			keys = append(keys, r[1].(int64))
		}
		out[f.Partition] = append(out[f.Partition], keys)
	}
	for _, fs := range out {
		slices.SortFunc(fs, func(a, b []int64) int { return int(a[0] - b[0]) })
	}
	return out
}

// TestTablePropertyOrdersCompactions: a table whose compact.sort_by
// property names list_id is compacted sorted by it unless the run says
// otherwise: every partition's files in order, each after the last.
func TestTablePropertyOrdersCompactions(t *testing.T) {
	ctx := context.Background()
	const target = 8 << 10
	for _, tc := range []struct {
		name   string
		order  *compact.Ordering
		sorted bool
	}{
		{"the property applies when the run names no order", nil, true},
		{"a run's empty order turns it off", &compact.Ordering{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := smallFileTable(t, t.TempDir(), 2, 16, 500)
			defer tbl.Close()
			if _, err := tbl.Commit(ctx, catalog.Change{Operation: "set properties", Properties: map[string]string{compact.PropSortBy: "list_id"}}); err != nil {
				t.Fatal(err)
			}
			before := tableRows(t, tbl)
			res, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: target, MaxBinBytes: 6 * target}, Order: tc.order})
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			if bins := len(res.Plan.Bins()); bins <= 2 {
				t.Fatalf("the plan has %d bins for 2 partitions; want more, so that a partition's bins are sorted as one", bins)
			}
			if !slices.Equal(before, tableRows(t, tbl)) {
				t.Fatal("the compaction changed the rows")
			}
			for p, files := range partitionKeys(t, tbl) {
				if len(files) < 2 {
					t.Fatalf("%s: %d files; want several, of bins planned apart", p, len(files))
				}
				inOrder := true
				last := int64(-1)
				for _, keys := range files {
					for _, k := range keys {
						// Files cover disjoint ranges: a key never repeats
						// across a file boundary, nor goes back.
						inOrder = inOrder && k >= last
						last = k
					}
					last++
				}
				if inOrder != tc.sorted {
					t.Fatalf("%s: files sorted by list_id and disjoint: %v, want %v", p, inOrder, tc.sorted)
				}
			}
		})
	}
}

// TestSpreadCompactionFollowsTheTablesOrder: a work plan of a table whose
// compact.sort_by names list_id records that order and makes one unit
// per partition; two workers rewrite the units sorted, and after the
// commit every partition's files are in order, each after the last, with
// the rows unchanged.
func TestSpreadCompactionFollowsTheTablesOrder(t *testing.T) {
	ctx := context.Background()
	const target = 8 << 10
	tbl := smallFileTable(t, t.TempDir(), 3, 16, 500)
	defer tbl.Close()
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "set properties", Properties: map[string]string{compact.PropSortBy: "list_id"}}); err != nil {
		t.Fatal(err)
	}
	before := tableRows(t, tbl)
	plan, err := compact.PlanWork(ctx, tbl, compact.PlanOptions{TargetFileSize: target, MaxBinBytes: 6 * target}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if plan.Order == nil || plan.Order.String() != (compact.Ordering{Columns: []string{"list_id"}}).String() || len(plan.Units) != 3 {
		t.Fatalf("the plan's order %v and %d units; want list_id and one unit per partition", plan.Order, len(plan.Units))
	}
	var g errgroup.Group
	for i := range 2 {
		g.Go(func() error {
			_, err := compact.Work(ctx, tbl, plan.ID, compact.WorkerOptions{Name: fmt.Sprint("w", i), Shard: i, Shards: 2})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if r, err := compact.CommitWork(ctx, tbl, plan.ID, compact.CommitOptions{}); err != nil || !r.Done || len(r.Committed) != 3 {
		t.Fatalf("commit: %+v, %v; want the 3 units committed", r, err)
	}
	if !slices.Equal(before, tableRows(t, tbl)) {
		t.Fatal("the spread compaction changed the rows")
	}
	for p, files := range partitionKeys(t, tbl) {
		if len(files) < 2 {
			t.Fatalf("%s: %d files; want several", p, len(files))
		}
		last := int64(-1)
		for _, keys := range files {
			for _, k := range keys {
				if k < last {
					t.Fatalf("%s: list_id %d after %d; want each file sorted and after the last", p, k, last)
				}
				last = k
			}
			last++
		}
	}
}
