package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/testenv"
)

// A plan written once is done by four workers at once, each starting on
// its own shard and then taking what is left, and committed by two
// committers at once: every unit is committed exactly once, the rows are
// the same, and committing again changes nothing.
func TestWorkersShareAPlanAndCommitEachUnitOnce(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			tbl := smallFileTable(t, testenv.Location(t, kind), 6, 12, 100)
			defer tbl.Close()
			before := tableRows(t, tbl)
			plan, err := compact.PlanWork(ctx, tbl, compact.PlanOptions{TargetFileSize: 32 << 10, MaxBinBytes: 6 * 32 << 10}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Units) < 6 || plan.ID == "" {
				t.Fatalf("plan %q has %d units; want one or more per partition", plan.ID, len(plan.Units))
			}
			const workers = 4
			results := make([]compact.WorkerResult, workers)
			var wg sync.WaitGroup
			for i := range workers {
				wg.Go(func() {
					r, err := compact.Work(ctx, tbl, "", compact.WorkerOptions{Name: fmt.Sprint("w", i), Shard: i, Shards: workers, LeaseTTL: 3 * time.Second})
					if err != nil {
						t.Errorf("worker %d: %v", i, err)
					}
					results[i] = r
				})
			}
			wg.Wait()
			var done []string
			for _, r := range results {
				if r.PlanID != plan.ID {
					t.Errorf("a worker did plan %q; want the newest open one, %q", r.PlanID, plan.ID)
				}
				done = append(done, r.Units...)
			}
			slices.Sort(done)
			if len(done) != len(plan.Units) || len(slices.Compact(slices.Clone(done))) != len(done) {
				t.Fatalf("workers recorded units %v; want each of the %d once", done, len(plan.Units))
			}
			commits := make([]compact.CommitResult, 2)
			for i := range commits {
				wg.Go(func() {
					r, err := compact.CommitWork(ctx, tbl, plan.ID, compact.CommitOptions{MaxCommits: 3, RunID: fmt.Sprint("commit-", i)})
					if err != nil {
						t.Errorf("committer %d: %v", i, err)
					}
					commits[i] = r
				})
			}
			wg.Wait()
			var committed []string
			for _, c := range commits {
				committed = append(committed, c.Committed...)
				if len(c.Dropped) > 0 || len(c.Pending) > 0 || !c.Done {
					t.Errorf("committer: dropped %v pending %v done %v; want none, none, true", c.Dropped, c.Pending, c.Done)
				}
			}
			slices.Sort(committed)
			if !slices.Equal(committed, done) {
				t.Fatalf("committed %v between the two committers; want every unit once: %v", committed, done)
			}
			if after := tableRows(t, tbl); !slices.Equal(before, after) {
				t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
			}
			again, err := compact.CommitWork(ctx, tbl, plan.ID, compact.CommitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Committed) != 0 || len(again.Already) != len(plan.Units) || len(again.Versions) != 0 {
				t.Fatalf("a third commit: committed %v, already %d, versions %v; want nothing new", again.Committed, len(again.Already), again.Versions)
			}
			if _, err := compact.ReadPlan(ctx, tbl.Store(), ""); !errors.Is(err, compact.ErrNoPlan) {
				t.Fatalf("after the last commit, the newest open plan: %v; want ErrNoPlan", err)
			}
		})
	}
}

// A unit whose claim a dead worker left is taken over once the claim has
// stayed unchanged for a lease, and done.
func TestDeadWorkersUnitIsTakenOver(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, t.TempDir(), 2, 8, 100)
	defer tbl.Close()
	plan, err := compact.PlanWork(ctx, tbl, compact.PlanOptions{TargetFileSize: 32 << 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dead := plan.Units[0].ID
	claim := fmt.Sprintf(`{"unit":%q,"worker":"dead","token":"x","attempt":1,"renewed":"2026-01-01T00:00:00Z","lease_ttl_seconds":1}`, dead)
	key := "_sluice/work/" + plan.ID + "/claims/" + dead + ".json"
	if _, err := tbl.Store().Put(ctx, key, strings.NewReader(claim), int64(len(claim)), cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	r, err := compact.Work(ctx, tbl, plan.ID, compact.WorkerOptions{Name: "alive", LeaseTTL: 900 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Units) != len(plan.Units) || r.Stolen != 1 || r.WaitedSeconds == 0 {
		t.Fatalf("worker did %v, stole %d, waited %.1f s; want every unit, one stolen after a wait", r.Units, r.Stolen, r.WaitedSeconds)
	}
	rc, _, err := tbl.Store().Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	var c struct {
		Worker  string `json:"worker"`
		Attempt int    `json:"attempt"`
	}
	if err := json.Unmarshal(data, &c); err != nil || c.Worker != "alive" || c.Attempt != 2 {
		t.Fatalf("claim after the takeover: %s (%v); want worker alive, attempt 2", data, err)
	}
}

// A unit whose inputs a concurrent compaction replaced is dropped at
// commit, not committed over them: the rows stay, and the dropped unit's
// outputs, which no version references, are vacuum's.
func TestUnitWhoseInputsWereReplacedIsDropped(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, t.TempDir(), 3, 10, 100)
	defer tbl.Close()
	before := tableRows(t, tbl)
	plan, err := compact.PlanWork(ctx, tbl, compact.PlanOptions{TargetFileSize: 32 << 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compact.Work(ctx, tbl, plan.ID, compact.WorkerOptions{LeaseTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	// Meanwhile a one-process compaction of the first partition.
	first := plan.Units[0].Partition
	if _, err := compact.Run(ctx, tbl, compact.Options{Plan: compact.PlanOptions{TargetFileSize: 32 << 10, Partitions: []string{first}}}); err != nil {
		t.Fatal(err)
	}
	res, err := compact.CommitWork(ctx, tbl, plan.ID, compact.CommitOptions{MaxCommits: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, u := range plan.Units {
		if u.Partition == first {
			want = append(want, u.ID)
		}
	}
	if !slices.Equal(res.Dropped, want) || len(res.Committed) != len(plan.Units)-len(want) || !res.Done {
		t.Fatalf("dropped %v, committed %v, done %v; want %v dropped and the rest committed", res.Dropped, res.Committed, res.Done, want)
	}
	if after := tableRows(t, tbl); !slices.Equal(before, after) {
		t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
	}
	var orphans []string
	for _, id := range want {
		rc, _, err := tbl.Store().Get(ctx, "_sluice/work/"+plan.ID+"/results/"+id+".json")
		if err != nil {
			t.Fatal(err)
		}
		var r compact.UnitResult
		err = json.NewDecoder(rc).Decode(&r)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Outputs {
			orphans = append(orphans, f.Path)
		}
	}
	if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range orphans {
		if _, _, err := tbl.Store().Get(ctx, p); !errors.Is(err, cloud.ErrNotFound) {
			t.Errorf("dropped output %s after vacuum: %v; want it gone", p, err)
		}
	}
	if after := tableRows(t, tbl); !slices.Equal(before, after) {
		t.Fatalf("rows changed by vacuum: %d before, %d after", len(before), len(after))
	}
}
