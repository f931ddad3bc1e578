package compact_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/faults"
)

// Compaction runs, retried as the scheduler retries them, through a store
// that fails, throttles, times out before and after writes landed,
// truncates and slows reads and misses fresh keys in listings: each
// failure names an injected cause (or, for a truncated read, the file
// and unexpected EOF), the rows never change, every live file
// is there, and vacuum then leaves no orphan.
func TestCompactionUnderSeededStoreFaults(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	clean := smallFileTable(t, loc, 3, 8, 50)
	defer clean.Close()
	before := tableRows(t, clean)
	in := faults.New(faults.Config{Seed: 19, SlowDelay: 1, Rates: map[faults.Kind]float64{
		faults.ServerError: 0.01, faults.Throttle: 0.01, faults.TimeoutBefore: 0.01, faults.TimeoutAfter: 0.15,
		faults.TruncatedRead: 0.01, faults.SlowRead: 0.02, faults.StaleList: 0.2,
	}})
	flaky := catalog.NewTable(loc, in.Store(clean.Store()), catalog.Options{})
	failures := 0
	for run := 0; ; run++ {
		if run == 30 {
			t.Fatalf("30 runs did not finish the compaction; faults %s", in)
		}
		res, err := compact.Run(ctx, flaky, compact.Options{Plan: compact.PlanOptions{MinInputFiles: 2}, MaxCommits: 2, RunID: "c"})
		if err == nil {
			err = res.Err()
		}
		if err == nil && res.Partitions == 0 && len(res.Dropped) == 0 {
			break // nothing left to compact
		}
		if err != nil {
			failures++
			// A truncated body reaches the Parquet reader, which says
			// unexpected EOF (naming the file) without the cause.
			if !errors.Is(err, faults.ErrInjected) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("run %d: %v; want it to wrap the injected cause", run, err)
			}
		}
	}
	t.Logf("faults %s; %d failed runs", in, failures)
	if in.Total() == 0 {
		t.Fatal("no fault was injected")
	}
	in.SetEnabled(false)
	if after := tableRows(t, clean); !slices.Equal(before, after) {
		t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
	}
	if _, err := clean.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true}); err != nil {
		t.Fatal(err)
	}
	m, err := clean.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := clean.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, f := range files {
		live[f.Path] = true
		if _, err := clean.Store().Stat(ctx, f.Path); err != nil {
			t.Errorf("live file %s: %v", f.Path, err)
		}
	}
	if len(files) != 3 {
		t.Errorf("%d live files, want one per day's partition", len(files))
	}
	err = clean.Store().List(ctx, "", func(o cloud.ObjectInfo) error {
		if !strings.HasPrefix(o.Key, "_sluice/") && !live[o.Key] {
			t.Errorf("orphan %s after vacuum", o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
