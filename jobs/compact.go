package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/cloud"

	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/scheduler"
)

// Compact bin-packs a table's small files into large ones.
type Compact struct {
	Table          string
	TargetFileSize size
	MinInputFiles  count
	Partitions     []string
	DryRun         bool
	IncludeCurrent bool
	MinFileAge     time.Duration
	MaxCommits     count
	Workers        count
	Memory         size
	// SortBy and ZOrderBy order the rows of the rewritten files; set to
	// empty, no order whatever the table's properties say.
	SortBy, ZOrderBy columns
	// Format is the table's format: "" to tell it from the location.
	Format string
	// DeltaS3ConditionalWriters: see FormatOptions.
	DeltaS3ConditionalWriters bool
	// Work spreads the compaction over many processes.
	Work CompactWork

	o compact.Options
}

// Kind is "compact".
func (*Compact) Kind() string { return "compact" }

// Bind registers compact's flags.
func (o *Compact) Bind(fs *pflag.FlagSet) {
	fs.Var(&o.TargetFileSize, "target-file-size", "output file size (default: the table's target_file_size, else 256MiB)")
	fs.Var(&o.MinInputFiles, "min-input-files", "rewrite a partition only with at least this many small files, >= 1 (default 5)")
	fs.StringArrayVar(&o.Partitions, "partition", nil, "compact only this partition (e.g. date=2024-01-31); repeatable")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the plan (partitions, files in and out, bytes) and change nothing")
	fs.BoolVar(&o.IncludeCurrent, "include-current", false, "also compact the current UTC day's partition")
	fs.DurationVar(&o.MinFileAge, "min-file-age", 0, "skip files committed less than this long ago (default 0: off)")
	fs.Var(&o.MaxCommits, "max-commits", "commit in at most this many groups of partitions, >= 1 (default 10)")
	fs.Var(&o.Workers, "workers", "bins rewritten at once, >= 1 (default: number of CPUs)")
	fs.Var(&o.Memory, "memory", "bytes all workers together may buffer (default 384MiB)")
	fs.Var(&o.SortBy, "sort-by", "sort the rows of each partition's rewritten files by these columns, comma-separated (default: the table's compact.sort_by property; '' for none)")
	fs.Var(&o.ZOrderBy, "zorder-by", "z-order the rows of each partition's rewritten files by these columns, comma-separated (default: the table's compact.zorder_by property; '' for none)")
	fs.StringVar(&o.Format, "format", "", "the table's format, sluice, delta or iceberg (default: told by the location: a folder with _delta_log/ is a Delta table, an iceberg+ location an Iceberg table in its catalog)")
	fs.BoolVar(&o.DeltaS3ConditionalWriters, "delta-s3-conditional-writers", false, "commit to a Delta table on S3: every writer of it commits with conditional puts (Spark's S3 log store does not)")
	o.Work.bind(fs)
}

// Validate checks every option and builds the compaction's options.
func (o *Compact) Validate() error {
	var errs []error
	for _, c := range []struct {
		flag string
		c    *count
	}{{"min-input-files", &o.MinInputFiles}, {"max-commits", &o.MaxCommits}, {"workers", &o.Workers}} {
		if err := c.c.check(c.flag); err != nil {
			errs = append(errs, err)
		}
	}
	target, err := o.TargetFileSize.bytes("target-file-size", 1<<40)
	if err != nil {
		errs = append(errs, err)
	}
	memory, err := o.Memory.bytes("memory", 1<<50)
	if err != nil {
		errs = append(errs, err)
	}
	if o.MinFileAge < 0 {
		errs = append(errs, bad("min-file-age", "%s: want a duration >= 0", o.MinFileAge))
	}
	if err := checkFormat(o.Format); err != nil {
		errs = append(errs, err)
	}
	for _, p := range o.Partitions {
		if !strings.Contains(p, "=") {
			errs = append(errs, bad("partition", "%q: want a Hive folder such as date=2024-01-31", p))
		}
	}
	// A spread compaction's plan records the order its workers follow.
	order, err := o.ordering()
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.Work.validate(o)...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	co := compact.Options{
		Plan: compact.PlanOptions{TargetFileSize: target, MinInputFiles: int(o.MinInputFiles.n),
			IncludeCurrent: o.IncludeCurrent, MinFileAge: o.MinFileAge, Partitions: o.Partitions, Order: order},
		Workers: int(o.Workers.n), MaxCommits: int(o.MaxCommits.n), MemoryBudget: memory, DryRun: o.DryRun, Order: order}
	if err := co.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOption, err)
	}
	o.o = co
	return nil
}

// columns is a flag of comma-separated column names that knows whether
// it was given, so that an empty --sort-by turns a table's ordering off.
type columns struct {
	text string
	set  bool
}

func (c *columns) String() string { return c.text }
func (c *columns) Type() string   { return "columns" }
func (c *columns) Set(v string) error {
	c.text, c.set = v, true
	return nil
}

// ordering is the compaction's order of rows: nil (the table's
// properties say) when neither --sort-by nor --zorder-by is given.
func (o *Compact) ordering() (*compact.Ordering, error) {
	sortBy, zorderBy := compact.ParseColumns(o.SortBy.text), compact.ParseColumns(o.ZOrderBy.text)
	switch {
	case len(sortBy) > 0 && len(zorderBy) > 0:
		return nil, bad("zorder-by", "and --sort-by: give one")
	case len(zorderBy) > 0:
		return &compact.Ordering{Columns: zorderBy, ZOrder: true}, nil
	case len(sortBy) > 0:
		return &compact.Ordering{Columns: sortBy}, nil
	case o.SortBy.set || o.ZOrderBy.set:
		return &compact.Ordering{}, nil
	}
	return nil, nil
}

func (o *Compact) memoryBudget() int64 {
	if n, err := o.Memory.bytes("memory", 1<<50); err == nil && n > 0 {
		return n
	}
	return compact.DefaultMemoryBudget
}

func (*Compact) spareProcs() bool { return true }

// CompactResult is what a compaction did; it is the --json summary.
type CompactResult struct {
	Command     string `json:"command"`
	Table       string `json:"table"`
	DryRun      bool   `json:"dry_run"`
	Partitions  int    `json:"partitions"`
	FilesIn     int64  `json:"files_in"`
	FilesOut    int64  `json:"files_out"`
	BytesIn     int64  `json:"bytes_in"`
	BytesOut    int64  `json:"bytes_out"`
	RowsIn      int64  `json:"rows_in"`
	RowsWritten int64  `json:"rows_written"`
	// RowsDeleted are input rows other files deleted (an Iceberg table's
	// position deletes), left out: rows_written = rows_in - rows_deleted.
	RowsDeleted int64    `json:"rows_deleted"`
	PagesReused int      `json:"pages_reused"`
	Versions    []int64  `json:"versions"`
	Version     int64    `json:"version,omitempty"`
	Dropped     []string `json:"dropped"`
	Failed      int      `json:"failed"`
	MBPerS      float64  `json:"mb_per_s,omitempty"`
	// Checkpoint says what the table's format wrote after the commits
	// (a Delta checkpoint, an Iceberg table's merged manifests).
	Checkpoint string `json:"checkpoint,omitempty"`
	smallFiles
	Warns []string `json:"warnings,omitempty"`
	// Plan is the plan, as --dry-run prints it.
	Plan    compact.Plan `json:"-"`
	seconds float64
}

// Line says what was compacted.
func (r CompactResult) Line() string {
	if r.DryRun {
		return withWarnings(fmt.Sprintf("would compact %d partitions of %s: %d files -> %d (%s)",
			r.Partitions, r.Table, r.FilesIn, r.FilesOut, sizeText(r.BytesIn)), r.Warns)
	}
	return withWarnings(fmt.Sprintf("compacted %d partitions of %s: %d files -> %d (%s -> %s), version %d; %.1f s",
		r.Partitions, r.Table, r.FilesIn, r.FilesOut, sizeText(r.BytesIn), sizeText(r.BytesOut), r.Version, r.seconds), r.Warns)
}

// Warnings are the run's warnings.
func (r CompactResult) Warnings() []string { return r.Warns }

// Run compacts. One partition's failure does not stop the others: the
// error then joins the failures, and the result counts what committed.
func (o *Compact) Run(ctx context.Context, env Env) (Result, error) {
	if o.Work.on() {
		return o.runWork(ctx, env)
	}
	res := CompactResult{Command: "compact", Table: cloud.Redact(o.Table), DryRun: o.DryRun, Versions: []int64{}, Dropped: []string{}}
	t, err := env.beginMaintained(ctx, o, o.Table, FormatOptions{Format: o.Format,
		DeltaS3ConditionalWriters: o.DeltaS3ConditionalWriters, DryRun: o.DryRun})
	if err != nil {
		return &res, err
	}
	defer t.Close()
	bar := env.progress("compacting")
	co := o.o
	co.RunID, co.Logger = env.RunID, env.logger()
	co.Progress = func(done, total int64) { bar.Set(done>>10, total>>10) }
	r, runErr := compact.Run(ctx, t, co)
	bar.Done()
	res.Plan, res.seconds = r.Plan, r.Seconds
	res.Partitions, res.FilesIn, res.FilesOut = r.Partitions, int64(r.FilesIn), int64(r.FilesOut)
	res.BytesIn, res.BytesOut, res.RowsIn, res.RowsWritten, res.RowsDeleted = r.BytesIn, r.BytesOut, r.Rows, r.Rows-r.RowsDeleted, r.RowsDeleted
	res.PagesReused, res.Versions, res.Dropped, res.Failed = r.PagesReused, orEmpty(r.Versions), orEmpty(r.Dropped), len(r.Failed)
	if o.DryRun {
		filesIn, filesOut, bytesIn := r.Plan.Totals()
		res.Partitions, res.FilesIn, res.FilesOut, res.BytesIn = len(r.Plan.Bins()), filesIn, filesOut, bytesIn
	}
	if len(r.Versions) > 0 {
		res.Version = r.Versions[len(r.Versions)-1]
	}
	if !o.DryRun {
		// Whatever else happened, what committed is settled (a Delta
		// checkpoint); its failure undoes nothing and only warns.
		note, err := t.Settle(ctx)
		res.Checkpoint = note
		if err != nil {
			res.Warns = append(res.Warns, fmt.Sprintf("the compaction's commits stand, but %v", err))
		}
	}
	if r.Seconds > 0 {
		res.MBPerS = float64(r.BytesIn) / 1e6 / r.Seconds
	}
	if runErr != nil {
		// What committed before the failure stays committed: the
		// result says so.
		return &res, classify(fmt.Errorf("compact %s: %w", o.Table, runErr))
	}
	if w := heldBack(r.Plan); w != "" {
		res.Warns = append(res.Warns, w)
	}
	return &res, classify(r.Err())
}

// heldBack warns of a plan with nothing to do only because partitions
// with small files were held back: the current day (without
// --include-current), or files younger than --min-file-age.
func heldBack(p compact.Plan) string {
	if len(p.Bins()) > 0 {
		return ""
	}
	var current, young []string
	for _, pp := range p.Partitions {
		switch {
		case pp.Skip == "current day":
			current = append(current, pp.Partition)
		case strings.HasPrefix(pp.Skip, "no small files old enough"):
			young = append(young, pp.Partition)
		}
	}
	var parts []string
	if len(current) > 0 {
		parts = append(parts, fmt.Sprintf("%s is the current UTC day (--include-current compacts it)", strings.Join(current, ", ")))
	}
	if len(young) > 0 {
		parts = append(parts, fmt.Sprintf("%d partitions have only small files younger than --min-file-age", len(young)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "nothing compacted: " + strings.Join(parts, "; ")
}

// checkFormat refuses a --format that is not a table format.
func checkFormat(format string) error {
	if format != "" && !slices.Contains(scheduler.TableFormats, format) {
		return bad("format", "%q: want one of %s", format, strings.Join(scheduler.TableFormats, ", "))
	}
	return nil
}
