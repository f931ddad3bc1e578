package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// workDir holds the plans of work spread over many workers (compact's
// _sluice/work/<id>/, rollup's _sluice/work/rollup-<id>/): a plan, its
// workers' claims and results, and its done marker, all in one folder.
const workDir = metaDir + "work/"

// workPlans gathers the objects under workDir by plan folder, as the
// vacuum's listing meets them.
type workPlans map[string]*workPlan

// workPlan is one plan folder's objects and the newest of their times.
type workPlan struct {
	objs   []cloud.ObjectInfo
	newest time.Time
}

// add records obj if it is in a plan folder; objects directly under
// workDir belong to no plan and are left alone.
func (w workPlans) add(obj cloud.ObjectInfo) {
	id, _, ok := strings.Cut(strings.TrimPrefix(obj.Key, workDir), "/")
	if !ok || id == "" {
		return
	}
	p := w[id]
	if p == nil {
		p = &workPlan{}
		w[id] = p
	}
	p.objs = append(p.objs, obj)
	if obj.ModTime.After(p.newest) {
		p.newest = obj.ModTime
	}
}

// vacuumWork deletes (or, on a dry run, lists) the plan folders whose
// objects are all older than cutoff, done or abandoned alike: a plan
// still worked on has a claim renewed within its lease, one still to be
// committed a result written since, and any object at or after the
// cutoff keeps the whole folder. A plan's plan.json goes first, so that a
// vacuum stopped half way leaves no folder that reads as an open plan.
// The output files that results name but no version references are
// data files like any other: the vacuum's data-file pass removes them by
// age.
func (t *Table) vacuumWork(ctx context.Context, plans workPlans, cutoff time.Time, dryRun bool, res *VacuumResult) error {
	ids := make([]string, 0, len(plans))
	for id, p := range plans {
		if p.newest.Before(cutoff) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := plans[id]
		slices.SortStableFunc(p.objs, func(a, b cloud.ObjectInfo) int {
			return planFirst(a.Key) - planFirst(b.Key)
		})
		why := fmt.Sprintf("an object of work plan %s, whose objects are all older than the retention (the newest written at %s)",
			id, p.newest.UTC().Format(time.RFC3339))
		for _, obj := range p.objs {
			if !dryRun {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := t.store.Delete(ctx, obj.Key); err != nil {
					return fmt.Errorf("vacuum %s: work plan %s: %w", t.loc, id, err)
				}
			}
			u := t.store.URL(obj.Key)
			res.Deleted = append(res.Deleted, u)
			res.Bytes += obj.Size
			if res.Why == nil {
				res.Why = map[string]string{}
			}
			res.Why[u] = why
		}
		res.WorkPlans = append(res.WorkPlans, t.store.URL(workDir+id))
	}
	return nil
}

// planFirst orders a plan folder's plan.json before its other objects.
func planFirst(key string) int {
	if strings.HasSuffix(key, "/plan.json") && strings.Count(strings.TrimPrefix(key, workDir), "/") == 1 {
		return 0
	}
	return 1
}
