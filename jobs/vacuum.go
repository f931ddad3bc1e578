package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// Vacuum deletes the data files no retained version (nor a mirror's
// retained snapshot) references.
type Vacuum struct {
	Table  string
	Retain time.Duration
	DryRun bool
	Force  bool
	// Format is the table's format: "" to tell it from the location.
	Format string
}

// Kind is "vacuum".
func (*Vacuum) Kind() string { return "vacuum" }

// Bind registers vacuum's flags.
func (o *Vacuum) Bind(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Retain, "retain", catalog.DefaultRetention, "keep versions committed and files written within this age (0 with --force: only the latest)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list what would be deleted, delete nothing")
	fs.BoolVar(&o.Force, "force", false, "allow a retention under 24h (on a Delta table, also one under its delta.deletedFileRetentionDuration)")
	fs.StringVar(&o.Format, "format", "", "the table's format, sluice, delta or iceberg (default: told by the location: a folder with _delta_log/ is a Delta table, an iceberg+ location an Iceberg table in its catalog)")
}

// Validate refuses a negative retention, and one under a day without
// --force: a writer may still be about to commit the files it wrote.
func (o *Vacuum) Validate() error {
	switch {
	case o.Retain < 0:
		return bad("retain", "%s: %v", o.Retain, catalog.ErrNegativeRetention)
	case o.Retain < catalog.MinRetention && !o.Force:
		return &BadOption{Flag: "retain", Unsafe: true,
			Msg: fmt.Sprintf("%s: %v (give --force if no writer or reader can still be using older files)", o.Retain, catalog.ErrRetentionTooShort)}
	}
	return checkFormat(o.Format)
}

// VacuumResult is what a vacuum did; it is the --json summary.
type VacuumResult struct {
	Command          string   `json:"command"`
	Table            string   `json:"table"`
	DryRun           bool     `json:"dry_run"`
	FilesDeleted     int      `json:"files_deleted"`
	BytesDeleted     int64    `json:"bytes_deleted"`
	Deleted          []string `json:"deleted"`
	RetainedVersions int      `json:"retained_versions"`
	// WorkPlansDeleted counts the folders of compactions and rollups
	// spread over workers (_sluice/work/<id>/) whose every object was
	// older than the retention; their objects are among Deleted.
	WorkPlansDeleted int      `json:"work_plans_deleted"`
	WorkPlans        []string `json:"work_plans,omitempty"`
	// LogDeleted are a Delta table's log entries that metadata cleanup
	// deleted; Why says why each location went, where the format tells.
	LogDeleted []string          `json:"log_deleted,omitempty"`
	Why        map[string]string `json:"why,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	Iceberg    map[string]any    `json:"iceberg,omitempty"`
	Warns      []string          `json:"warnings,omitempty"`
}

// Line says what was deleted.
func (r VacuumResult) Line() string {
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	line := fmt.Sprintf("vacuum %s: %s %d files (%s), %d versions retained",
		r.Table, verb, r.FilesDeleted, sizeText(r.BytesDeleted), r.RetainedVersions)
	if len(r.LogDeleted) > 0 {
		line += fmt.Sprintf(", %d expired log entries", len(r.LogDeleted))
	}
	if r.WorkPlansDeleted > 0 {
		line += fmt.Sprintf(", %d old work plans", r.WorkPlansDeleted)
	}
	for _, n := range r.Notes {
		line += "; " + n
	}
	return withWarnings(line, r.Warns)
}

// Warnings are the run's warnings: a mirror that could not be synced first.
func (r VacuumResult) Warnings() []string { return r.Warns }

// Run vacuums: the table's mirror, if it has one, first tells which
// files its retained snapshots reference (Env.MirrorKeep).
func (o *Vacuum) Run(ctx context.Context, env Env) (Result, error) {
	res := VacuumResult{Command: "vacuum", Table: cloud.Redact(o.Table), DryRun: o.DryRun, Deleted: []string{}}
	m, err := env.beginMaintained(ctx, o, o.Table, FormatOptions{Format: o.Format, DryRun: true, Deletes: true})
	if err != nil {
		return &res, err
	}
	defer m.Close()
	var keep func(context.Context, time.Time) (map[string]bool, error)
	if t, ok := m.(*catalog.Table); ok && env.MirrorKeep != nil {
		if keep, res.Iceberg, err = env.MirrorKeep(ctx, t, o.Table, o.DryRun); err != nil {
			return &res, classify(err)
		}
	}
	r, err := m.Vacuum(ctx, catalog.VacuumOptions{Retain: o.Retain, Force: o.Force, DryRun: o.DryRun, Keep: keep})
	res.FilesDeleted, res.BytesDeleted, res.Deleted, res.RetainedVersions = len(r.Deleted), r.Bytes, orEmpty(r.Deleted), r.RetainedVersions
	res.LogDeleted, res.Why, res.Notes = r.LogDeleted, r.Why, r.Notes
	res.WorkPlansDeleted, res.WorkPlans = len(r.WorkPlans), r.WorkPlans
	if msg, ok := res.Iceberg["error"].(string); ok {
		res.Warns = append(res.Warns, "the Iceberg mirror was not synced (the next commit or 'sluice iceberg sync' retries): "+msg)
	}
	return &res, classify(err)
}
