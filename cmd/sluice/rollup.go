package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/jobs"
)

func (a *app) rollupCommand() *cobra.Command {
	var o jobs.Rollup
	cmd := &cobra.Command{
		Use:   "rollup OUT --source TABLE --snapshot LOC --key col[,col] --time col --measure name=sum(col) [--through YYYY-MM-DD] [--tz ZONE] [--full] [--plan|--worker|--commit --plan-id ID --shard i/n]",
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
--full recomputes and gives the identical table.

The source may be a Delta table (a folder with _delta_log/ and no sluice
table): the rows live at its newest version are read, partition columns
from the log, typed as its schema says. A rerun at the same Delta version
does nothing; at a new one it recomputes in full ("the source is a Delta
table").

Spread over many processes (an Indexed Job's pods, an Argo workflow's
steps): --plan decides the run once for n shards of the keys (--shard i/n),
--worker computes its shard and then those of dead workers, --commit
commits every shard in one commit once all are done (waiting up to
--commit-wait). Every step takes the same options as a one-process run;
--plan-id names the plan so that all pods of one Job share it. A pod of an
Indexed Job takes its shard from JOB_COMPLETION_INDEX and JOB_COMPLETIONS.
See docs/kubernetes.md.`,
		Example: `  sluice rollup ./lake/list_rollup --source ./lake/events --snapshot ./snapshots/lists.parquet \
      --key list_id --time event_time --measure 'subscribers=sum(tally)' --measure 'events=count()'`,
		Args: exactArgs(1, "OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out = args[0]
			if err := o.Validate(); err != nil {
				return usageError{cmd: "rollup", err: fmt.Errorf("rollup: %s", strings.ReplaceAll(err.Error(), "\n", "; "))}
			}
			return a.runJob(cmd, &o)
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}
