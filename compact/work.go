package compact

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
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
const workPrefix = "_sluice/work/"

// WorkCheckpoint is the manifest checkpoint listing, per open plan, the
// units committed: {"<plan id>": ["u00001", ...]}. A plan's entry is
// dropped a week after the plan was made.
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
	Units          []Unit         `json:"units"`
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
// create-only under _sluice/work/. When there is nothing to compact it
// writes nothing and returns a plan with no units and no ID.
func PlanWork(ctx context.Context, t Table, o PlanOptions, now time.Time) (*WorkPlan, error) {
	m, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	o.TargetFileSize = cmp.Or(o.TargetFileSize, m.TargetFileSize())
	files, err := t.Files(ctx, m)
	if err != nil {
		return nil, err
	}
	p, err := PlanCompaction(files, o)
	if err != nil {
		return nil, err
	}
	wp := &WorkPlan{Table: m.Identity(t.Store().URL("")), Version: m.Version, Created: now.UTC(), Schema: m.Schema,
		TargetFileSize: o.TargetFileSize}
	for i, b := range p.Bins() {
		wp.Units = append(wp.Units, Unit{ID: fmt.Sprintf("u%05d", i+1), Partition: b.Partition, Outputs: b.Outputs,
			Bytes: b.Bytes, Inputs: b.Inputs})
	}
	if len(wp.Units) == 0 {
		return wp, nil
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	wp.ID = now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	data, err := json.Marshal(wp)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if _, _, err := putOnce(ctx, t.Store(), planKey(wp.ID), data); err != nil {
		return nil, fmt.Errorf("write plan %s: %w", wp.ID, err)
	}
	return wp, nil
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
	data, err := getObject(ctx, st, planKey(id))
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, fmt.Errorf("plan %s: %w", id, ErrNoPlan)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", id, err)
	}
	var wp WorkPlan
	if err := json.Unmarshal(data, &wp); err != nil {
		return nil, fmt.Errorf("plan %s: %w", st.URL(planKey(id)), err)
	}
	return &wp, nil
}

// newestOpenPlan is the id of the newest plan without a done marker.
func newestOpenPlan(ctx context.Context, st cloud.Store) (string, error) {
	plans, done := map[string]bool{}, map[string]bool{}
	err := st.List(ctx, workPrefix, func(o cloud.ObjectInfo) error {
		id, rest, ok := strings.Cut(strings.TrimPrefix(o.Key, workPrefix), "/")
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
		return "", ErrNoPlan
	}
	return newest, nil
}

// getObject reads a whole object.
func getObject(ctx context.Context, st cloud.Store, key string) ([]byte, error) {
	data, _, err := getObjectTag(ctx, st, key)
	return data, err
}

func getObjectTag(ctx context.Context, st cloud.Store, key string) ([]byte, string, error) {
	rc, info, err := st.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return data, info.ETag, err
}

// putOnce creates key with data, create-only. won tells whether this
// write is the one that exists: a write whose outcome was unknown is
// settled by reading the object back and comparing its bytes (every
// writer's data holds something only it writes).
func putOnce(ctx context.Context, st cloud.Store, key string, data []byte) (etag string, won bool, err error) {
	return putSettled(ctx, st, key, data, cloud.PutOptions{IfAbsent: true})
}

// putSettled is a conditional put whose unknown outcome is settled by
// reading back.
func putSettled(ctx context.Context, st cloud.Store, key string, data []byte, opts cloud.PutOptions) (string, bool, error) {
	info, err := st.Put(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
	switch {
	case err == nil:
		return info.ETag, true, nil
	case errors.Is(err, cloud.ErrPreconditionFailed):
		return "", false, nil
	case !errors.Is(err, cloud.ErrOutcomeUnknown):
		return "", false, err
	}
	got, etag, rerr := getObjectTag(ctx, st, key)
	if rerr != nil {
		return "", false, fmt.Errorf("%w (reading it back: %v)", err, rerr)
	}
	return etag, bytes.Equal(got, data), nil
}
