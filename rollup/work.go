package rollup

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
)

// A rollup spread over many workers keeps all its coordination in the
// output table's store, beside its commits, under
// _sluice/work/rollup-<plan id>/:
//
//	plan.json              the plan: the decision of a run, made once (create-only)
//	full.json              written by the first worker that finds the plan's
//	                       incremental restatement impossible: every shard is
//	                       then computed in full (create-only)
//	claims/<unit>.json     a worker's claim of a shard, renewed while it works
//	results/<unit>.json    a shard's files, verified (create-only: one per unit)
//	done                   the plan is committed (or had nothing to do)
//
// A unit is a shard, named by its number ("0003"), or "full-0003" once the
// plan fell back to a full recompute. The commit records the plan's id in
// the output's manifest (WorkCheckpoint), in the same commit as its rows,
// so that a plan is committed at most once whatever crashes.
// Vacuum deletes a plan's folder once every object in it is older than
// its retention, whether the plan was done or abandoned.
const workPrefix = "_sluice/work/"

// planDir is the folder of plan id under workPrefix: a rollup plan's
// folder is named apart from a compaction plan's.
func planDir(id string) string { return workPrefix + "rollup-" + id + "/" }

func planKey(id string) string         { return planDir(id) + "plan.json" }
func escalationKey(id string) string   { return planDir(id) + "full.json" }
func claimKey(id, unit string) string  { return planDir(id) + "claims/" + unit + ".json" }
func resultKey(id, unit string) string { return planDir(id) + "results/" + unit + ".json" }
func resultsPrefix(id string) string   { return planDir(id) + "results/" }
func doneKey(id string) string         { return planDir(id) + "done" }

// unitID names shard's unit: "0003", or "full-0003" once the plan fell
// back to a full recompute.
func unitID(shard int, fallback bool) string {
	if fallback {
		return fmt.Sprintf("full-%04d", shard)
	}
	return fmt.Sprintf("%04d", shard)
}

// WorkCheckpoint is the output manifest's checkpoint listing the plans
// committed, with when each was made:
// {"<plan id>": {"created": "2026-12-05T21:00:00Z", "base_version": 7}}.
// An entry is dropped a week after its plan was made: a plan that old
// cannot be committed anyway, its base version being long gone.
const WorkCheckpoint = "rollup-work"

// workKeep is how long a plan stays in WorkCheckpoint.
const workKeep = 7 * 24 * time.Hour

// The errors of a sharded rollup, for errors.Is.
var (
	// ErrNoPlan: the output has no rollup plan of the id given (or, with
	// none given, no open one).
	ErrNoPlan = errors.New("no rollup plan")
	// ErrBadPlanID: a plan id that is not a plain name.
	ErrBadPlanID = errors.New("plan id: want letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit")
	// ErrPlanStale: the output (or the snapshot) changed since the plan
	// was made, so its shards' files cannot be committed: they are left
	// for vacuum, and a new plan restates what the change left to do.
	ErrPlanStale = errors.New("the rollup plan is stale")
	// ErrShards: a worker's shard numbers do not fit the plan's.
	ErrShards = errors.New("shard does not fit the plan")
)

// validPlanID is what a plan id given by its caller may be: a Kubernetes
// Job's or an Argo workflow's name fits.
var validPlanID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// WorkPlan is a rollup run's decision, made once for many workers: which
// days to restate, from which source version and snapshot, onto which
// version of the output. Its JSON is the plan object workers read.
type WorkPlan struct {
	ID      string    `json:"plan_id"`
	Created time.Time `json:"created"`
	// Shards is how many shards the keys are cut into: shard i computes
	// the keys whose hash modulo Shards is i.
	Shards int `json:"shards"`
	// Empty: the output already reflects the source; nothing is
	// computed nor committed.
	Empty bool `json:"empty"`
	// Output is the identity of the output table planned;
	// BaseVersion its version the plan restates (0: the table does not
	// exist yet), BaseCheckpoint that version's rollup checkpoint.
	Output         string          `json:"output"`
	BaseVersion    int64           `json:"base_version"`
	BaseCheckpoint json.RawMessage `json:"base_checkpoint,omitempty"`
	// The options, as given to PlanWork (Source and Snapshot are
	// locations without credentials: the workers take theirs from the
	// environment).
	Source   string   `json:"source"`
	Snapshot string   `json:"snapshot"`
	Keys     []string `json:"keys"`
	Time     string   `json:"time"`
	Measures []string `json:"measures"`
	TimeZone string   `json:"time_zone"`
	// SourceVersion is the source version every shard reads, whatever
	// the source holds by then; SourceFrom the one the output reflected.
	SourceVersion int64 `json:"source_version"`
	SourceFrom    int64 `json:"source_from"`
	// SnapshotID is the snapshot's identity (its day, rows and
	// checksum): a shard reading another fails with ErrPlanStale.
	SnapshotID string `json:"snapshot_id"`
	// SnapshotDay, First and Through are days (YYYY-MM-DD): the output's
	// first, the first restated, the last. LastEventDay is the source's
	// last day with an event ("" for none).
	SnapshotDay  string `json:"snapshot_day"`
	First        string `json:"first"`
	Through      string `json:"through"`
	LastEventDay string `json:"last_event_day"`
	// Full: every day is recomputed, for Reason.
	Full   bool   `json:"full"`
	Reason string `json:"reason,omitempty"`
	// Schema is the output's schema.
	Schema catalog.Schema `json:"schema"`
	// Checkpoint is the rollup checkpoint the commit writes: the one a
	// one-process run of the same decision writes.
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
}

// options are the plan's options for its workers.
func (p *WorkPlan) options() (Options, error) {
	o := Options{Source: p.Source, Snapshot: p.Snapshot, Keys: p.Keys, Time: p.Time, Full: p.Full}
	for _, s := range p.Measures {
		m, err := ParseMeasure(s)
		if err != nil {
			return Options{}, fmt.Errorf("plan %s: %w", p.ID, err)
		}
		o.Measures = append(o.Measures, m)
	}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return Options{}, fmt.Errorf("plan %s: time zone: %w", p.ID, err)
	}
	o.Location = loc
	t, err := time.Parse(time.DateOnly, p.Through)
	if err != nil {
		return Options{}, fmt.Errorf("plan %s: through: %w", p.ID, err)
	}
	o.Through = t
	return o, nil
}

// PlanWork makes the decision of a rollup of out with o (which days to
// restate, from which source version) as Run would, for shards workers,
// and writes it create-only as plan.json under the output's
// _sluice/work/rollup-<id>/. The id is planID when given, else made of
// now and a random part. A plan of that id written before is returned as
// it is, whoever wrote it: the pods of one Kubernetes Job, each started
// with the Job's name, agree on their plan without talking. When the
// output is up to date the plan is Empty, and written too, so that the
// workers waiting for it see it and finish.
//
// Bad options, or options unlike those the output was made with (without
// Full), fail as Run fails, before anything is written. The source must
// be a sluice table. created tells whether this call wrote the plan
// (false: a plan of that id was there, whoever wrote it).
func PlanWork(ctx context.Context, out *catalog.Table, o Options, shards int, planID string, now time.Time) (plan *WorkPlan, created bool, err error) {
	if err := o.Validate(); err != nil {
		return nil, false, err
	}
	if shards < 1 {
		return nil, false, fmt.Errorf("shards: %d: %w", shards, ErrShards)
	}
	for what, loc := range map[string]string{"source": o.Source, "snapshot": o.Snapshot} {
		// The plan names them for its workers, in the output's store:
		// a secret would be written there.
		if cloud.Redact(loc) != loc {
			return nil, false, fmt.Errorf("%s %s carries credentials: a sharded rollup takes them from the environment", what, cloud.Redact(loc))
		}
	}
	if planID != "" {
		if !validPlanID.MatchString(planID) {
			return nil, false, fmt.Errorf("%q: %w", planID, ErrBadPlanID)
		}
		wp, err := ReadPlan(ctx, out, planID)
		if !errors.Is(err, ErrNoPlan) {
			return wp, false, err
		}
	}
	src, err := catalog.Open(ctx, o.Source, catalog.Options{})
	if err != nil {
		return nil, false, fmt.Errorf("source %s: %w", cloud.Redact(o.Source), err)
	}
	defer src.Close()
	wp, err := decidePlan(ctx, out, src, o)
	if err != nil {
		return nil, false, err
	}
	wp.Shards, wp.Created, wp.ID = shards, now.UTC(), planID
	if wp.ID == "" {
		var rnd [4]byte
		_, _ = rand.Read(rnd[:])
		wp.ID = now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	}
	data, err := json.Marshal(wp)
	if err != nil {
		return nil, false, fmt.Errorf("encode plan: %w", err)
	}
	st := out.Store()
	_, won, err := claim.PutOnce(ctx, st, planKey(wp.ID), data)
	if err != nil {
		return nil, false, fmt.Errorf("write plan %s: %w", wp.ID, err)
	}
	if !won {
		// Another planner of the same id wrote first: its plan is the
		// one every worker reads.
		theirs, err := ReadPlan(ctx, out, wp.ID)
		return theirs, false, err
	}
	if wp.Empty {
		if _, _, err := claim.PutOnce(ctx, st, doneKey(wp.ID), []byte(wp.ID+"\n")); err != nil {
			return nil, false, fmt.Errorf("close plan %s: %w", wp.ID, err)
		}
	}
	return wp, true, nil
}

// decidePlan is the decision part of runOnce, over the source's latest
// version and the output's.
func decidePlan(ctx context.Context, out *catalog.Table, src *catalog.Table, o Options) (*WorkPlan, error) {
	r := &run{src: src, out: out}
	var err error
	if r.sm, err = src.Latest(ctx); err != nil {
		if errors.Is(err, catalog.ErrTableNotFound) {
			return nil, fmt.Errorf("source %s is not a sluice table: %w", cloud.Redact(o.Source), err)
		}
		return nil, fmt.Errorf("source %s: %w", cloud.Redact(o.Source), err)
	}
	if r.j, err = newJob(o, cloud.Redact(o.Source), catalog.ReadSchema(r.sm), r.sm.Spec); err != nil {
		return nil, err
	}
	files, release, err := snapshotFiles(ctx, o.Snapshot)
	if err != nil {
		return nil, err
	}
	r.snap, err = readBase(ctx, "snapshot "+cloud.Redact(o.Snapshot), files, r.j.keyCols, r.j.o.Measures, o.location())
	release()
	if err != nil {
		return nil, err
	}
	if err := r.resolveThrough(ctx); err != nil {
		return nil, err
	}
	if r.om, err = out.Latest(ctx); err != nil && !errors.Is(err, catalog.ErrTableNotFound) {
		return nil, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
	}
	wp := &WorkPlan{Output: cloud.Redact(out.Store().URL("")), Source: o.Source, Snapshot: o.Snapshot,
		Keys: o.Keys, Time: o.Time, TimeZone: o.location().String(), SourceVersion: r.sm.Version, SnapshotID: r.snap.identity(),
		SnapshotDay: dayString(r.snap.day), Through: dayString(r.through), LastEventDay: r.lastEvent, Schema: r.j.out}
	for _, m := range o.Measures {
		wp.Measures = append(wp.Measures, m.String())
	}
	if r.om != nil {
		if r.om.Spec.String() != outputSpec.String() {
			return nil, fmt.Errorf("output %s is partitioned by %s: a rollup output is partitioned by day(date)", cloud.Redact(out.Location()), r.om.Spec)
		}
		wp.BaseVersion = r.om.Version
		r.old, r.oldRaw = readState(r.om)
		wp.BaseCheckpoint = r.oldRaw
		if r.old != nil {
			wp.SourceFrom = r.old.SourceVersion
		}
	}
	first, reason, err := r.decide(ctx)
	if err != nil {
		return nil, err
	}
	if reason == "" && first > r.through {
		wp.Empty = true
		return wp, nil
	}
	if reason == "" {
		// The one fallback to a full recompute that reads no events is
		// taken here, so that every worker agrees on it.
		prev := dayString(first - 1)
		held, err := manifestFiles(ctx, out, r.om, func(partition string) bool { return partition == "date="+prev })
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
		}
		if len(held) == 0 {
			reason = "the output holds no rows of " + prev
		}
	}
	wp.First = dayString(first)
	if reason != "" {
		wp.Full, wp.Reason, wp.First = true, reason, dayString(r.snap.day)
	}
	wp.Checkpoint, err = json.Marshal(state{Source: r.sourceID(), SourceTable: r.sourceTable(), SourceVersion: r.sm.Version,
		Snapshot: r.snap.identity(), Spec: o.spec(), Through: dayString(r.through)})
	if err != nil {
		return nil, err
	}
	return wp, nil
}

// ReadPlan reads the rollup plan id of out; with id empty, the newest one
// that is not done. ErrNoPlan when there is none.
func ReadPlan(ctx context.Context, out *catalog.Table, id string) (*WorkPlan, error) {
	st := out.Store()
	if id == "" {
		var err error
		if id, err = newestOpenPlan(ctx, st); err != nil {
			return nil, err
		}
	}
	data, _, err := claim.Read(ctx, st, planKey(id))
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, fmt.Errorf("plan %s: %w", id, ErrNoPlan)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	var wp WorkPlan
	if err := json.Unmarshal(data, &wp); err != nil {
		return nil, fmt.Errorf("plan %s: %w", cloud.Redact(st.URL(planKey(id))), err)
	}
	return &wp, nil
}

// WaitPlan reads plan id of out, waiting for it to be written (by the
// worker that plans) as long as ctx allows, looking again every poll.
func WaitPlan(ctx context.Context, out *catalog.Table, id string, poll time.Duration) (*WorkPlan, error) {
	for {
		wp, err := ReadPlan(ctx, out, id)
		if !errors.Is(err, ErrNoPlan) {
			return wp, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for plan %s: %w (%w)", cmp.Or(id, "(newest open)"), ErrNoPlan, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}

// newestOpenPlan is the id of the newest rollup plan without a done
// marker.
func newestOpenPlan(ctx context.Context, st cloud.Store) (string, error) {
	plans, done := map[string]bool{}, map[string]bool{}
	err := st.List(ctx, workPrefix+"rollup-", func(o cloud.ObjectInfo) error {
		id, rest, ok := strings.Cut(strings.TrimPrefix(o.Key, workPrefix+"rollup-"), "/")
		switch {
		case !ok:
		case rest == "plan.json":
			plans[id] = true
		case rest == "done":
			done[id] = true
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list plans: %w", err)
	}
	newest := ""
	for id := range plans {
		if !done[id] && id > newest {
			newest = id
		}
	}
	if newest == "" {
		return "", fmt.Errorf("open plan: %w", ErrNoPlan)
	}
	return newest, nil
}
