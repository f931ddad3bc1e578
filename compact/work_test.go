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

// Pods of one Job plan under the Job's name: the first planner writes the
// plan and every other gets that same plan back; a worker started before
// it waits for it; a named plan with nothing to do is still written, so
// its waiters finish; and the manifest's record of committed units says
// when the plan was made, so that old entries age out.
func TestNamedPlanIsOneForEveryPod(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, testenv.Location(t, testenv.Local), 2, 8, 50)
	defer tbl.Close()
	if _, _, err := compact.PlanWorkNamed(ctx, tbl, compact.PlanOptions{}, "job/../x", time.Now()); !errors.Is(err, compact.ErrBadPlanID) {
		t.Fatalf("a plan id with a slash: %v; want ErrBadPlanID", err)
	}
	waited := make(chan *compact.WorkPlan, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		wp, err := compact.WaitPlan(wctx, tbl.Store(), "nightly-29384756", 20*time.Millisecond)
		if err != nil {
			t.Errorf("waiting for the plan: %v", err)
		}
		waited <- wp
	}()
	opts := compact.PlanOptions{TargetFileSize: 32 << 10}
	plans := make([]*compact.WorkPlan, 3)
	created := make([]bool, 3)
	var wg sync.WaitGroup
	for i := range plans {
		wg.Go(func() {
			var err error
			if plans[i], created[i], err = compact.PlanWorkNamed(ctx, tbl, opts, "nightly-29384756", time.Now()); err != nil {
				t.Errorf("planner %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	wrote := 0
	for i, p := range plans {
		if created[i] {
			wrote++
		}
		if p.ID != "nightly-29384756" || p.Created != plans[0].Created || len(p.Units) != len(plans[0].Units) {
			t.Errorf("planner %d got plan %s made %s with %d units; want every planner to get the one plan", i, p.ID, p.Created, len(p.Units))
		}
	}
	if wrote != 1 || len(plans[0].Units) == 0 {
		t.Fatalf("%d planners wrote the plan (%d units); want exactly one, with units", wrote, len(plans[0].Units))
	}
	if wp := <-waited; wp == nil || wp.ID != plans[0].ID {
		t.Fatalf("the waiting worker got %v; want the plan", wp)
	}
	if _, err := compact.Work(ctx, tbl, "nightly-29384756", compact.WorkerOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := compact.CommitWork(ctx, tbl, "nightly-29384756", compact.CommitOptions{})
	if err != nil || !c.Done || len(c.Committed) != len(plans[0].Units) {
		t.Fatalf("commit: %+v, %v; want every unit committed and the plan done", c, err)
	}
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]struct {
		Created time.Time `json:"created"`
		Units   []string  `json:"units"`
	}
	if err := json.Unmarshal(m.Checkpoints[compact.WorkCheckpoint], &cp); err != nil {
		t.Fatalf("checkpoint %s: %v", compact.WorkCheckpoint, err)
	}
	if e := cp["nightly-29384756"]; !e.Created.Equal(plans[0].Created) || len(e.Units) != len(plans[0].Units) {
		t.Errorf("checkpoint entry %+v; want the plan's time and its %d units", e, len(plans[0].Units))
	}

	// Nothing left to compact: the next Job's plan is written, empty, and
	// its workers and committer finish at once.
	empty, made, err := compact.PlanWorkNamed(ctx, tbl, opts, "nightly-29384757", time.Now())
	if err != nil || !made || len(empty.Units) != 0 {
		t.Fatalf("plan with nothing to do: %+v made %v, %v; want it written with no units", empty, made, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r, err := compact.Work(wctx, tbl, "nightly-29384757", compact.WorkerOptions{}); err != nil || len(r.Units) != 0 {
		t.Fatalf("worker on an empty plan: %+v, %v", r, err)
	}
	if c, err := compact.CommitWork(wctx, tbl, "nightly-29384757", compact.CommitOptions{}); err != nil || !c.Done {
		t.Fatalf("commit of an empty plan: %+v, %v; want done", c, err)
	}
}

// Rollup plans live beside compaction plans, under
// _sluice/work/rollup-<id>/: a compaction worker or committer given no
// plan id takes the newest open compaction plan, never a rollup plan,
// however new, and no compaction plan may be named like a rollup plan's
// folder.
func TestNewestOpenPlanIsACompactionPlan(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, t.TempDir(), 2, 8, 50)
	defer tbl.Close()
	plan, err := compact.PlanWork(ctx, tbl, compact.PlanOptions{TargetFileSize: 32 << 10}, time.Now())
	if err != nil || len(plan.Units) == 0 {
		t.Fatalf("plan: %+v, %v; want units", plan, err)
	}
	// An open rollup plan, newer than the compaction plan by its name.
	rollupPlan := `{"plan_id":"nightly-9","created":"2099-01-01T00:00:00Z","shards":2,"empty":false}`
	if _, err := tbl.Store().Put(ctx, "_sluice/work/rollup-nightly-9/plan.json", strings.NewReader(rollupPlan),
		int64(len(rollupPlan)), cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	got, err := compact.ReadPlan(ctx, tbl.Store(), "")
	if err != nil || got.ID != plan.ID {
		t.Fatalf("newest open plan: %v, %v; want the compaction plan %s", got, err, plan.ID)
	}
	if _, err := compact.ReadPlan(ctx, tbl.Store(), "rollup-nightly-9"); !errors.Is(err, compact.ErrNoPlan) {
		t.Errorf("reading the rollup plan's folder as a compaction plan: %v; want ErrNoPlan", err)
	}
	if _, _, err := compact.PlanWorkNamed(ctx, tbl, compact.PlanOptions{}, "rollup-nightly-9", time.Now()); !errors.Is(err, compact.ErrBadPlanID) {
		t.Errorf("a compaction plan named like a rollup plan's folder: %v; want ErrBadPlanID", err)
	}
	if r, err := compact.Work(ctx, tbl, "", compact.WorkerOptions{}); err != nil || r.PlanID != plan.ID {
		t.Fatalf("worker: %+v, %v; want it on plan %s", r, err, plan.ID)
	}
	c, err := compact.CommitWork(ctx, tbl, "", compact.CommitOptions{})
	if err != nil || c.PlanID != plan.ID || !c.Done {
		t.Fatalf("commit: %+v, %v; want plan %s committed and done", c, err, plan.ID)
	}
	if got, err := compact.ReadPlan(ctx, tbl.Store(), ""); !errors.Is(err, compact.ErrNoPlan) {
		t.Fatalf("with only the rollup plan open: %v, %v; want ErrNoPlan", got, err)
	}
}

// onePartitionAtATime is a sluice table whose whole file list may not be
// read: planning must go partition by partition. It records the most
// files one read returned.
type onePartitionAtATime struct {
	*catalog.Table
	most int
}

func (t *onePartitionAtATime) Files(context.Context, *catalog.Manifest) ([]catalog.DataFile, error) {
	return nil, errors.New("the whole file list was read")
}

func (t *onePartitionAtATime) PartitionFiles(ctx context.Context, ref catalog.PartitionRef) ([]catalog.DataFile, error) {
	fs, err := t.Table.PartitionFiles(ctx, ref)
	t.most = max(t.most, len(fs))
	return fs, err
}

// A work plan holds one partition's file list at a time, never the
// table's, and plans exactly what PlanCompaction plans from the whole
// list: the same units, inputs and outputs, a partition asked for that
// the table lacks skipped the same way.
func TestWorkPlanReadsOnePartitionAtATime(t *testing.T) {
	ctx := context.Background()
	tbl := smallFileTable(t, testenv.Location(t, testenv.Local), 4, 12, 50)
	defer tbl.Close()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range [][]string{nil, {"date=2024-03-02", "date=1999-12-31"}} {
		o := compact.PlanOptions{TargetFileSize: 16 << 10, Partitions: parts}
		want, err := compact.PlanCompaction(files, o)
		if err != nil {
			t.Fatal(err)
		}
		pt := &onePartitionAtATime{Table: tbl}
		wp, err := compact.PlanWork(ctx, pt, o, time.Now())
		if err != nil {
			t.Fatalf("partitions %v: %v", parts, err)
		}
		var got, wantBins []string
		for _, u := range wp.Units {
			got = append(got, fmt.Sprint(u.Partition, u.Outputs, u.Bytes, len(u.Inputs), u.Inputs[0].Path))
		}
		for _, b := range want.Bins() {
			wantBins = append(wantBins, fmt.Sprint(b.Partition, b.Outputs, b.Bytes, len(b.Inputs), b.Inputs[0].Path))
		}
		if len(got) == 0 || !slices.Equal(got, wantBins) {
			t.Fatalf("partitions %v: planned a partition at a time\n%v\nwant, from the whole list\n%v", parts, got, wantBins)
		}
		if pt.most == 0 || pt.most >= len(files) {
			t.Fatalf("partitions %v: a read returned %d files of the table's %d; want one partition's", parts, pt.most, len(files))
		}
	}
}
