package rollup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
)

// DefaultLeaseTTL is how long a worker's claim of a shard holds without a
// renewal: another worker takes the shard over once it has seen the claim
// unchanged that long.
const DefaultLeaseTTL = 2 * time.Minute

// WorkerOptions tune a worker.
type WorkerOptions struct {
	// Name identifies the worker in its claims and results (a pod
	// name). Empty: "worker-<shard>".
	Name string
	// LeaseTTL is how long a claim holds unrenewed. Zero:
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Now is the clock written into claims and timing other workers'
	// leases (tests drive it); nil: time.Now.
	Now func() time.Time
	// Logger gets a line per shard; nil: none.
	Logger *slog.Logger
}

func (o WorkerOptions) withDefaults(shard int) WorkerOptions {
	o.LeaseTTL = cmp.Or(o.LeaseTTL, DefaultLeaseTTL)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Name = cmp.Or(o.Name, fmt.Sprintf("worker-%d", shard))
	return o
}

// WorkerResult says what one worker did.
type WorkerResult struct {
	PlanID string `json:"plan_id"`
	// Empty: the plan had nothing to do.
	Empty bool `json:"empty"`
	// Shards this worker computed and recorded; Stolen those of them it
	// took over from a worker whose claim stopped being renewed.
	Shards []int `json:"shards"`
	Stolen int   `json:"stolen"`
	// LostRaces are shards this worker computed whose result another
	// worker recorded first: its files were deleted.
	LostRaces int `json:"lost_races"`
	// Full: the plan's shards are computed in full (the plan said so, or
	// it fell back); FellBack is why this worker made the plan fall back
	// ("" when it did not).
	Full     bool   `json:"full"`
	FellBack string `json:"fell_back,omitempty"`
	// Of the shards this worker recorded: keys, rows and files written.
	Keys          int     `json:"keys"`
	Rows          int64   `json:"rows"`
	Files         int     `json:"files"`
	Bytes         int64   `json:"bytes"`
	EventsRead    int64   `json:"events_read"`
	WaitedSeconds float64 `json:"waited_seconds"`
}

// escalation is full.json: the plan falls back to a full recompute.
type escalation struct {
	Shard  int    `json:"shard"`
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// worker is one Work call's state: the plan's inputs, opened once.
type worker struct {
	out     *catalog.Table
	plan    *WorkPlan
	o       WorkerOptions
	claim   *claim.Claimer
	src     *catalog.Table
	sm, om  *catalog.Manifest
	j       *job
	through int64
	res     WorkerResult
}

// Work computes shards of the plan planID of out (the newest open plan
// when empty) until every shard has a result: shard first (this worker
// is shard of shards, 0-based, which must be the plan's count), then
// the shards of workers that have not started them or whose claim
// stopped being renewed for a lease. A shard's rows are those of the keys
// whose hash modulo shards is its number, computed from the source
// version and the snapshot the plan read, whatever is newer; its files
// are written into the output's store, uncommitted, read back and
// checked, then named in the shard's result, create-only: two workers
// that computed one shard (a slow one and the one that took it over)
// race to record it, and the loser deletes its files.
//
// A shard of an incremental plan that meets a late event of a key the
// output does not hold makes the whole plan fall back to a full
// recompute (as Run would): every worker then computes every shard in
// full, and WorkerResult.Full says so.
func Work(ctx context.Context, out *catalog.Table, planID string, shard, shards int, o WorkerOptions) (WorkerResult, error) {
	o = o.withDefaults(shard)
	plan, err := ReadPlan(ctx, out, planID)
	if err != nil {
		return WorkerResult{}, err
	}
	if plan.Empty {
		return WorkerResult{PlanID: plan.ID, Empty: true}, nil
	}
	if shards != plan.Shards || shard < 0 || shard >= shards {
		return WorkerResult{PlanID: plan.ID}, fmt.Errorf("shard %d/%d: plan %s has %d shards: %w", shard, shards, plan.ID, plan.Shards, ErrShards)
	}
	w, err := newWorker(ctx, out, plan, o)
	if err != nil {
		return WorkerResult{PlanID: plan.ID}, err
	}
	defer w.src.Close()
	for round := 0; ; round++ {
		fallback, err := w.fellBack(ctx)
		if err != nil {
			return w.res, err
		}
		w.res.Full = plan.Full || fallback
		done, err := w.results(ctx)
		if err != nil {
			return w.res, err
		}
		if countUnits(done, plan.Shards, fallback) == plan.Shards {
			return w.res, nil
		}
		queue := []int{shard}
		for k := 1; round > 0 && k < shards; k++ {
			queue = append(queue, (shard+k)%shards)
		}
		worked := false
		for _, s := range queue {
			if done[unitID(s, fallback)] {
				continue
			}
			did, err := w.try(ctx, s, fallback)
			if err != nil {
				return w.res, err
			}
			worked = worked || did
			if w.res.FellBack != "" && !fallback {
				break // the plan fell back: start over on the full units
			}
		}
		if !worked && round > 0 {
			// Every shard left is held by a live worker: look again
			// after a third of a lease, when a dead one's has moved
			// on by as much.
			start := time.Now()
			select {
			case <-ctx.Done():
				return w.res, ctx.Err()
			case <-time.After(o.LeaseTTL / 3):
			}
			w.res.WaitedSeconds += time.Since(start).Seconds()
		}
	}
}

// newWorker opens the plan's inputs: the source at the plan's version,
// and the output's base version.
func newWorker(ctx context.Context, out *catalog.Table, plan *WorkPlan, o WorkerOptions) (*worker, error) {
	opts, err := plan.options()
	if err != nil {
		return nil, err
	}
	w := &worker{out: out, plan: plan, o: o, res: WorkerResult{PlanID: plan.ID},
		claim: &claim.Claimer{Store: out.Store(), Worker: o.Name, TTL: o.LeaseTTL, Now: o.Now, Logger: o.Logger}}
	w.through = dayOfDate(opts.Through)
	if w.src, err = catalog.Open(ctx, opts.Source, catalog.Options{}); err != nil {
		return nil, fmt.Errorf("source %s: %w", cloud.Redact(opts.Source), err)
	}
	fail := func(err error) (*worker, error) {
		w.src.Close()
		return nil, err
	}
	if w.sm, err = w.src.Manifest(ctx, plan.SourceVersion); err != nil {
		return fail(fmt.Errorf("source %s: version %d: %w", cloud.Redact(opts.Source), plan.SourceVersion, err))
	}
	if w.j, err = newJob(opts, cloud.Redact(opts.Source), catalog.ReadSchema(w.sm), w.sm.Spec); err != nil {
		return fail(err)
	}
	if w.j.out.String() != plan.Schema.String() {
		return fail(fmt.Errorf("plan %s: the output's columns are %s, the plan's %s", plan.ID, w.j.out, plan.Schema))
	}
	if plan.BaseVersion > 0 {
		if w.om, err = out.Manifest(ctx, plan.BaseVersion); err != nil {
			return fail(fmt.Errorf("output %s: version %d: %w", cloud.Redact(out.Location()), plan.BaseVersion, err))
		}
	}
	return w, nil
}

// fellBack tells whether the plan fell back to a full recompute.
func (w *worker) fellBack(ctx context.Context) (bool, error) {
	if w.plan.Full {
		return false, nil
	}
	_, err := w.out.Store().Stat(ctx, escalationKey(w.plan.ID))
	if errors.Is(err, cloud.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("plan %s: %w", w.plan.ID, err)
	}
	return true, nil
}

// countUnits counts the shards of done in the mode fallback tells.
func countUnits(done map[string]bool, shards int, fallback bool) int {
	n := 0
	for s := range shards {
		if done[unitID(s, fallback)] {
			n++
		}
	}
	return n
}

// results lists the units that have a result.
func (w *worker) results(ctx context.Context) (map[string]bool, error) {
	return listResults(ctx, w.out.Store(), w.plan.ID)
}

func listResults(ctx context.Context, st cloud.Store, id string) (map[string]bool, error) {
	done := map[string]bool{}
	prefix := resultsPrefix(id)
	err := st.List(ctx, prefix, func(o cloud.ObjectInfo) error {
		if unit, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json"); ok {
			done[unit] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list results of plan %s: %w", id, err)
	}
	return done, nil
}

// try claims shard s if no live worker holds it and computes it; did says
// whether it did. A shard held by a live worker is left, to be looked at
// again.
func (w *worker) try(ctx context.Context, s int, fallback bool) (did bool, err error) {
	unit := unitID(s, fallback)
	c, err := w.claim.Take(ctx, claimKey(w.plan.ID, unit), unit)
	if err != nil || c == nil {
		return false, err
	}
	w.o.Logger.Info("claimed", "plan", w.plan.ID, "unit", unit, "attempt", c.Attempt, "stolen", c.TakenOver)
	if err := w.do(ctx, s, fallback, c); err != nil {
		return false, err
	}
	return true, nil
}

// do computes shard s under claim c, which a take-over cancels, and
// records the result. A result another worker recorded first, or a
// fall-back of the plan meanwhile, makes this one's files go.
func (w *worker) do(ctx context.Context, s int, fallback bool, c *claim.Claim) error {
	st := w.out.Store()
	var res shardResult
	var reason string
	err := c.Hold(ctx, func(ctx context.Context) error {
		var err error
		res, reason, err = w.compute(ctx, s, w.plan.Full || fallback)
		return err
	})
	if errors.Is(err, claim.ErrTakenOver) {
		w.o.Logger.Warn("shard taken over", "unit", c.Unit, "cause", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("plan %s shard %d: %w", w.plan.ID, s, err)
	}
	if reason != "" {
		data, _ := json.Marshal(escalation{Shard: s, Worker: w.o.Name, Reason: reason})
		if _, _, err := claim.PutOnce(ctx, st, escalationKey(w.plan.ID), data); err != nil {
			return fmt.Errorf("plan %s: fall back to a full recompute: %w", w.plan.ID, err)
		}
		w.o.Logger.Info("plan falls back to a full recompute", "plan", w.plan.ID, "shard", s, "reason", reason)
		w.res.FellBack = reason
		return nil
	}
	res.Unit, res.Worker, res.Token = c.Unit, w.o.Name, c.Token
	if !fallback && !w.plan.Full {
		if fell, err := w.fellBack(ctx); err != nil || fell {
			deleteFiles(context.WithoutCancel(ctx), st, res.Files)
			return err
		}
	}
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode result of %s: %w", c.Unit, err)
	}
	_, won, err := claim.PutOnce(ctx, st, resultKey(w.plan.ID, c.Unit), data)
	if err != nil {
		// Unknown or failed: the result may name these files, so they
		// stay (vacuum removes them if it does not).
		return fmt.Errorf("record result of %s: %w", c.Unit, err)
	}
	if !won {
		w.res.LostRaces++
		deleteFiles(context.WithoutCancel(ctx), st, res.Files)
		return nil
	}
	if c.TakenOver {
		w.res.Stolen++
	}
	w.res.Shards = append(w.res.Shards, s)
	w.res.Keys += res.Keys
	w.res.Rows += res.Rows
	w.res.Files += len(res.Files)
	w.res.Bytes += res.Bytes
	w.res.EventsRead += res.EventsRead
	w.o.Logger.Info("shard done", "plan", w.plan.ID, "unit", c.Unit, "keys", res.Keys, "rows", res.Rows, "files", len(res.Files))
	return nil
}

// deleteFiles removes files no result names, best effort: vacuum removes
// what is left.
func deleteFiles(ctx context.Context, st cloud.Store, files []shardFile) {
	for _, f := range files {
		_ = st.Delete(ctx, f.File.Path)
	}
}
