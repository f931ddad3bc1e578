package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/jobs"
)

func (a *app) compactCommand() *cobra.Command {
	var o jobs.Compact
	cmd := &cobra.Command{
		Use:   "compact TABLE [--target-file-size SIZE] [--min-input-files N] [--partition P] [--dry-run] [--sort-by COLS|--zorder-by COLS] [--plan|--worker|--commit --plan-id ID --shard i/n]",
		Short: "Bin-pack small Parquet files into large ones",
		Long: `Rewrite each partition's small files (under 75% of the target size) into
files near the target, verify that the rows are the same (count, null counts
and a checksum of every row), and commit the swap atomically, marked as no
data change. A partition is rewritten only with at least --min-input-files
small files or more than one target's worth of them; a second run does
nothing. The current UTC day is skipped unless --include-current, so that
ingest, still writing it, wins; --min-file-age skips young files.

Replaced files stay in older versions until 'sluice vacuum' removes them.
One partition's failure (an incompatible or corrupt file) is reported and the
others go on; the exit code is then 1.

A Delta Lake table (a folder with _delta_log/, or --format delta) is
compacted in place and stays a Delta table: each group of partitions is one
Delta commit as Spark's OPTIMIZE writes it (remove and add, dataChange
false, stats, commitInfo), rebased over its other writers' appends, dropped
for the next run when one of them removed an input. On S3 it commits only
with --delta-s3-conditional-writers: Spark's S3 log store does not write
conditionally, so nothing would keep it from overwriting sluice's commit.

--sort-by a,b sorts each partition's rewritten rows, across its files and
within them (2MiB row groups, recorded as sorting_columns), so that a
reader's filter on a skips most row groups; --zorder-by a,b interleaves
the columns' bits so that a filter on either skips files. The sort spills
to TMPDIR beyond a share of --memory. The table properties compact.sort_by
and compact.zorder_by make either the default; --sort-by '' turns it off
for one run. Files the planner leaves alone are not rewritten only to sort
them. Spread over many processes, --plan records the order in the plan and
makes one unit per partition; the workers follow it.

Spread over many processes (an Indexed Job's pods, an Argo workflow's
steps): --plan writes the plan once (units: bins of one partition's small
files), --worker rewrites and verifies its shard's units (--shard i/n) and
then those of dead or slow workers, --commit commits the units that are
done (partial progress is kept) and closes the plan when all are. One
process may take all three steps; --plan-id names the plan so that all pods
of one Job share it. A pod of an Indexed Job takes its shard from
JOB_COMPLETION_INDEX and JOB_COMPLETIONS. See docs/kubernetes.md.`,
		Example: `  sluice compact ./lake/events --dry-run
  sluice compact s3://lake/events --target-file-size 512MiB --json
  sluice compact ./lake/events_delta --json            # a Delta table, in place`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Table = args[0]
			if err := o.Validate(); err != nil {
				return usageError{cmd: "compact", err: fmt.Errorf("compact: %s", strings.ReplaceAll(err.Error(), "\n", "; "))}
			}
			if err := a.runJob(cmd, &o); err != nil {
				return err
			}
			if res, ok := a.result.(*jobs.CompactResult); ok && o.DryRun && !a.jsonOut {
				fmt.Fprint(a.stdout, res.Plan.String())
			}
			return nil
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}
