package rollup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
)

// CommitOptions tune CommitWork.
type CommitOptions struct {
	// RunID is recorded in the output's manifest.
	RunID string
	// Now is the clock that ages WorkCheckpoint's entries; nil: time.Now.
	Now func() time.Time
	// Logger gets a line for the commit; nil: none.
	Logger *slog.Logger
}

// CommitResult says what CommitWork did, and what the plan's shards
// computed together: the figures a one-process run's Result gives.
type CommitResult struct {
	PlanID string `json:"plan_id"`
	// Empty: the plan had nothing to do; nothing was committed.
	Empty bool `json:"empty"`
	// Committed: this call committed the plan, as Version. Already: a
	// previous call (or a concurrent committer) had. Pending are the
	// shards without a result yet: nothing was committed.
	Committed bool  `json:"committed"`
	Already   bool  `json:"already_committed"`
	Pending   []int `json:"pending"`
	Version   int64 `json:"version"`
	// Full tells a full recompute (the plan's, or its fall-back); Reason
	// why.
	Full   bool   `json:"full"`
	Reason string `json:"reason,omitempty"`
	// First and Through are the first day restated and the last day.
	First   string `json:"first"`
	Through string `json:"through"`
	// Keys are the keys of the days restated; Rows the rows written;
	// Files and Bytes the data files added.
	Keys  int   `json:"keys"`
	Rows  int64 `json:"rows"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Checksum is the order-independent checksum of the rows written
	// (the sum of each row's hash), as every shard read its files back.
	Checksum           string `json:"checksum"`
	PartitionsWritten  int    `json:"partitions_written"`
	PartitionsReplaced int    `json:"partitions_replaced"`
	KeysRestated       int    `json:"keys_restated"`
	CellsRestated      int64  `json:"cells_restated"`
	EventsRead         int64  `json:"events_read"`
	EventsExcluded     int64  `json:"events_excluded"`
	EventsAfter        int64  `json:"events_after"`
	EventsNoTime       int64  `json:"events_no_time"`
	// SourceFrom is the source version the output reflected before the
	// plan, SourceTo the one it reflects after.
	SourceFrom int64 `json:"source_from"`
	SourceTo   int64 `json:"source_to"`
}

// workEntry is one plan's entry in WorkCheckpoint.
type workEntry struct {
	Created     time.Time `json:"created"`
	BaseVersion int64     `json:"base_version"`
}

// committedPlan tells whether m's WorkCheckpoint lists plan id.
func committedPlan(m *catalog.Manifest, id string) bool {
	if m == nil {
		return false
	}
	var cp map[string]workEntry
	_ = json.Unmarshal(m.Checkpoints[WorkCheckpoint], &cp)
	_, ok := cp[id]
	return ok
}

// CommitWork commits plan planID of out (the newest open plan when
// empty) once every shard has a result: one commit that replaces the
// plan's days with every shard's files and writes the rollup checkpoint a
// one-process run of the same decision writes (so the next run, sharded
// or not, is incremental from it), recording the plan's id in
// WorkCheckpoint in the same commit. Called again, or by several
// processes at once, it commits the plan once: the others say Already.
// With shards pending it commits nothing and lists them.
//
// The output must still be at the plan's base version: else it fails
// with ErrPlanStale, and the shards' files are left for vacuum. A
// concurrent commit that lands while this one is made is checked as a
// one-process run's commit checks it: one that moved the rollup
// checkpoint or removed a file this commit replaces makes it fail with
// ErrPlanStale too. A commit error wrapping cloud.ErrOutcomeUnknown is
// returned as is: the next call reads whether it landed.
func CommitWork(ctx context.Context, out *catalog.Table, planID string, o CommitOptions) (CommitResult, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	plan, err := ReadPlan(ctx, out, planID)
	if err != nil {
		return CommitResult{}, err
	}
	res := CommitResult{PlanID: plan.ID, Empty: plan.Empty, Full: plan.Full, Reason: plan.Reason, First: plan.First, Through: plan.Through,
		SourceFrom: plan.SourceFrom, SourceTo: plan.SourceVersion}
	if plan.Empty {
		res.SourceTo = plan.SourceFrom
		return res, nil
	}
	m, err := out.Latest(ctx)
	if err != nil && !errors.Is(err, catalog.ErrTableNotFound) {
		return res, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
	}
	if committedPlan(m, plan.ID) {
		res.Already = true
		return res, closePlan(ctx, out, plan.ID)
	}
	results, err := readResults(ctx, out, plan, &res)
	if err != nil || len(res.Pending) > 0 {
		return res, err
	}
	if m == nil && plan.BaseVersion != 0 || m != nil && m.Version != plan.BaseVersion {
		return res, fmt.Errorf("plan %s restates version %d of output %s, which is at version %d: %w",
			plan.ID, plan.BaseVersion, cloud.Redact(out.Location()), versionOf(m), ErrPlanStale)
	}
	ch, err := planChange(ctx, out, m, plan, results, o, &res)
	if err != nil {
		return res, err
	}
	nm, err := out.Commit(ctx, ch)
	switch {
	case errors.Is(err, cloud.ErrOutcomeUnknown):
		return res, fmt.Errorf("commit plan %s to %s: outcome unknown, its files are kept (commit again to settle): %w", plan.ID, cloud.Redact(out.Location()), err)
	case errors.Is(err, errPlanCommitted):
		res.Already = true
		return res, closePlan(ctx, out, plan.ID)
	case errors.Is(err, catalog.ErrConflict), errors.Is(err, catalog.ErrTableExists):
		// Another commit landed first: this plan's (by a concurrent
		// committer, or an earlier call whose outcome was unknown),
		// or another run's, which makes the plan stale.
		if latest, lerr := out.Latest(ctx); lerr == nil && committedPlan(latest, plan.ID) {
			res.Already = true
			return res, closePlan(ctx, out, plan.ID)
		}
		return res, fmt.Errorf("commit plan %s to %s: %w (%w)", plan.ID, cloud.Redact(out.Location()), ErrPlanStale, err)
	case err != nil:
		return res, fmt.Errorf("commit plan %s to %s: %w", plan.ID, cloud.Redact(out.Location()), err)
	}
	res.Committed, res.Version = true, nm.Version
	o.Logger.Info("rollup plan committed", "plan", plan.ID, "out", cloud.Redact(out.Location()), "version", nm.Version, "rows", res.Rows, "full", res.Full)
	return res, closePlan(ctx, out, plan.ID)
}

func versionOf(m *catalog.Manifest) int64 {
	if m == nil {
		return 0
	}
	return m.Version
}

// closePlan marks plan id done.
func closePlan(ctx context.Context, out *catalog.Table, id string) error {
	if _, _, err := claim.PutOnce(ctx, out.Store(), doneKey(id), []byte(id+"\n")); err != nil {
		return fmt.Errorf("close plan %s: %w", id, err)
	}
	return nil
}

// readResults reads the result of every shard of plan, in the plan's
// mode (full once it fell back), several at once, adding them up in res
// in the shards' order; the shards without one are res.Pending.
func readResults(ctx context.Context, out *catalog.Table, plan *WorkPlan, res *CommitResult) ([]shardResult, error) {
	st := out.Store()
	fallback := false
	if !plan.Full {
		data, _, err := claim.Read(ctx, st, escalationKey(plan.ID))
		switch {
		case err == nil:
			var e escalation
			_ = json.Unmarshal(data, &e)
			fallback, res.Full, res.First = true, true, plan.SnapshotDay
			res.Reason = e.Reason
		case !errors.Is(err, cloud.ErrNotFound):
			return nil, fmt.Errorf("plan %s: %w", plan.ID, err)
		}
	}
	done, err := listResults(ctx, st, plan.ID)
	if err != nil {
		return nil, err
	}
	var units, keys []string
	var shards []int
	for s := range plan.Shards {
		unit := unitID(s, fallback)
		if !done[unit] {
			res.Pending = append(res.Pending, s)
			continue
		}
		units, shards, keys = append(units, unit), append(shards, s), append(keys, resultKey(plan.ID, unit))
	}
	all, err := claim.ReadMany(ctx, st, keys, 0)
	if err != nil {
		return nil, fmt.Errorf("results of plan %s: %w", plan.ID, err)
	}
	var got []shardResult
	var sum uint64
	days := map[string]bool{}
	for i, data := range all {
		var r shardResult
		if err := json.Unmarshal(data, &r); err != nil || r.Unit != units[i] || r.Shard != shards[i] {
			return nil, fmt.Errorf("result %s: unreadable (%v)", cloud.Redact(st.URL(keys[i])), err)
		}
		got = append(got, r)
		res.Keys += r.Keys
		res.Rows += r.Rows
		res.Files += len(r.Files)
		res.Bytes += r.Bytes
		sum += r.Checksum
		res.KeysRestated += r.KeysRestated
		res.CellsRestated += r.CellsRestated
		res.EventsRead += r.EventsRead
		res.EventsExcluded += r.EventsExcluded
		res.EventsAfter += r.EventsAfter
		res.EventsNoTime += r.EventsNoTime
		for _, d := range r.Days {
			days[d] = true
		}
	}
	res.Checksum = fmt.Sprintf("%016x", sum)
	res.PartitionsWritten = len(days)
	return got, nil
}

// errPlanCommitted: WorkCheckpoint lists the plan already.
var errPlanCommitted = errors.New("the plan is committed")

// planChange is the commit of the plan's shards onto m, its base.
func planChange(ctx context.Context, out *catalog.Table, m *catalog.Manifest, plan *WorkPlan, results []shardResult, o CommitOptions, res *CommitResult) (catalog.Change, error) {
	first, _ := parseDay(res.First)
	through, _ := parseDay(plan.Through)
	var add, remove []catalog.DataFile
	for _, r := range results {
		for _, f := range r.Files {
			f.File.Partition = f.Partition
			add = append(add, f.File)
		}
	}
	slices.SortFunc(add, func(a, b catalog.DataFile) int { return strings.Compare(a.Path, b.Path) })
	if m != nil {
		// Only the partitions replaced are listed, as a one-process
		// run lists them.
		refs, err := out.Partitions(ctx, m)
		if err != nil {
			return catalog.Change{}, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
		}
		for _, ref := range refs {
			day, isDate := strings.CutPrefix(ref.Partition, "date=")
			d, ok := parseDay(day)
			ok = ok && isDate
			if !res.Full && ok && d < first {
				continue
			}
			files, err := out.PartitionFiles(ctx, ref)
			if err != nil {
				return catalog.Change{}, fmt.Errorf("output %s: %w", cloud.Redact(out.Location()), err)
			}
			remove = append(remove, files...)
			if ok && d >= first && d <= through && len(files) > 0 {
				res.PartitionsReplaced++
			}
		}
	}
	now := o.Now()
	ch := catalog.Change{Operation: "rollup", RunID: o.RunID, Add: add, Remove: remove, DataChange: true,
		Checkpoints:    map[string]json.RawMessage{checkpointKey: plan.Checkpoint},
		CheckpointBase: map[string]json.RawMessage{checkpointKey: plan.BaseCheckpoint},
		CheckpointMerge: map[string]func(json.RawMessage) (json.RawMessage, error){
			WorkCheckpoint: func(cur json.RawMessage) (json.RawMessage, error) {
				cp := map[string]workEntry{}
				if len(cur) > 0 {
					if err := json.Unmarshal(cur, &cp); err != nil {
						return nil, fmt.Errorf("checkpoint %s: %w", WorkCheckpoint, err)
					}
				}
				if _, ok := cp[plan.ID]; ok {
					return nil, fmt.Errorf("plan %s: %w", plan.ID, errPlanCommitted)
				}
				for id, e := range cp {
					if now.Sub(e.Created) > workKeep {
						delete(cp, id)
					}
				}
				cp[plan.ID] = workEntry{Created: plan.Created, BaseVersion: plan.BaseVersion}
				return json.Marshal(cp)
			},
		}}
	sch, spec := plan.Schema, outputSpec
	switch {
	case m == nil:
		ch.Create, ch.Schema, ch.Spec = true, &sch, &spec
	case m.Schema.String() != sch.String():
		ch.Schema = &sch
	}
	return ch, nil
}
