package compact

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
	"github.com/sluice-data/sluice/internal/pqio"
)

// DefaultLeaseTTL is how long a worker's claim of a unit holds without a
// renewal: another worker takes the unit over once it has seen the claim
// unchanged that long.
const DefaultLeaseTTL = 2 * time.Minute

// WorkerOptions tune a worker.
type WorkerOptions struct {
	// Name identifies the worker in its claims and results (a pod name).
	Name string
	// Shard and Shards: this worker is Shard of Shards (0-based); it does
	// the units whose Unit.Shard is its own first, then any unit no live
	// worker holds. Zero Shards: 1.
	Shard, Shards int
	// LeaseTTL: DefaultLeaseTTL where zero.
	LeaseTTL time.Duration
	// Rewrite tunes each unit's rewrite (memory, codecs); its Outputs and
	// NewPath are set per unit.
	Rewrite RewriteOptions
	// Now is the worker's clock (tests drive it); nil: time.Now.
	Now func() time.Time
	// Logger gets a line per unit; nil: none.
	Logger *slog.Logger
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	o.Shards = max(o.Shards, 1)
	o.LeaseTTL = cmp.Or(o.LeaseTTL, DefaultLeaseTTL)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("worker-%d", o.Shard)
	}
	if o.Rewrite.Codecs == nil {
		o.Rewrite.Codecs = pqio.NewCodecs()
	}
	return o
}

// WorkerResult says what one worker did.
type WorkerResult struct {
	PlanID string `json:"plan_id"`
	// Units this worker rewrote and recorded; Stolen those of them it
	// took from another worker's shard.
	Units  []string `json:"units"`
	Stolen int      `json:"stolen"`
	// LostRaces are units this worker rewrote whose result another
	// worker recorded first: its outputs were deleted.
	LostRaces     int     `json:"lost_races"`
	FilesIn       int     `json:"files_in"`
	FilesOut      int     `json:"files_out"`
	BytesIn       int64   `json:"bytes_in"`
	BytesOut      int64   `json:"bytes_out"`
	Rows          int64   `json:"rows"`
	WaitedSeconds float64 `json:"waited_seconds"`
}

// UnitResult is a unit done: its verified outputs, in results/<unit>.json.
type UnitResult struct {
	Unit        string             `json:"unit"`
	Worker      string             `json:"worker"`
	Token       string             `json:"token"`
	Partition   string             `json:"partition"`
	Outputs     []catalog.DataFile `json:"outputs"`
	RowsIn      int64              `json:"rows_in"`
	RowsDeleted int64              `json:"rows_deleted"`
	PagesReused int                `json:"pages_reused"`
}

// worker is one Work call's state.
type worker struct {
	t     Table
	plan  *WorkPlan
	o     WorkerOptions
	claim *claim.Claimer
	res   WorkerResult
}

// Work does units of the plan planID of t (the newest open plan when
// empty) until every unit has a result: its own shard's first, then the
// units of workers that have not started them or whose claim stopped
// being renewed. A worker killed at any point leaves its unit to another
// once its lease ends; two workers that rewrite one unit (a slow one and
// the one that took it over) race to record the result, and the loser
// deletes its outputs, so a unit has one set of outputs.
func Work(ctx context.Context, t Table, planID string, o WorkerOptions) (WorkerResult, error) {
	o = o.withDefaults()
	plan, err := ReadPlan(ctx, t.Store(), planID)
	if err != nil {
		return WorkerResult{}, err
	}
	w := &worker{t: t, plan: plan, o: o, res: WorkerResult{PlanID: plan.ID},
		claim: &claim.Claimer{Store: t.Store(), Worker: o.Name, TTL: o.LeaseTTL, Now: o.Now, Logger: o.Logger}}
	mine, others := w.order()
	for round := 0; ; round++ {
		done, err := w.results(ctx)
		if err != nil {
			return w.res, err
		}
		if len(done) >= len(plan.Units) {
			return w.res, nil
		}
		queue := mine
		if round > 0 {
			queue = append(slices.Clone(mine), others...)
		}
		worked := false
		for _, u := range queue {
			if done[u.ID] {
				continue
			}
			did, err := w.try(ctx, u, u.Shard(o.Shards) != o.Shard)
			if err != nil {
				return w.res, err
			}
			worked = worked || did
		}
		if !worked && round > 0 {
			// Every unit left is held by a live worker: look again
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

// order splits the plan's units into this worker's shard and the rest,
// the rest starting at this worker's place so that idle workers spread
// over the others' units instead of all taking the same first one.
func (w *worker) order() (mine, others []Unit) {
	for _, u := range w.plan.Units {
		if u.Shard(w.o.Shards) == w.o.Shard {
			mine = append(mine, u)
		} else {
			others = append(others, u)
		}
	}
	if n := len(others); n > 0 {
		k := w.o.Shard * n / w.o.Shards
		others = append(others[k:], others[:k]...)
	}
	return mine, others
}

// results lists the units that have a result.
func (w *worker) results(ctx context.Context) (map[string]bool, error) {
	done := map[string]bool{}
	prefix := resultsPrefix(w.plan.ID)
	err := w.t.Store().List(ctx, prefix, func(o cloud.ObjectInfo) error {
		if unit, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json"); ok {
			done[unit] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list results of plan %s: %w", w.plan.ID, err)
	}
	return done, nil
}

// try claims unit u if no live worker holds it and does it; did says
// whether it did. A unit held by a live worker is left, to be looked at
// again.
func (w *worker) try(ctx context.Context, u Unit, steal bool) (did bool, err error) {
	c, err := w.claim.Take(ctx, claimKey(w.plan.ID, u.ID), u.ID)
	if err != nil || c == nil {
		return false, err
	}
	steal = steal || c.TakenOver
	w.o.Logger.Info("claimed", "plan", w.plan.ID, "unit", u.ID, "attempt", c.Attempt, "stolen", steal)
	if err := w.do(ctx, u, c); err != nil {
		return false, err
	}
	if steal {
		w.res.Stolen++
	}
	return true, nil
}

// do rewrites unit u under claim c, which a take-over cancels, and
// records the result; a result another worker recorded first makes this
// one's outputs go.
func (w *worker) do(ctx context.Context, u Unit, c *claim.Claim) error {
	st := w.t.Store()
	ro := w.o.Rewrite
	ro.Outputs = u.Outputs
	ro.TargetFileSize = cmp.Or(ro.TargetFileSize, w.plan.TargetFileSize)
	ro.NewPath = w.t.NewDataFilePath
	if w.plan.Order != nil {
		ro.Order = *w.plan.Order
	}
	inputs := u.inputs()
	var rr RewriteResult
	err := c.Hold(ctx, func(ctx context.Context) error {
		var err error
		if ro.Deleted, err = deletedRowsOf(ctx, w.t, inputs); err != nil {
			return err
		}
		rr, err = Rewrite(ctx, w.open, st, w.plan.Schema, u.Partition, inputs, ro)
		return err
	})
	if errors.Is(err, claim.ErrTakenOver) {
		// The other worker does the unit.
		w.o.Logger.Warn("unit taken over", "unit", u.ID, "cause", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("unit %s (%s): %w", u.ID, u.Partition, err)
	}
	r := UnitResult{Unit: u.ID, Worker: w.o.Name, Token: c.Token, Partition: u.Partition, Outputs: rr.Outputs,
		RowsIn: rr.RowsIn, RowsDeleted: rr.RowsDeleted, PagesReused: rr.PagesReused}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result of %s: %w", u.ID, err)
	}
	_, won, err := claim.PutOnce(ctx, st, resultKey(w.plan.ID, u.ID), data)
	if err != nil {
		// Unknown or failed: the result may name these outputs, so
		// they stay (vacuum removes them if it does not).
		return fmt.Errorf("record result of %s: %w", u.ID, err)
	}
	if !won {
		w.res.LostRaces++
		deleteOutputs(context.WithoutCancel(ctx), st, rr.Outputs)
		return nil
	}
	w.res.Units = append(w.res.Units, u.ID)
	w.res.FilesIn += len(inputs)
	w.res.FilesOut += len(rr.Outputs)
	w.res.BytesIn += rr.BytesIn
	w.res.BytesOut += rr.BytesOut
	w.res.Rows += rr.RowsIn - rr.RowsDeleted
	w.o.Logger.Info("unit done", "unit", u.ID, "files_in", len(inputs), "files_out", len(rr.Outputs))
	return nil
}

// open is the rewrites' Opener over the table's data files.
func (w *worker) open(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error) {
	return openDataFile(ctx, w.t, f)
}
