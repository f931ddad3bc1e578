package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
)

// CompactWork are compact's options for a compaction spread over many
// processes (the pods of a Kubernetes Indexed Job): --plan writes the
// plan, --worker does units of it, --commit commits what is done. One
// process may take any of the three steps, or all of them.
type CompactWork struct {
	Plan, Worker, Commit bool
	PlanID               string
	// Shard is "i/n"; empty: JOB_COMPLETION_INDEX and JOB_COMPLETIONS
	// from the environment (an Indexed Job's pod), else 0/1.
	Shard    string
	LeaseTTL time.Duration
	PlanWait time.Duration

	shard, shards int
}

// on tells whether any step of a spread compaction was asked for.
func (w *CompactWork) on() bool { return w.Plan || w.Worker || w.Commit }

// bind registers the steps' flags.
func (w *CompactWork) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&w.Plan, "plan", false, "spread over many workers: write a work plan under TABLE/_sluice/work/ (with --worker, only shard 0 writes it)")
	fs.BoolVar(&w.Worker, "worker", false, "spread over many workers: rewrite units of the plan, this shard's first, then those of dead or slow workers")
	fs.BoolVar(&w.Commit, "commit", false, "spread over many workers: commit the units done (with --worker: after this worker's); the last commit closes the plan")
	fs.StringVar(&w.PlanID, "plan-id", "", "the plan's name, e.g. the Kubernetes Job's (default: --plan makes one; --worker and --commit take the newest open plan)")
	fs.StringVar(&w.Shard, "shard", "", "this worker's shard i/n, 0 <= i < n (default: JOB_COMPLETION_INDEX/JOB_COMPLETIONS, else 0/1)")
	fs.DurationVar(&w.LeaseTTL, "lease-ttl", compact.DefaultLeaseTTL, "a unit whose worker has not renewed its claim for this long is taken over")
	fs.DurationVar(&w.PlanWait, "plan-wait", 10*time.Minute, "how long --worker waits for the plan named by --plan-id to be written")
}

// validate checks the steps' options together with compact's others.
func (w *CompactWork) validate(o *Compact) []error {
	if !w.on() {
		return nil
	}
	var errs []error
	if o.DryRun {
		errs = append(errs, bad("dry-run", "not with --plan, --worker or --commit (a plan is written, not printed)"))
	}
	if o.Format != "" && o.Format != "sluice" {
		errs = append(errs, bad("format", "%s: --plan, --worker and --commit compact sluice tables; a %s table compacts in one process", o.Format, o.Format))
	}
	var more []error
	w.shard, w.shards, more = checkSteps(w.Plan, w.Worker, w.PlanID, w.Shard, w.LeaseTTL, w.PlanWait)
	errs = append(errs, more...)
	return errs
}

// CompactWorkResult is what a step of a spread compaction did: the --json
// summary of compact --plan, --worker and --commit.
type CompactWorkResult struct {
	Command string `json:"command"`
	Table   string `json:"table"`
	PlanID  string `json:"plan_id"`
	Shard   int    `json:"shard"`
	Shards  int    `json:"shards"`
	// Planned: this process wrote the plan (false: it read one written
	// before). Units and Version are the plan's.
	Planned bool                  `json:"planned"`
	Units   int                   `json:"units"`
	Version int64                 `json:"plan_version"`
	Worker  *compact.WorkerResult `json:"worker,omitempty"`
	Commits *compact.CommitResult `json:"commit,omitempty"`
	Warns   []string              `json:"warnings,omitempty"`
}

// Line says what the steps did.
func (r CompactWorkResult) Line() string {
	var parts []string
	switch {
	case r.PlanID == "":
		parts = append(parts, "nothing to compact in "+r.Table)
	case r.Planned:
		parts = append(parts, fmt.Sprintf("planned %d units of %s (version %d) as plan %s", r.Units, r.Table, r.Version, r.PlanID))
	default:
		parts = append(parts, fmt.Sprintf("plan %s of %s: %d units", r.PlanID, r.Table, r.Units))
	}
	if w := r.Worker; w != nil {
		parts = append(parts, fmt.Sprintf("shard %d/%d rewrote %d units (%d taken over, %d lost races): %d files -> %d (%s -> %s)",
			r.Shard, r.Shards, len(w.Units), w.Stolen, w.LostRaces, w.FilesIn, w.FilesOut, sizeText(w.BytesIn), sizeText(w.BytesOut)))
	}
	if c := r.Commits; c != nil {
		s := fmt.Sprintf("committed %d units in %d versions (%d already, %d dropped, %d pending)",
			len(c.Committed), len(c.Versions), len(c.Already), len(c.Dropped), len(c.Pending))
		if c.Done {
			s += "; plan done"
		}
		parts = append(parts, s)
	}
	return withWarnings(strings.Join(parts, "; "), r.Warns)
}

// Warnings are the steps' warnings.
func (r CompactWorkResult) Warnings() []string { return r.Warns }

// runWork takes the steps of a spread compaction that o asks for.
func (o *Compact) runWork(ctx context.Context, env Env) (Result, error) {
	w := &o.Work
	res := &CompactWorkResult{Command: "compact", Table: cloud.Redact(o.Table), PlanID: w.PlanID, Shard: w.shard, Shards: w.shards}
	m, err := env.beginMaintained(ctx, o, o.Table, FormatOptions{Format: o.Format})
	if err != nil {
		return res, err
	}
	defer m.Close()
	t, ok := m.(*catalog.Table)
	if !ok {
		return res, classify(bad("plan", "%s is not a sluice table: --plan, --worker and --commit compact sluice tables; compact a Delta or Iceberg table in one process", res.Table))
	}
	plan, err := o.plan(ctx, t, res)
	if err != nil || plan == nil {
		return res, err
	}
	if w.Worker {
		wo := compact.WorkerOptions{Name: instance(), Shard: w.shard, Shards: w.shards, LeaseTTL: w.LeaseTTL, Logger: env.logger(),
			Rewrite: compact.RewriteOptions{MemoryBudget: o.memoryBudget()}}
		wr, err := compact.Work(ctx, t, plan.ID, wo)
		res.Worker = &wr
		if err != nil {
			return res, classify(fmt.Errorf("compact %s: worker %d/%d of plan %s: %w", res.Table, w.shard, w.shards, plan.ID, err))
		}
	}
	if w.Commit {
		cr, err := compact.CommitWork(ctx, t, plan.ID, compact.CommitOptions{MaxCommits: int(o.MaxCommits.n), RunID: env.RunID, Logger: env.logger()})
		res.Commits = &cr
		if err != nil {
			return res, classify(fmt.Errorf("compact %s: commit of plan %s: %w", res.Table, plan.ID, err))
		}
		if len(cr.Pending) > 0 {
			res.Warns = append(res.Warns, fmt.Sprintf("%d units of plan %s have no result yet: run --commit again when the workers are done", len(cr.Pending), plan.ID))
		}
		if len(cr.Dropped) > 0 {
			res.Warns = append(res.Warns, fmt.Sprintf("%d units dropped: a concurrent commit replaced their inputs (their outputs are left to vacuum; the next plan takes up what is still small)", len(cr.Dropped)))
		}
	}
	return res, nil
}

// plan writes or finds the plan the steps work on: nil when there is
// nothing to do.
func (o *Compact) plan(ctx context.Context, t *catalog.Table, res *CompactWorkResult) (*compact.WorkPlan, error) {
	w := &o.Work
	var plan *compact.WorkPlan
	var err error
	switch {
	case w.Plan && (!w.Worker || w.shard == 0):
		plan, res.Planned, err = compact.PlanWorkNamed(ctx, t, o.o.Plan, w.PlanID, time.Now())
		if err == nil && plan.ID == "" {
			res.PlanID = ""
			return nil, nil
		}
	case w.PlanID != "" && w.Worker:
		wctx, cancel := context.WithTimeout(ctx, max(w.PlanWait, time.Millisecond))
		plan, err = compact.WaitPlan(wctx, t.Store(), w.PlanID, 2*time.Second)
		cancel()
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: no plan %s was written within --plan-wait %s", err, w.PlanID, w.PlanWait)
		}
	default:
		plan, err = compact.ReadPlan(ctx, t.Store(), w.PlanID)
	}
	if errors.Is(err, compact.ErrBadPlanID) {
		return nil, classify(bad("plan-id", "%v", err))
	}
	if err != nil {
		return nil, classify(fmt.Errorf("compact %s: %w", res.Table, err))
	}
	res.PlanID, res.Units, res.Version = plan.ID, len(plan.Units), plan.Version
	return plan, nil
}
