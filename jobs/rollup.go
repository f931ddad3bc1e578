package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/cloud"

	"github.com/sluice-data/sluice/rollup"
)

// Rollup maintains a rolling daily aggregate table from a snapshot plus
// an events table.
type Rollup struct {
	Out      string
	Source   string
	Snapshot string
	Keys     []string
	Time     string
	Measures []string
	Through  string
	TZ       string
	Full     bool
	// Work spreads the rollup over many processes.
	Work RollupWork

	o rollup.Options
}

// Kind is "rollup".
func (*Rollup) Kind() string { return "rollup" }

// Bind registers rollup's flags.
func (o *Rollup) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.Source, "source", "", "the events table (required)")
	fs.StringVar(&o.Snapshot, "snapshot", "", "the snapshot: a sluice table, a Parquet file or a CSV file (required)")
	fs.StringArrayVar(&o.Keys, "key", nil, "key column(s), comma-separated or repeated (required)")
	fs.StringVar(&o.Time, "time", "", "the events' date or timestamp column (required)")
	fs.StringArrayVar(&o.Measures, "measure", nil, "name=sum(col), name=count(), name=min(col), name=max(col) or name=sum_day(col); repeatable (required)")
	fs.StringVar(&o.Through, "through", "", "last day of the output, YYYY-MM-DD (default: the last event day)")
	fs.StringVar(&o.TZ, "tz", "", "count an event's day in this time zone (default UTC)")
	fs.BoolVar(&o.Full, "full", false, "recompute the whole table")
	o.Work.bind(fs)
}

// Validate parses the keys, measures, day and zone, and checks them
// together (names that clash, a measure without a column).
func (o *Rollup) Validate() error {
	ro := rollup.Options{Source: o.Source, Snapshot: o.Snapshot, Time: o.Time, Full: o.Full}
	var errs []error
	for _, k := range o.Keys {
		for _, part := range strings.Split(k, ",") {
			if part = strings.TrimSpace(part); part != "" {
				ro.Keys = append(ro.Keys, part)
			}
		}
	}
	for _, s := range o.Measures {
		m, err := rollup.ParseMeasure(s)
		if err != nil {
			errs = append(errs, bad("measure", "%v", err))
			continue
		}
		ro.Measures = append(ro.Measures, m)
	}
	if o.Through != "" {
		d, err := time.Parse(time.DateOnly, o.Through)
		if err != nil {
			errs = append(errs, bad("through", "%q: want YYYY-MM-DD", o.Through))
		}
		ro.Through = d
	}
	if o.TZ != "" {
		loc, err := time.LoadLocation(o.TZ)
		if err != nil {
			errs = append(errs, bad("tz", "%q: not a time zone (want an IANA name such as America/New_York)", o.TZ))
		}
		ro.Location = loc
	}
	errs = append(errs, o.Work.validate()...)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := ro.Validate(); err != nil {
		return fmt.Errorf("%w: %s", ErrBadOption, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	o.o = ro
	return nil
}

// RollupResult is what a rollup did; it is the --json summary.
type RollupResult struct {
	Command            string  `json:"command"`
	Table              string  `json:"table"`
	EventsRead         int64   `json:"events_read"`
	EventsExcluded     int64   `json:"events_excluded"`
	EventsAfterThrough int64   `json:"events_after_through"`
	EventsWithoutTime  int64   `json:"events_without_time"`
	Keys               int     `json:"keys"`
	Days               int     `json:"days"`
	SnapshotDay        string  `json:"snapshot_day"`
	FirstDay           string  `json:"first_day"`
	Through            string  `json:"through"`
	LastEventDay       string  `json:"last_event_day"`
	CellsWritten       int64   `json:"cells_written"`
	RowsWritten        int64   `json:"rows_written"`
	KeysRestated       int     `json:"keys_restated"`
	CellsRestated      int64   `json:"cells_restated"`
	PartitionsReplaced int     `json:"partitions_replaced"`
	PartitionsWritten  int     `json:"partitions_written"`
	SourceVersionFrom  int64   `json:"source_version_from"`
	SourceVersionTo    int64   `json:"source_version_to"`
	Version            int64   `json:"version"`
	Full               bool    `json:"full"`
	FullReason         string  `json:"full_reason"`
	Snapshot           string  `json:"snapshot"`
	seconds            float64 // in Line
	smallFiles
	Warns []string `json:"warnings,omitempty"`
}

// Line says what was rolled up.
func (r RollupResult) Line() string {
	var line string
	switch {
	case r.Version == 0:
		line = fmt.Sprintf("rollup %s: up to date with source version %d, through %s", r.Table, r.SourceVersionTo, r.Through)
	case r.Full:
		line = fmt.Sprintf("rollup %s: full recompute (%s): %d keys x %d days through %s, version %d; %.1f s", r.Table, r.FullReason, r.Keys, r.Days, r.Through, r.Version, r.seconds)
	default:
		line = fmt.Sprintf("rollup %s: restated %d cells of %d keys from %s through %s, version %d; %.1f s", r.Table, r.CellsRestated, r.KeysRestated, r.FirstDay, r.Through, r.Version, r.seconds)
	}
	return withWarnings(line, r.Warns)
}

// Warnings are the run's warnings.
func (r RollupResult) Warnings() []string { return r.Warns }

// Run rolls up.
func (o *Rollup) Run(ctx context.Context, env Env) (Result, error) {
	if o.Work.on() {
		return o.runWork(ctx, env)
	}
	res := RollupResult{Command: "rollup", Table: o.Out}
	t, err := env.begin(ctx, o, o.Out)
	if err != nil {
		return &res, err
	}
	defer t.Close()
	src, err := env.openRead(ctx, o.Source)
	if err != nil {
		return &res, classify(fmt.Errorf("rollup %s: source %s: %w", o.Out, cloud.Redact(o.Source), err))
	}
	defer src.Close()
	bar := env.progress("rolling up")
	ro := o.o
	ro.RunID, ro.Logger = env.RunID, env.logger()
	ro.Progress = func(done, total int64) { bar.Set(done>>10, total>>10) }
	r, err := rollup.RunSource(ctx, t, src, ro)
	bar.Done()
	res = RollupResult{Command: "rollup", Table: cloud.Redact(o.Out), EventsRead: r.EventsRead, EventsExcluded: r.EventsExcluded,
		EventsAfterThrough: r.EventsAfter, EventsWithoutTime: r.EventsNoTime, Keys: r.Keys, Days: r.Days,
		SnapshotDay: r.SnapshotDay, FirstDay: r.First, Through: r.Through, LastEventDay: r.LastEventDay,
		CellsWritten: r.CellsWritten, RowsWritten: r.CellsWritten, KeysRestated: r.KeysRestated, CellsRestated: r.CellsRestated,
		PartitionsReplaced: r.PartitionsReplaced, PartitionsWritten: r.PartitionsWritten,
		SourceVersionFrom: r.SourceFrom, SourceVersionTo: r.SourceTo, Version: r.Version, Full: r.Full, FullReason: r.Reason,
		Snapshot: r.Snapshot, seconds: r.Seconds}
	if err != nil {
		return &res, classify(fmt.Errorf("rollup %s: %w", o.Out, err))
	}
	if warn := noEventWarning(r.Through, r.SnapshotDay, r.LastEventDay); warn != "" {
		res.Warns = append(res.Warns, warn)
	}
	return &res, nil
}
