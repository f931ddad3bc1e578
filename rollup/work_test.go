package rollup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/rollup"
)

// workEvents are events of lists 1..200 in both regions from day -1
// through day 8, lists above 160 not in the snapshot: a small data set of
// few days, so that a sharded run writes few files.
func workEvents(r *rand.Rand) []event {
	var out []event
	for a := int64(1); a <= 200; a++ {
		for _, b := range regions {
			for range 1 + r.IntN(4) {
				e := event{a: a, b: b, ts: day(r.IntN(10) - 1).Add(time.Duration(r.IntN(86400)) * time.Second), v: int32(r.IntN(9) - 3)}
				if r.IntN(4) != 0 {
					w := int64(r.IntN(1000))
					e.w = &w
				}
				out = append(out, e)
			}
		}
	}
	return out
}

// workInputs builds, on a store of kind, the events table of workEvents
// and its snapshot, and returns their locations and a folder for outputs.
func workInputs(t *testing.T, kind string) (src, snap, base string) {
	t.Helper()
	base = testenv.Location(t, kind)
	r := rand.New(rand.NewPCG(5, 6))
	src = base + "/events"
	appendEvents(t, newEvents(t, src), workEvents(r))
	snap = base + "/snapshot.parquet"
	s, err := catalog.ParseSchema(snapshotSchema)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloud.Open(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := pqio.WriteParquet(context.Background(), st, "snapshot.parquet", s, snapshotRowsN(r, 192)); err != nil {
		t.Fatal(err)
	}
	return src, snap, base
}

// openOut opens an output table, closed when the test ends.
func openOut(t *testing.T, loc string) *catalog.Table {
	t.Helper()
	tb, err := catalog.Open(context.Background(), loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

// workAll runs shards workers of plan id at once, each on its own handle
// of the output, as separate pods would. A short lease keeps the wait
// of a worker done with its shard for the others short.
func workAll(t *testing.T, loc, id string, shards int) []rollup.WorkerResult {
	t.Helper()
	results := make([]rollup.WorkerResult, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			tb, err := catalog.Open(context.Background(), loc, catalog.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer tb.Close()
			results[i], err = rollup.Work(context.Background(), tb, id, i, shards, rollup.WorkerOptions{Name: fmt.Sprint("w", i), LeaseTTL: 900 * time.Millisecond})
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return results
}

// checkpoint is the rollup checkpoint of the table at loc.
func checkpoint(t *testing.T, loc string) string {
	t.Helper()
	m, err := openOut(t, loc).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(m.Checkpoints["rollup"])
}

// checksum is CommitResult.Checksum of the live rows of the table at loc
// dated from day from (YYYY-MM-DD) on.
func checksum(t *testing.T, loc, from string) string {
	t.Helper()
	ctx := context.Background()
	tb := openOut(t, loc)
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for _, f := range files {
		if f.Partition < "date="+from {
			continue
		}
		r, err := pqio.ReadParquetRows(ctx, tb.Store(), f.Path, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	return fmt.Sprintf("%016x", rollup.RowsChecksum(rows))
}

// shardedRun plans a rollup of out over shards, works it with as many
// workers at once and commits it.
func shardedRun(t *testing.T, out string, o rollup.Options, shards int, id string) (*rollup.WorkPlan, rollup.CommitResult) {
	t.Helper()
	ctx := context.Background()
	tb := openOut(t, out)
	plan, _, err := rollup.PlanWork(ctx, tb, o, shards, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	workAll(t, out, plan.ID, shards)
	cr, err := rollup.CommitWork(ctx, tb, plan.ID, rollup.CommitOptions{RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !cr.Committed || cr.Already || len(cr.Pending) > 0 {
		t.Fatalf("commit of plan %s: %+v; want committed by this call, nothing pending", plan.ID, cr)
	}
	return plan, cr
}

// sameAsOneProcess fails unless the sharded output equals the
// one-process one row for row, by checksum and by checkpoint, and the
// commit's figures are the run's.
func sameAsOneProcess(t *testing.T, what, sharded, single string, cr rollup.CommitResult, res rollup.Result) {
	t.Helper()
	if got, want := tableRows(t, sharded), tableRows(t, single); !slices.Equal(got, want) {
		sameRows(t, what, got, want)
	}
	if got, want := cr.Checksum, checksum(t, single, cr.First); got != want {
		t.Fatalf("%s: checksum of the rows restated %s, the one-process table's %s", what, got, want)
	}
	if got, want := checkpoint(t, sharded), checkpoint(t, single); got != want {
		t.Fatalf("%s: checkpoint %s, the one-process run's %s", what, got, want)
	}
	type figures struct {
		Full                                                 bool
		First, Through                                       string
		Keys, KeysRestated, PartitionsWritten, Replaced      int
		Rows, CellsRestated, Read, Excluded, After, SourceTo int64
	}
	got := figures{cr.Full, cr.First, cr.Through, cr.Keys, cr.KeysRestated, cr.PartitionsWritten, cr.PartitionsReplaced,
		cr.Rows, cr.CellsRestated, cr.EventsRead, cr.EventsExcluded, cr.EventsAfter, cr.SourceTo}
	want := figures{res.Full, res.First, res.Through, res.Keys, res.KeysRestated, res.PartitionsWritten, res.PartitionsReplaced,
		res.CellsWritten, res.CellsRestated, res.EventsRead, res.EventsExcluded, res.EventsAfter, res.SourceTo}
	if got != want || cr.Reason != res.Reason {
		t.Fatalf("%s: sharded %+v (%q), one process %+v (%q)", what, got, cr.Reason, want, res.Reason)
	}
}

// A rollup over four workers at once equals a one-process run: in full,
// then incrementally after late events, then after a late event of a new
// key, which makes the sharded plan fall back to a full recompute as a
// one-process run does. Committing twice commits once, and a plan made
// when the output is up to date is empty.
func TestShardedRollupEqualsOneProcessRun(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			src, snap, base := workInputs(t, kind)
			sharded, single := base+"/sharded", base+"/single"
			o := options(t, src, snap)
			plan, cr := shardedRun(t, sharded, o, 4, "")
			if !plan.Full || plan.Reason != "a new output table" || plan.BaseVersion != 0 || plan.Shards != 4 {
				t.Fatalf("first plan %+v; want a full one, of a new output table, over 4 shards", plan)
			}
			fo := o
			fo.Full = true
			res := run(t, single, fo)
			res.Reason = "a new output table" // the one-process run was given --full
			sameAsOneProcess(t, "full", sharded, single, cr, res)

			again, err := rollup.CommitWork(ctx, openOut(t, sharded), plan.ID, rollup.CommitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := openOut(t, sharded).Latest(ctx); !again.Already || again.Committed || m.Version != cr.Version {
				t.Fatalf("a second commit: %+v, output at version %d; want already committed at version %d", again, m.Version, cr.Version)
			}

			var late []event
			for a := int64(1); a <= 40; a++ {
				late = append(late, event{a: a, b: "eu", ts: day(6).Add(time.Hour), v: 2}, event{a: a + 20, b: "us", ts: day(3), v: -1})
			}
			appendEvents(t, openOut(t, src), late)
			plan, cr = shardedRun(t, sharded, o, 4, "late-1")
			if plan.Full || plan.First != day(3).Format(time.DateOnly) || plan.BaseVersion != cr.Version-1 {
				t.Fatalf("plan after late events %+v; want an incremental one from day 3", plan)
			}
			sameAsOneProcess(t, "late events", sharded, single, cr, run(t, single, o))

			appendEvents(t, openOut(t, src), []event{{a: 5000, b: "eu", ts: day(4), v: 7}})
			plan, cr = shardedRun(t, sharded, o, 4, "new-key")
			if plan.Full || !cr.Full || !strings.Contains(cr.Reason, "does not hold yet") {
				t.Fatalf("a late event of a new key: plan full %v, commit %+v; want an incremental plan committed in full", plan.Full, cr)
			}
			sameAsOneProcess(t, "a new key", sharded, single, cr, run(t, single, o))

			empty, _, err := rollup.PlanWork(ctx, openOut(t, sharded), o, 4, "nothing", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			w, err := rollup.Work(ctx, openOut(t, sharded), empty.ID, 2, 4, rollup.WorkerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := rollup.CommitWork(ctx, openOut(t, sharded), empty.ID, rollup.CommitOptions{})
			if err != nil || !empty.Empty || !w.Empty || !c.Empty || c.Committed {
				t.Fatalf("up to date: plan empty %v, worker %+v, commit %+v (%v); want an empty plan, nothing done", empty.Empty, w, c, err)
			}
		})
	}
}

// cancelOnClaim is a log handler that cancels a worker's context once it
// has claimed a shard: the worker stops as a killed pod does, its claim
// left unrenewed.
type cancelOnClaim struct {
	slog.Handler
	cancel context.CancelFunc
}

func (h cancelOnClaim) Enabled(context.Context, slog.Level) bool { return true }

func (h cancelOnClaim) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "claimed" {
		h.cancel()
	}
	return nil
}

// A worker that dies after claiming its shard leaves it to another, which
// takes it over once the claim has stayed unrenewed for a lease; the
// result is the one-process run's.
func TestShardOfADeadWorkerIsTakenOver(t *testing.T) {
	ctx := context.Background()
	src, snap, base := workInputs(t, testenv.Local)
	out := openOut(t, base+"/sharded")
	o := options(t, src, snap)
	plan, created, err := rollup.PlanWork(ctx, out, o, 2, "job-1", time.Now())
	if err != nil || !created {
		t.Fatalf("planning job-1: %v, written by this call %v; want it written", err, created)
	}
	again, created, err := rollup.PlanWork(ctx, out, o, 2, "job-1", time.Now().Add(time.Hour))
	if err != nil || created || !again.Created.Equal(plan.Created) {
		t.Fatalf("planning job-1 again: %v, written %v, made %v; want the plan made first, %v, not written again", err, created, again.Created, plan.Created)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err = rollup.Work(dctx, out, plan.ID, 1, 2, rollup.WorkerOptions{Name: "dead", LeaseTTL: 900 * time.Millisecond,
		Logger: slog.New(cancelOnClaim{slog.DiscardHandler, cancel})})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the worker that died: %v; want context.Canceled", err)
	}
	if cr, err := rollup.CommitWork(ctx, out, plan.ID, rollup.CommitOptions{}); err != nil || !slices.Equal(cr.Pending, []int{0, 1}) || cr.Committed {
		t.Fatalf("commit before any result: %+v (%v); want shards 0 and 1 pending, nothing committed", cr, err)
	}
	r, err := rollup.Work(ctx, out, plan.ID, 0, 2, rollup.WorkerOptions{Name: "alive", LeaseTTL: 900 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Shards, []int{0, 1}) || r.Stolen != 1 || r.WaitedSeconds == 0 {
		t.Fatalf("worker did shards %v, stole %d, waited %.1f s; want both, one taken over after a wait", r.Shards, r.Stolen, r.WaitedSeconds)
	}
	rc, _, err := out.Store().Get(ctx, "_sluice/work/rollup-job-1/claims/0001.json")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(data), `"worker":"alive"`) || !strings.Contains(string(data), `"attempt":2`) {
		t.Fatalf("claim of shard 1 after the takeover: %s; want worker alive, attempt 2", data)
	}
	cr, err := rollup.CommitWork(ctx, out, plan.ID, rollup.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fo := o
	fo.Full = true
	res := run(t, base+"/single", fo)
	res.Reason = "a new output table"
	sameAsOneProcess(t, "after a takeover", base+"/sharded", base+"/single", cr, res)
}

// A plan whose output another run changed before the commit is stale:
// the commit fails saying so, and the output stays as the other run left
// it.
func TestCommitOfAStalePlanFails(t *testing.T) {
	ctx := context.Background()
	src, snap, base := workInputs(t, testenv.Local)
	loc := base + "/out"
	o := options(t, src, snap)
	run(t, loc, o)
	appendEvents(t, openOut(t, src), []event{{a: 3, b: "eu", ts: day(5), v: 5}})
	out := openOut(t, loc)
	plan, _, err := rollup.PlanWork(ctx, out, o, 3, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	workAll(t, loc, plan.ID, 3)
	other := run(t, loc, o)
	before := tableRows(t, loc)
	_, err = rollup.CommitWork(ctx, out, plan.ID, rollup.CommitOptions{})
	if !errors.Is(err, rollup.ErrPlanStale) {
		t.Fatalf("commit of a stale plan: %v; want ErrPlanStale", err)
	}
	m, err := out.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != other.Version || !slices.Equal(tableRows(t, loc), before) {
		t.Fatalf("after the failed commit the output is at version %d; want %d, unchanged", m.Version, other.Version)
	}
}
