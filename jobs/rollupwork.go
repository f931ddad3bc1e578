package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/rollup"
	"github.com/sluice-data/sluice/scheduler"
)

// RollupWork are rollup's options for a rollup spread over many
// processes (the pods of a Kubernetes Indexed Job, or an Argo workflow's
// steps): --plan decides the run once for N shards of the keys, --worker
// computes shards, --commit commits them all in one commit. One process
// may take any of the three steps, or all of them.
type RollupWork struct {
	Plan, Worker, Commit bool
	PlanID               string
	// Shard is "i/n"; empty: JOB_COMPLETION_INDEX and JOB_COMPLETIONS
	// from the environment (an Indexed Job's pod), else 0/1. With
	// --plan, n is the count of shards the plan is made for.
	Shard    string
	LeaseTTL time.Duration
	PlanWait time.Duration
	// CommitWait is how long --commit waits for shards without a
	// result; zero: it commits only when every shard is done.
	CommitWait time.Duration

	shard, shards int
}

// workPoll is how often a step waiting for the plan, or for the shards'
// results, looks again.
const workPoll = time.Second

// on tells whether any step of a spread rollup was asked for.
func (w *RollupWork) on() bool { return w.Plan || w.Worker || w.Commit }

// bind registers the steps' flags.
func (w *RollupWork) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&w.Plan, "plan", false, "spread over many workers: decide the run once (days to restate, source version, N shards of the keys) and write it under OUT/_sluice/work/ (with --worker, only shard 0 writes it)")
	fs.BoolVar(&w.Worker, "worker", false, "spread over many workers: compute the keys of this shard of the plan, then the shards of dead or slow workers, until every shard is done")
	fs.BoolVar(&w.Commit, "commit", false, "spread over many workers: once every shard is done, replace the plan's days with all shards' rows in one commit (again: nothing more)")
	fs.StringVar(&w.PlanID, "plan-id", "", "the plan's name, e.g. the Kubernetes Job's: planners of one name make one plan (default: --plan makes one; --worker and --commit take the newest open plan)")
	fs.StringVar(&w.Shard, "shard", "", "this worker's shard i/n, 0 <= i < n; --plan makes the plan for n shards (default: JOB_COMPLETION_INDEX/JOB_COMPLETIONS, else 0/1)")
	fs.DurationVar(&w.LeaseTTL, "lease-ttl", rollup.DefaultLeaseTTL, "a shard whose worker has not renewed its claim for this long is taken over")
	fs.DurationVar(&w.PlanWait, "plan-wait", 10*time.Minute, "how long --worker and --commit wait for the plan named by --plan-id to be written")
	fs.DurationVar(&w.CommitWait, "commit-wait", 30*time.Minute, "how long --commit waits for shards still being computed (0: commit only if every shard is done)")
}

// validate checks the steps' options.
func (w *RollupWork) validate() []error {
	if !w.on() {
		return nil
	}
	var errs []error
	w.shard, w.shards, errs = checkSteps(w.Plan, w.Worker, w.PlanID, w.Shard, w.LeaseTTL, w.PlanWait)
	if w.CommitWait < 0 {
		errs = append(errs, bad("commit-wait", "%s: want a duration >= 0", w.CommitWait))
	}
	return errs
}

// RollupWorkResult is what a step of a spread rollup did: the --json
// summary of rollup --plan, --worker and --commit.
type RollupWorkResult struct {
	Command string `json:"command"`
	Table   string `json:"table"`
	PlanID  string `json:"plan_id"`
	// Shard is this process's shard; Shards the plan's count (before the
	// plan is read, the one given).
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// Planned: this process wrote the plan (false: it read one written
	// before). The fields after it are the plan's: Empty, the output
	// already reflects the source; Full, every day is recomputed, for
	// FullReason; FirstDay through Through the days restated, onto the
	// output's BaseVersion, from the source's SourceVersion.
	Planned       bool                 `json:"planned"`
	Empty         bool                 `json:"empty"`
	Full          bool                 `json:"full"`
	FullReason    string               `json:"full_reason,omitempty"`
	FirstDay      string               `json:"first_day"`
	Through       string               `json:"through"`
	BaseVersion   int64                `json:"base_version"`
	SourceVersion int64                `json:"source_version"`
	Worker        *rollup.WorkerResult `json:"worker,omitempty"`
	Commits       *rollup.CommitResult `json:"commit,omitempty"`
	plan          *rollup.WorkPlan     // in Line
	smallFiles
	Warns []string `json:"warnings,omitempty"`
}

// Line says what the steps did.
func (r RollupWorkResult) Line() string {
	var parts []string
	days := fmt.Sprintf("%s through %s", r.FirstDay, r.Through)
	if r.Full {
		days = fmt.Sprintf("full recompute (%s) through %s", r.FullReason, r.Through)
	}
	switch {
	case r.PlanID == "" || r.plan == nil:
		parts = append(parts, "rollup "+r.Table+": no plan")
	case r.Empty:
		parts = append(parts, fmt.Sprintf("rollup %s: plan %s: up to date with source version %d, nothing to do", r.Table, r.PlanID, r.SourceVersion))
	case r.Planned:
		parts = append(parts, fmt.Sprintf("rollup %s: planned %s on %d shards as plan %s", r.Table, days, r.Shards, r.PlanID))
	default:
		parts = append(parts, fmt.Sprintf("rollup %s: plan %s: %s on %d shards", r.Table, r.PlanID, days, r.Shards))
	}
	if w := r.Worker; w != nil && !w.Empty {
		parts = append(parts, fmt.Sprintf("shard %d/%d computed shards %v (%d taken over, %d lost races): %d keys, %d rows, %d files (%s)",
			r.Shard, r.Shards, orEmpty(w.Shards), w.Stolen, w.LostRaces, w.Keys, w.Rows, w.Files, sizeText(w.Bytes)))
	}
	if c := r.Commits; c != nil && !c.Empty {
		switch {
		case c.Committed:
			parts = append(parts, fmt.Sprintf("committed version %d: %d rows of %d keys, %d partitions written", c.Version, c.Rows, c.Keys, c.PartitionsWritten))
		case c.Already:
			parts = append(parts, "committed already")
		default:
			parts = append(parts, fmt.Sprintf("shards %v pending, nothing committed", c.Pending))
		}
	}
	return withWarnings(strings.Join(parts, "; "), r.Warns)
}

// Warnings are the steps' warnings.
func (r RollupWorkResult) Warnings() []string { return r.Warns }

// runWork takes the steps of a spread rollup that o asks for.
func (o *Rollup) runWork(ctx context.Context, env Env) (Result, error) {
	w := &o.Work
	res := &RollupWorkResult{Command: "rollup", Table: cloud.Redact(o.Out), PlanID: w.PlanID, Shard: w.shard, Shards: w.shards}
	t, err := env.begin(ctx, o, o.Out)
	if err != nil {
		return res, err
	}
	defer t.Close()
	plan, err := o.workPlan(ctx, env, t, res)
	if err != nil {
		return res, err
	}
	if w.Worker {
		wo := rollup.WorkerOptions{Name: instance(), LeaseTTL: w.LeaseTTL, Logger: env.logger()}
		wr, err := rollup.Work(ctx, t, plan.ID, w.shard, w.shards, wo)
		res.Worker = &wr
		if errors.Is(err, rollup.ErrShards) {
			return res, classify(bad("shard", "%d/%d: plan %s was made for %d shards: give --shard i/%d (or JOB_COMPLETIONS=%d)", w.shard, w.shards, plan.ID, plan.Shards, plan.Shards, plan.Shards))
		}
		if err != nil {
			return res, classifyStale(fmt.Errorf("rollup %s: worker %d/%d of plan %s: %w", res.Table, w.shard, w.shards, plan.ID, err))
		}
	}
	if w.Commit {
		if err := o.commitWork(ctx, env, t, plan, res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// workPlan writes or finds the plan the steps work on, and refuses one
// made with other options than o's.
func (o *Rollup) workPlan(ctx context.Context, env Env, t *catalog.Table, res *RollupWorkResult) (*rollup.WorkPlan, error) {
	w := &o.Work
	var plan *rollup.WorkPlan
	var err error
	switch {
	case w.Plan && (!w.Worker || w.shard == 0):
		ro := o.o
		ro.RunID, ro.Logger = env.RunID, env.logger()
		plan, res.Planned, err = rollup.PlanWork(ctx, t, ro, w.shards, w.PlanID, time.Now())
	case w.PlanID != "":
		wctx, cancel := context.WithTimeout(ctx, max(w.PlanWait, time.Millisecond))
		plan, err = rollup.WaitPlan(wctx, t, w.PlanID, workPoll)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, rollup.ErrNoPlan) {
			err = fmt.Errorf("plan %s: %w: none was written within --plan-wait %s", w.PlanID, rollup.ErrNoPlan, w.PlanWait)
		}
	default:
		plan, err = rollup.ReadPlan(ctx, t, "")
		if errors.Is(err, rollup.ErrNoPlan) {
			err = fmt.Errorf("%w open in %s: run --plan first, or give --plan-id", rollup.ErrNoPlan, res.Table)
		}
	}
	if errors.Is(err, rollup.ErrBadPlanID) {
		return nil, classify(bad("plan-id", "%v", err))
	}
	if err != nil {
		return nil, classify(fmt.Errorf("rollup %s: %w", res.Table, err))
	}
	res.plan, res.PlanID, res.Shards = plan, plan.ID, plan.Shards
	res.Empty, res.Full, res.FullReason = plan.Empty, plan.Full, plan.Reason
	res.FirstDay, res.Through, res.BaseVersion, res.SourceVersion = plan.First, plan.Through, plan.BaseVersion, plan.SourceVersion
	if !res.Planned {
		if err := o.samePlan(plan); err != nil {
			return nil, classify(err)
		}
	}
	return plan, nil
}

// samePlan refuses a plan made with other options than o's: its shards
// would hold another rollup than the one the command line asks for.
func (o *Rollup) samePlan(p *rollup.WorkPlan) error {
	var diffs []string
	differs := func(flag, given, planned string) {
		if given != planned {
			diffs = append(diffs, fmt.Sprintf("--%s %s (the plan's: %s)", flag, given, planned))
		}
	}
	differs("source", cloud.Redact(o.o.Source), p.Source)
	differs("snapshot", cloud.Redact(o.o.Snapshot), p.Snapshot)
	differs("key", strings.Join(o.o.Keys, ","), strings.Join(p.Keys, ","))
	differs("time", o.o.Time, p.Time)
	var ms []string
	for _, m := range o.o.Measures {
		ms = append(ms, m.String())
	}
	if !slices.Equal(ms, p.Measures) {
		differs("measure", strings.Join(ms, " "), strings.Join(p.Measures, " "))
	}
	tz := "UTC"
	if o.o.Location != nil {
		tz = o.o.Location.String()
	}
	differs("tz", tz, p.TimeZone)
	if o.Through != "" {
		differs("through", o.Through, p.Through)
	}
	if len(diffs) == 0 {
		return nil
	}
	return bad("plan-id", "%s: the plan was made with other options: %s; give the plan's options, or plan anew under another --plan-id",
		p.ID, strings.Join(diffs, ", "))
}

// commitWork commits the plan once every shard has a result, waiting up
// to --commit-wait for the shards still being computed.
func (o *Rollup) commitWork(ctx context.Context, env Env, t *catalog.Table, plan *rollup.WorkPlan, res *RollupWorkResult) error {
	w := &o.Work
	deadline := time.Now().Add(w.CommitWait)
	for {
		cr, err := rollup.CommitWork(ctx, t, plan.ID, rollup.CommitOptions{RunID: env.RunID, Logger: env.logger()})
		res.Commits = &cr
		if err != nil {
			return classifyStale(fmt.Errorf("rollup %s: commit of plan %s: %w", res.Table, plan.ID, err))
		}
		if len(cr.Pending) == 0 {
			if cr.Committed {
				if warn := noEventWarning(plan.Through, plan.SnapshotDay, plan.LastEventDay); warn != "" {
					res.Warns = append(res.Warns, warn)
				}
			}
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return classify(fmt.Errorf("rollup %s: plan %s: %d of %d shards have no result after --commit-wait %s, nothing committed: run --commit again once the workers are done (any worker started with the plan's id takes over a dead one's shard)",
				res.Table, plan.ID, len(cr.Pending), plan.Shards, w.CommitWait))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, workPoll)):
		}
	}
}

// noEventWarning warns of days after the last event day: they carry the
// running totals forward with no events of their own.
func noEventWarning(through, snapshotDay, lastEventDay string) string {
	if through == "" || through <= snapshotDay || (lastEventDay != "" && through <= lastEventDay) {
		return ""
	}
	since := lastEventDay
	if since == "" {
		since = "the snapshot day " + snapshotDay
	}
	return fmt.Sprintf("no event after %s: the days after it through %s carry the running totals forward with no events of their own (late data, or a source that stopped?)", since, through)
}

// classifyStale classifies a step's error, a stale plan as permanent:
// working or committing that plan again cannot succeed, a new plan
// restates what the change left to do.
func classifyStale(err error) error {
	if errors.Is(err, rollup.ErrPlanStale) {
		return scheduler.Permanent(fmt.Errorf("%w; its shards' files are left to vacuum: plan anew under another --plan-id", err))
	}
	return classify(err)
}
