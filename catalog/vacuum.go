package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// MinRetention is the shortest retention Vacuum accepts without Force: a
// shorter one may delete files that a running writer has written but not
// yet committed, or that a slow reader of an older version still reads.
const MinRetention = 24 * time.Hour

// DefaultRetention is the retention of `sluice vacuum` without --retain: a
// week, Delta's default too.
const DefaultRetention = 168 * time.Hour

// ErrRetentionTooShort: a vacuum retention under MinRetention without Force.
var ErrRetentionTooShort = errors.New("retention shorter than 24h")

// ErrNegativeRetention: a vacuum retention below zero, which would put the
// cutoff in the future and delete files still being written.
var ErrNegativeRetention = errors.New("retention is negative")

// VacuumOptions say what Vacuum may delete.
type VacuumOptions struct {
	// Retain keeps every version committed within this age of now (and
	// always the latest), and every file younger than it. Zero means zero
	// (only the latest version is kept, and every unreferenced file goes),
	// so, like any retention under MinRetention, it needs Force; negative
	// is refused. DefaultRetention is the usual choice.
	Retain time.Duration
	// Force allows a Retain under MinRetention.
	Force bool
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
	// Now is the clock; zero: time.Now().
	Now time.Time
	// Keep, when set, is called with the cutoff (Now less Retain) before
	// anything is listed, and returns more data files to keep, located as
	// FileURL locates them: those an Iceberg mirror's retained snapshots
	// reference. Its error stops the vacuum, deleting nothing.
	Keep func(ctx context.Context, cutoff time.Time) (map[string]bool, error)
}

// Check refuses a negative retention, and one under MinRetention without
// Force, naming the table at loc: what every format's vacuum checks
// first.
func (o VacuumOptions) Check(loc string) error {
	switch {
	case o.Retain < 0:
		return fmt.Errorf("vacuum %s: --retain %s: %w", loc, o.Retain, ErrNegativeRetention)
	case o.Retain < MinRetention && !o.Force:
		return fmt.Errorf("vacuum %s: --retain %s: %w (pass --force if no writer or reader can still be using older files)", loc, o.Retain, ErrRetentionTooShort)
	}
	return nil
}

// VacuumResult lists what Vacuum deleted (or would delete, on a dry run).
type VacuumResult struct {
	// Deleted are the locations of the deleted objects.
	Deleted []string
	Bytes   int64
	// RetainedVersions is how many versions' files were kept.
	RetainedVersions int
	// LogDeleted are the log entries deleted (a Delta table's metadata
	// cleanup); Why says, by location, why each object went, where the
	// format tells; Notes say what the vacuum decided on its own.
	LogDeleted []string
	Why        map[string]string
	Notes      []string
	// WorkPlans are the locations of the work plan folders
	// (_sluice/work/<id>/) whose objects were all older than the
	// retention and were deleted (or would be, on a dry run); their
	// objects are in Deleted too.
	WorkPlans []string
}

// Vacuum deletes data files that no retained version references and that
// are older than the retention, pieces and pages that no version at all
// references (the leftovers of commits that lost a race or crashed), and
// the folders of work plans (_sluice/work/<id>/) whose objects are all
// older than the retention. It never deletes manifests, and never a file
// outside the table root or under a folder whose name starts with '_' or
// '.' (other engines' logs) but for those plan folders.
//
// Import relies on every version's manifest, pages and pieces staying: it
// asks them which files the table ever had, so that a replaced file still
// on disk (younger than the retention) is never adopted again. A vacuum
// that expired manifests would have to keep that knowledge elsewhere.
func (t *Table) Vacuum(ctx context.Context, o VacuumOptions) (VacuumResult, error) {
	var res VacuumResult
	if err := o.Check(t.loc); err != nil {
		return res, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	cutoff := o.Now.Add(-o.Retain)
	var keep map[string]bool
	if o.Keep != nil {
		var err error
		if keep, err = o.Keep(ctx, cutoff); err != nil {
			return res, fmt.Errorf("vacuum %s: %w", t.loc, err)
		}
	}
	hist, err := t.History(ctx)
	if err != nil {
		return res, err
	}
	allPieces := map[string]bool{}
	keepPieces := map[string]bool{}
	allPages := map[string]bool{}
	for i, m := range hist {
		retained := i == len(hist)-1 || !m.CommittedAt.Before(cutoff)
		if retained {
			res.RetainedVersions++
		}
		for _, pr := range m.Pages {
			allPages[pr.Key] = true
		}
		refs, err := t.Partitions(ctx, m)
		if err != nil {
			return res, fmt.Errorf("vacuum %s: %w", t.loc, err)
		}
		for _, p := range refs {
			for _, pr := range p.Pieces {
				allPieces[pr.Key] = true
				if retained {
					keepPieces[pr.Key] = true
				}
			}
		}
	}
	live := map[string]bool{}
	for key := range keepPieces {
		pc, err := t.piece(ctx, key)
		if err != nil {
			return res, fmt.Errorf("vacuum %s: %w", t.loc, err)
		}
		for _, f := range pc.Files {
			live[f.Path] = true
		}
	}
	var doomed []cloud.ObjectInfo
	plans := workPlans{}
	err = t.store.List(ctx, "", func(obj cloud.ObjectInfo) error {
		if strings.HasPrefix(obj.Key, workDir) {
			plans.add(obj) // newer objects too: one keeps its plan
			return nil
		}
		if !obj.ModTime.Before(cutoff) {
			return nil
		}
		switch {
		case strings.HasPrefix(obj.Key, piecesDir):
			if !allPieces[obj.Key] {
				doomed = append(doomed, obj)
			}
		case strings.HasPrefix(obj.Key, pagesDir):
			if !allPages[obj.Key] {
				doomed = append(doomed, obj)
			}
		case isDataFile(obj.Key):
			if !live[obj.Key] && !keep[t.store.URL(obj.Key)] {
				doomed = append(doomed, obj)
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("vacuum %s: list: %w", t.loc, err)
	}
	for _, obj := range doomed {
		if !o.DryRun {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := t.store.Delete(ctx, obj.Key); err != nil {
				return res, fmt.Errorf("vacuum %s: %w", t.loc, err)
			}
		}
		res.Deleted = append(res.Deleted, t.store.URL(obj.Key))
		res.Bytes += obj.Size
	}
	if err := t.vacuumWork(ctx, plans, cutoff, o.DryRun, &res); err != nil {
		return res, err
	}
	return res, nil
}
