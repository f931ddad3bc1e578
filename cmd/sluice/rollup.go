package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/rollup"
)

func (a *app) rollupCommand() *cobra.Command {
	var (
		source, snapshot, timeCol, through, tz string
		keys, measureArgs                      []string
		full                                   bool
	)
	cmd := &cobra.Command{
		Use:   "rollup OUT --source TABLE --snapshot LOC --key col[,col] --time col --measure name=sum(col) [--through YYYY-MM-DD] [--tz ZONE] [--full]",
		Short: "Maintain a rolling daily aggregate table from a snapshot plus events",
		Long: `Write OUT, a table partitioned by date: one row per key of (snapshot ∪
events) per day from the snapshot day through --through (default: the last
event day). A running measure name=sum(col) is the snapshot's base (its
column named like the measure; 0 for a key it lacks) plus the key's events
of every day up to that one; count(), min(col), max(col) and sum_day(col)
are per-day values. A measure over an int32 or int64 column is int64, over
a float64 column float64; over a decimal(p,s) column (p <= 18) sums are
exact decimal(38,s), min and max decimal(p,s). Events on or before the snapshot day are already in the
snapshot: they are not added again, and --json counts them. A sum that does
not fit its column (an int64 day's sum or running total, a decimal past 38
digits) fails the run, naming the measure, the key and the day, and nothing
is written.

The snapshot (LOC) is a sluice table, a Parquet file or a CSV file (with a
header line) with the key columns,
a column per running measure and date. A rerun restates only the days that
changed since the source version OUT reflects (late events included), from
the totals OUT stores for the day before; nothing new commits nothing;
--full recomputes and gives the identical table.`,
		Example: `  sluice rollup ./lake/list_rollup --source ./lake/events --snapshot ./snapshots/lists.parquet \
      --key list_id --time event_time --measure 'subscribers=sum(tally)' --measure 'events=count()'`,
		Args: exactArgs(1, "OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := rollup.Options{Source: source, Snapshot: snapshot, Time: timeCol, Full: full, RunID: a.runID, Logger: a.logger}
			for _, k := range keys {
				for _, part := range strings.Split(k, ",") {
					if part = strings.TrimSpace(part); part != "" {
						o.Keys = append(o.Keys, part)
					}
				}
			}
			for _, s := range measureArgs {
				m, err := rollup.ParseMeasure(s)
				if err != nil {
					return usageError{cmd: "rollup", err: fmt.Errorf("--measure: %w", err)}
				}
				o.Measures = append(o.Measures, m)
			}
			if through != "" {
				d, err := time.Parse(time.DateOnly, through)
				if err != nil {
					return usageError{cmd: "rollup", err: fmt.Errorf("--through %q: want YYYY-MM-DD", through)}
				}
				o.Through = d
			}
			if tz != "" {
				loc, err := time.LoadLocation(tz)
				if err != nil {
					return usageError{cmd: "rollup", err: fmt.Errorf("--tz %q: not a time zone (want an IANA name such as America/New_York)", tz)}
				}
				o.Location = loc
			}
			if err := o.Validate(); err != nil {
				return usageError{cmd: "rollup", err: fmt.Errorf("rollup: %s", strings.ReplaceAll(err.Error(), "\n", "; "))}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			defer a.afterCommit(cmd, t)()
			bar := a.progress("rolling up")
			o.Progress = func(done, total int64) { bar.set(int(done>>10), int(total>>10)) }
			res, runErr := rollup.Run(cmd.Context(), t, o)
			bar.done()
			a.summary(map[string]any{"command": "rollup", "table": args[0],
				"events_read": res.EventsRead, "events_excluded": res.EventsExcluded,
				"events_after_through": res.EventsAfter, "events_without_time": res.EventsNoTime,
				"keys": res.Keys, "days": res.Days, "snapshot_day": res.SnapshotDay, "first_day": res.First, "through": res.Through,
				"cells_written": res.CellsWritten, "rows_written": res.CellsWritten,
				"keys_restated": res.KeysRestated, "cells_restated": res.CellsRestated,
				"partitions_replaced": res.PartitionsReplaced, "partitions_written": res.PartitionsWritten,
				"source_version_from": res.SourceFrom, "source_version_to": res.SourceTo,
				"version": res.Version, "full": res.Full, "full_reason": res.Reason, "snapshot": res.Snapshot})
			if runErr != nil {
				return fmt.Errorf("rollup %s: %w", args[0], runErr)
			}
			switch {
			case res.Version == 0:
				a.note("rollup %s: up to date with source version %d", args[0], res.SourceTo)
			case res.Full:
				a.note("rollup %s: full recompute (%s): %d keys x %d days in %.1fs", args[0], res.Reason, res.Keys, res.Days, res.Seconds)
			default:
				a.note("rollup %s: restated %d cells of %d keys from %s in %.1fs", args[0], res.CellsRestated, res.KeysRestated, res.First, res.Seconds)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&source, "source", "", "the events table (required)")
	f.StringVar(&snapshot, "snapshot", "", "the snapshot: a sluice table, a Parquet file or a CSV file (required)")
	f.StringArrayVar(&keys, "key", nil, "key column(s), comma-separated or repeated (required)")
	f.StringVar(&timeCol, "time", "", "the events' date or timestamp column (required)")
	f.StringArrayVar(&measureArgs, "measure", nil, "name=sum(col), name=count(), name=min(col), name=max(col) or name=sum_day(col); repeatable (required)")
	f.StringVar(&through, "through", "", "last day of the output, YYYY-MM-DD (default: the last event day)")
	f.StringVar(&tz, "tz", "", "count an event's day in this time zone (default UTC)")
	f.BoolVar(&full, "full", false, "recompute the whole table")
	return cmd
}
