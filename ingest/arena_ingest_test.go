package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/ingest"
)

// Rows are cut from arenas that are reused once the rows are written
// (see ingest's arena.go). A run that hands rows to its writers in many
// batches, some cut in the middle of a block, and drops a failed file's
// rows, writes every row as read, and releases every arena it held.
func TestIngestArenasAreAllReleasedAndRowsIntact(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		budget int64
		failed bool // a file fails before any of its rows is written
	}{
		{"many small batches", 64 << 10, false},
		{"a failed file dropped", 64 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			land := t.TempDir()
			tb := newTable(t, filepath.Join(t.TempDir(), "events"))
			put(t, land, "a.jsonl", events(0, 3000, "2024-01-30"))
			if tc.failed {
				full := gz(t, events(10000, 3000, "2024-01-30"))
				put(t, land, "b.jsonl.gz", full[:len(full)*3/4])
			}
			put(t, land, "c.jsonl", events(3000, 3000, "2024-01-31"))
			before := ingest.LiveArenas()
			res, err := ingest.Run(ctx, tb, land, ingest.Options{MemoryBudget: tc.budget})
			if tc.failed != errors.Is(err, ingest.ErrFilesFailed) || (!tc.failed && err != nil) || res.RowsWritten != 6000 {
				t.Fatalf("%+v, %v", res, err)
			}
			reconcile(t, res)
			if n := ingest.LiveArenas() - before; n != 0 {
				t.Errorf("%d arenas still held after the run", n)
			}
			var ids []int64
			for _, r := range rows(t, tb) {
				id := r[1].(int64)
				if want := fmt.Sprintf("6f1c3b9e-2a4d-4b8e-9c1f-%012d", id); r[0] != want {
					t.Fatalf("row %d: event_id %q, want %q", id, r[0], want)
				}
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, seq(0, 6000)) {
				t.Fatalf("ids: %d rows", len(ids))
			}
		})
	}
}
