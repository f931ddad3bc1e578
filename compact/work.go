package compact

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
)

// A compaction spread over many workers (Kubernetes Indexed Job pods, or
// processes on one machine) keeps all its coordination in the table's
// store, beside the commits, under _sluice/work/<plan id>/:
//
//	plan.json             the plan: the version read, the schema, the work units (create-only)
//	claims/<unit>.json    a worker's claim of a unit, renewed while it works (create-only, then compare-and-swap)
//	results/<unit>.json   a unit's outputs, verified (create-only: one per unit, whoever wins)
//	done                  every unit committed or dropped
//
// and the units committed in the table's own manifest, as the checkpoint
// WorkCheckpoint, so that a unit is committed at most once whatever
// crashes: the commit that adds a unit's outputs records it.
// Vacuum deletes a plan's folder once every object in it is older than
// its retention, whether the plan was done or abandoned.
const workPrefix = "_sluice/work/"

// rollupPlans starts the folders of rollup plans under workPrefix
// (_sluice/work/rollup-<id>/): no compaction plan is named so, and none
// of them is a compaction plan.
const rollupPlans = "rollup-"

// WorkCheckpoint is the manifest checkpoint listing, per open plan, when
// it was made and the units committed:
// {"<plan id>": {"created": "2026-12-05T21:00:00Z", "units": ["u00001", ...]}}.
// A plan's entry is dropped a week after the plan was made.
const WorkCheckpoint = "compact-work"

// workKeep is how long a plan's committed units stay in WorkCheckpoint.
// A unit of a plan older than that cannot be committed again anyway: its
// inputs were removed by its first commit.
const workKeep = 7 * 24 * time.Hour

// ErrNoPlan is returned when a table has no open work plan (or not the
// one named).
var ErrNoPlan = errors.New("no open compaction plan")

// WorkPlan is a compaction planned once, for many workers to do.
type WorkPlan struct {
	ID string `json:"plan_id"`
	// Table is the identity of the table planned (Manifest.Identity).
	Table   string    `json:"table"`
	Version int64     `json:"version"`
	Created time.Time `json:"created"`
	// Schema is the table's schema at Version: the outputs' schema.
	Schema         catalog.Schema `json:"schema"`
	TargetFileSize int64          `json:"target_file_size"`
	// Order is the order of rows every unit is rewritten in; nil: input
	// order.
	Order *Ordering `json:"order,omitempty"`
	Units []Unit    `json:"units"`
}

// Unit is one bin of the plan: the input files of one partition that one
// worker rewrites into Outputs files.
type Unit struct {
	ID        string             `json:"id"`
	Partition string             `json:"partition"`
	Outputs   int                `json:"outputs"`
	Bytes     int64              `json:"bytes"`
	Inputs    []catalog.DataFile `json:"inputs"`
}

// inputs returns the unit's input files with their partition set (a
// DataFile does not encode it).
func (u Unit) inputs() []catalog.DataFile {
	out := make([]catalog.DataFile, len(u.Inputs))
	for i, f := range u.Inputs {
		f.Partition = u.Partition
		out[i] = f
	}
	return out
}

// Shard returns the worker, of n, that owns the unit before any steals:
// a hash of its id, so that no coordination is needed to split a plan.
func (u Unit) Shard(n int) int {
	h := fnv.New32a()
	h.Write([]byte(u.ID))
	return int(h.Sum32() % uint32(max(n, 1)))
}

// PlanWork plans a compaction of t as Run would and writes the plan
// create-only under _sluice/work/, under an id made of the time and a
// random part. When there is nothing to compact it writes nothing and
// returns a plan with no units and no ID.
func PlanWork(ctx context.Context, t Table, o PlanOptions, now time.Time) (*WorkPlan, error) {
	wp, _, err := PlanWorkNamed(ctx, t, o, "", now)
	return wp, err
}

// validPlanID is what a plan id given by its caller may be: a Kubernetes
// Job's or an Argo workflow's name fits.
var validPlanID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ErrBadPlanID is returned for a plan id that is not a plain name.
var ErrBadPlanID = errors.New("plan id: want letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit")

// PlanWorkNamed is PlanWork under the id given, when one is: the pods of
// one Kubernetes Job, each started with the Job's name, agree on their
// plan without talking. A plan of that id written before is returned as
// it is (created false), whoever wrote it; a named plan with nothing to
// do is written too, with no units, so that the workers waiting for it
// see it and finish.
func PlanWorkNamed(ctx context.Context, t Table, o PlanOptions, id string, now time.Time) (*WorkPlan, bool, error) {
	if id != "" {
		if !validPlanID.MatchString(id) {
			return nil, false, fmt.Errorf("%q: %w", id, ErrBadPlanID)
		}
		if strings.HasPrefix(id, rollupPlans) {
			return nil, false, fmt.Errorf("%q: %w (and not starting with %q, which names rollup plans)", id, ErrBadPlanID, rollupPlans)
		}
		wp, err := ReadPlan(ctx, t.Store(), id)
		if err == nil {
			return wp, false, nil
		}
		if !errors.Is(err, ErrNoPlan) {
			return nil, false, err
		}
	}
	m, err := t.Latest(ctx)
	if err != nil {
		return nil, false, err
	}
	o.TargetFileSize = cmp.Or(o.TargetFileSize, m.TargetFileSize())
	p, err := planTable(ctx, t, m, o)
	if err != nil {
		return nil, false, err
	}
	order, err := runOrdering(o.Order, m)
	if err != nil {
		return nil, false, err
	}
	wp := &WorkPlan{Table: m.Identity(t.Store().URL("")), Version: m.Version, Created: now.UTC(), Schema: m.Schema,
		TargetFileSize: o.TargetFileSize}
	bins := p.Bins()
	if order.On() {
		bins = binPerPartition(bins)
		wp.Order = &order
	}
	for i, b := range bins {
		wp.Units = append(wp.Units, Unit{ID: fmt.Sprintf("u%05d", i+1), Partition: b.Partition, Outputs: b.Outputs,
			Bytes: b.Bytes, Inputs: b.Inputs})
	}
	if len(wp.Units) == 0 && id == "" {
		return wp, false, nil
	}
	wp.ID = id
	if id == "" {
		var rnd [4]byte
		_, _ = rand.Read(rnd[:])
		wp.ID = now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	}
	data, err := json.Marshal(wp)
	if err != nil {
		return nil, false, fmt.Errorf("encode plan: %w", err)
	}
	_, won, err := claim.PutOnce(ctx, t.Store(), planKey(wp.ID), data)
	if err != nil {
		return nil, false, fmt.Errorf("write plan %s: %w", wp.ID, err)
	}
	if !won {
		// Another planner of the same id wrote first: its plan is the
		// one every worker reads.
		theirs, err := ReadPlan(ctx, t.Store(), wp.ID)
		return theirs, false, err
	}
	return wp, true, nil
}

// WaitPlan reads plan id of the table in st, waiting for it to be
// written (by the worker that plans) as long as ctx allows, looking
// again every poll.
func WaitPlan(ctx context.Context, st cloud.Store, id string, poll time.Duration) (*WorkPlan, error) {
	for {
		wp, err := ReadPlan(ctx, st, id)
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

func planKey(id string) string         { return workPrefix + id + "/plan.json" }
func claimKey(id, unit string) string  { return workPrefix + id + "/claims/" + unit + ".json" }
func resultKey(id, unit string) string { return workPrefix + id + "/results/" + unit + ".json" }
func resultsPrefix(id string) string   { return workPrefix + id + "/results/" }
func doneKey(id string) string         { return workPrefix + id + "/done" }

func parsePlanTime(id string) (time.Time, bool) {
	ts, _, ok := strings.Cut(id, "-")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102T150405Z", ts)
	return t, err == nil
}

// ReadPlan reads plan id of the table in st; with id empty, the newest
// plan that is not done. ErrNoPlan when there is none.
func ReadPlan(ctx context.Context, st cloud.Store, id string) (*WorkPlan, error) {
	if id == "" {
		var err error
		if id, err = newestOpenPlan(ctx, st); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(id, rollupPlans) {
		return nil, fmt.Errorf("plan %s: a rollup plan's folder: %w", id, ErrNoPlan)
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

// newestOpenPlan is the id of the newest compaction plan without a done
// marker: rollup plans, beside them, are left out.
func newestOpenPlan(ctx context.Context, st cloud.Store) (string, error) {
	plans, done := map[string]bool{}, map[string]bool{}
	err := st.List(ctx, workPrefix, func(o cloud.ObjectInfo) error {
		id, rest, ok := strings.Cut(strings.TrimPrefix(o.Key, workPrefix), "/")
		switch {
		case !ok, strings.HasPrefix(id, rollupPlans):
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
		return "", ErrNoPlan
	}
	return newest, nil
}
