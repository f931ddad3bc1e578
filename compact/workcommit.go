package compact

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
	// MaxCommits bounds the commits of one call: the results are cut
	// into at most this many batches. Zero: 10.
	MaxCommits int
	// RunID is recorded in the manifest.
	RunID string
	// Now is the clock that ages WorkCheckpoint's entries; nil: time.Now.
	Now func() time.Time
	// Logger gets a line per commit; nil: none.
	Logger *slog.Logger
}

// CommitResult says what CommitWork did.
type CommitResult struct {
	PlanID string `json:"plan_id"`
	// Committed are the units committed by this call; Already those a
	// previous call (or a concurrent committer) had; Dropped those whose
	// inputs a concurrent commit removed: their outputs are left to
	// vacuum, and the next plan takes up what is still small. Pending
	// units have no result yet.
	Committed []string `json:"committed"`
	Already   []string `json:"already_committed"`
	Dropped   []string `json:"dropped"`
	Pending   []string `json:"pending"`
	Versions  []int64  `json:"versions"`
	FilesIn   int      `json:"files_in"`
	FilesOut  int      `json:"files_out"`
	BytesIn   int64    `json:"bytes_in"`
	BytesOut  int64    `json:"bytes_out"`
	Rows      int64    `json:"rows"`
	// Done: every unit is committed or dropped, and the plan is closed.
	Done bool `json:"done"`
}

// CommitWork commits the results of plan planID of t (the newest open
// plan when empty) that are not committed yet, in at most MaxCommits
// commits, each recording its units in the manifest's WorkCheckpoint in
// the same commit: run again, or by several processes at once, it never
// commits a unit twice. A batch whose inputs a concurrent commit removed
// is dropped, and its outputs are left for vacuum. An unknown commit
// outcome stops the call with an error; the next call reads what landed.
func CommitWork(ctx context.Context, t Table, planID string, o CommitOptions) (CommitResult, error) {
	o.MaxCommits = max(o.MaxCommits, 0)
	if o.MaxCommits == 0 {
		o.MaxCommits = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	st := t.Store()
	plan, err := ReadPlan(ctx, st, planID)
	if err != nil {
		return CommitResult{}, err
	}
	// Empty lists, not nil: --json prints [] where a script counts them.
	res := CommitResult{PlanID: plan.ID, Committed: []string{}, Already: []string{}, Dropped: []string{},
		Pending: []string{}, Versions: []int64{}}
	results, err := readResults(ctx, st, plan)
	if err != nil {
		return res, err
	}
	m, err := t.Latest(ctx)
	if err != nil {
		return res, err
	}
	committed := committedUnits(m, plan.ID)
	var todo []UnitResult
	for _, u := range plan.Units {
		r, ok := results[u.ID]
		switch {
		case committed[u.ID]:
			res.Already = append(res.Already, u.ID)
		case !ok:
			res.Pending = append(res.Pending, u.ID)
		default:
			todo = append(todo, r)
		}
	}
	units := map[string]Unit{}
	for _, u := range plan.Units {
		units[u.ID] = u
	}
	for _, batch := range splitBatches(todo, o.MaxCommits) {
		if err := commitBatch(ctx, t, plan, units, batch, o, &res); err != nil {
			return res, err
		}
	}
	if len(res.Pending) == 0 {
		if _, _, err := claim.PutOnce(ctx, st, doneKey(plan.ID), []byte(plan.ID+"\n")); err != nil {
			return res, fmt.Errorf("close plan %s: %w", plan.ID, err)
		}
		res.Done = true
	}
	return res, nil
}

// readResults reads every result of plan, by unit, several at once:
// with a store's latency, reading a hundred results one after another
// would be most of a commit's time.
func readResults(ctx context.Context, st cloud.Store, plan *WorkPlan) (map[string]UnitResult, error) {
	out := map[string]UnitResult{}
	prefix := resultsPrefix(plan.ID)
	var keys []string
	if err := st.List(ctx, prefix, func(o cloud.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list results of plan %s: %w", plan.ID, err)
	}
	all, err := claim.ReadMany(ctx, st, keys, 0)
	if err != nil {
		return nil, fmt.Errorf("results of plan %s: %w", plan.ID, err)
	}
	for i, key := range keys {
		var r UnitResult
		if err := json.Unmarshal(all[i], &r); err != nil || r.Unit+".json" != strings.TrimPrefix(key, prefix) {
			return nil, fmt.Errorf("result %s: unreadable (%v)", cloud.Redact(st.URL(key)), err)
		}
		for i := range r.Outputs {
			r.Outputs[i].Partition = r.Partition
		}
		out[r.Unit] = r
	}
	return out, nil
}

// workEntry is one plan's entry in WorkCheckpoint.
type workEntry struct {
	Created time.Time `json:"created"`
	Units   []string  `json:"units"`
}

// UnmarshalJSON also reads the first form of an entry, the bare list of
// units (the plan's time is then read from its id).
func (e *workEntry) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '[' {
		return json.Unmarshal(data, &e.Units)
	}
	type plain workEntry
	return json.Unmarshal(data, (*plain)(e))
}

// made is when the entry's plan was made, if known.
func (e workEntry) made(id string) (time.Time, bool) {
	if !e.Created.IsZero() {
		return e.Created, true
	}
	return parsePlanTime(id)
}

// committedUnits are the units of plan id that m's WorkCheckpoint lists.
func committedUnits(m *catalog.Manifest, id string) map[string]bool {
	var cp map[string]workEntry
	_ = json.Unmarshal(m.Checkpoints[WorkCheckpoint], &cp)
	out := map[string]bool{}
	for _, u := range cp[id].Units {
		out[u] = true
	}
	return out
}

// splitBatches cuts results into at most n batches of consecutive units,
// of near-equal size.
func splitBatches(rs []UnitResult, n int) [][]UnitResult {
	n = min(n, len(rs))
	out := make([][]UnitResult, 0, n)
	for k := range n {
		out = append(out, rs[k*len(rs)/n:(k+1)*len(rs)/n])
	}
	return out
}

// errCommittedElsewhere: a unit of the batch is in WorkCheckpoint already.
var errCommittedElsewhere = errors.New("unit committed by another committer")

// commitBatch commits one batch of results and records the outcome.
func commitBatch(ctx context.Context, t Table, plan *WorkPlan, units map[string]Unit, batch []UnitResult, o CommitOptions, res *CommitResult) error {
	ch := catalog.Change{Operation: "compact", RunID: o.RunID}
	var ids []string
	for _, r := range batch {
		ch.Add = append(ch.Add, r.Outputs...)
		ch.Remove = append(ch.Remove, units[r.Unit].inputs()...)
		ids = append(ids, r.Unit)
	}
	now := o.Now()
	ch.CheckpointMerge = map[string]func(json.RawMessage) (json.RawMessage, error){
		WorkCheckpoint: func(cur json.RawMessage) (json.RawMessage, error) {
			cp := map[string]workEntry{}
			if len(cur) > 0 {
				if err := json.Unmarshal(cur, &cp); err != nil {
					return nil, fmt.Errorf("checkpoint %s: %w", WorkCheckpoint, err)
				}
			}
			for _, id := range ids {
				if slices.Contains(cp[plan.ID].Units, id) {
					return nil, fmt.Errorf("%s: %w", id, errCommittedElsewhere)
				}
			}
			for id, e := range cp {
				if made, ok := e.made(id); ok && id != plan.ID && now.Sub(made) > workKeep {
					delete(cp, id)
				}
			}
			e := cp[plan.ID]
			e.Created = plan.Created
			e.Units = append(e.Units, ids...)
			slices.Sort(e.Units)
			cp[plan.ID] = e
			return json.Marshal(cp)
		},
	}
	nm, err := t.Commit(ctx, ch)
	switch {
	case errors.Is(err, cloud.ErrOutcomeUnknown):
		return fmt.Errorf("commit of units %s: outcome unknown, their outputs are kept (run --commit again to settle): %w", strings.Join(ids, ","), err)
	case errors.Is(err, errCommittedElsewhere):
		res.Already = append(res.Already, ids...)
		return nil
	case errors.Is(err, catalog.ErrConflict) && len(batch) > 1:
		// One unit's input may be all that is gone: commit the
		// units one by one, so the others land.
		for _, r := range batch {
			if err := commitBatch(ctx, t, plan, units, []UnitResult{r}, o, res); err != nil {
				return err
			}
		}
		return nil
	case errors.Is(err, catalog.ErrConflict):
		// An input is gone: a concurrent commit replaced it, or an
		// earlier commit of this unit whose outcome was unknown
		// landed. Either way nothing is deleted here: outputs no
		// version references are vacuum's.
		m, lerr := t.Latest(ctx)
		if lerr != nil {
			return lerr
		}
		if committedUnits(m, plan.ID)[ids[0]] {
			res.Already = append(res.Already, ids...)
			return nil
		}
		res.Dropped = append(res.Dropped, ids...)
		o.Logger.Warn("unit dropped: a concurrent commit removed an input", "unit", ids[0], "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("commit of units %s: %w", strings.Join(ids, ","), err)
	}
	res.Versions = append(res.Versions, nm.Version)
	res.Committed = append(res.Committed, ids...)
	for _, r := range batch {
		res.FilesIn += len(units[r.Unit].Inputs)
		res.FilesOut += len(r.Outputs)
		res.BytesIn += units[r.Unit].Bytes
		for _, f := range r.Outputs {
			res.BytesOut += f.Bytes
		}
		res.Rows += r.RowsIn - r.RowsDeleted
	}
	o.Logger.Info("committed", "version", nm.Version, "units", len(ids))
	return nil
}
