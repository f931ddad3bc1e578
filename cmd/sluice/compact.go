package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/compact"
)

func (a *app) compactCommand() *cobra.Command {
	var (
		targetSize     string
		minInputFiles  int
		partitions     []string
		dryRun         bool
		includeCurrent bool
		minFileAge     time.Duration
		maxCommits     int
		workers        int
		memory         string
	)
	cmd := &cobra.Command{
		Use:   "compact TABLE [--target-file-size SIZE] [--min-input-files N] [--partition P] [--dry-run]",
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
others go on; the exit code is then 1.`,
		Example: `  sluice compact ./lake/events --dry-run
  sluice compact s3://lake/events --target-file-size 512MiB --json`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// The command line is checked before the table is opened:
			// a usage error is one whatever the table.
			if err := countsAtLeastOne(cmd, "min-input-files", "max-commits", "workers"); err != nil {
				return err
			}
			var target uint64 // zero: the table's own
			var err error
			if targetSize != "" {
				if target, err = humanize.ParseBytes(targetSize); err != nil || target == 0 {
					return usageError{cmd: "compact", err: fmt.Errorf("--target-file-size %q: want a size such as 256MiB", targetSize)}
				}
			}
			var budget uint64
			if memory != "" {
				if budget, err = humanize.ParseBytes(memory); err != nil || budget == 0 {
					return usageError{cmd: "compact", err: fmt.Errorf("--memory %q: want a size such as 384MiB", memory)}
				}
			}
			bar := a.progress("compacting")
			o := compact.Options{
				Plan: compact.PlanOptions{TargetFileSize: int64(target), MinInputFiles: minInputFiles,
					IncludeCurrent: includeCurrent, MinFileAge: minFileAge, Partitions: partitions},
				Workers: workers, MaxCommits: maxCommits, MemoryBudget: int64(budget),
				DryRun: dryRun, RunID: a.runID, Logger: a.logger,
				Progress: func(done, total int64) { bar.set(int(done>>10), int(total>>10)) },
			}
			if err := o.Validate(); err != nil {
				return usageError{cmd: "compact", err: err}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			defer a.afterCommit(cmd, t)()
			defer runtime.GOMAXPROCS(spareProcs())
			res, runErr := compact.Run(ctx, t, o)
			bar.done()
			if dryRun && !a.jsonOut && runErr == nil {
				fmt.Fprint(a.stdout, res.Plan.String())
			}
			out := map[string]any{"command": "compact", "table": args[0], "dry_run": dryRun,
				"partitions": res.Partitions, "files_in": res.FilesIn, "files_out": res.FilesOut,
				"bytes_in": res.BytesIn, "bytes_out": res.BytesOut, "rows_in": res.Rows, "rows_written": res.Rows,
				"pages_reused": res.PagesReused, "versions": orEmpty(res.Versions), "dropped": orEmpty(res.Dropped), "failed": len(res.Failed)}
			if dryRun {
				filesIn, filesOut, bytesIn := res.Plan.Totals()
				out["partitions"], out["files_in"], out["files_out"], out["bytes_in"] = len(res.Plan.Bins()), filesIn, filesOut, bytesIn
			}
			if len(res.Versions) > 0 {
				out["version"] = res.Versions[len(res.Versions)-1]
			}
			if res.Seconds > 0 {
				out["mb_per_s"] = float64(res.BytesIn) / 1e6 / res.Seconds
			}
			if runErr != nil {
				// What committed before the failure stays committed:
				// the summary says so.
				a.summary(out)
				return fmt.Errorf("compact %s: %w", args[0], runErr)
			}
			if !dryRun {
				a.note("compacted %d partitions: %d files -> %d (%s -> %s) in %.1fs",
					res.Partitions, res.FilesIn, res.FilesOut, sizeText(uint64(res.BytesIn)), sizeText(uint64(res.BytesOut)), res.Seconds)
			}
			a.summary(out)
			return res.Err()
		},
	}
	f := cmd.Flags()
	f.StringVar(&targetSize, "target-file-size", "", "output file size (default: the table's target_file_size, else 256MiB)")
	f.IntVar(&minInputFiles, "min-input-files", 0, "rewrite a partition only with at least this many small files, >= 1 (default 5)")
	f.StringArrayVar(&partitions, "partition", nil, "compact only this partition (e.g. date=2024-01-31); repeatable")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan (partitions, files in and out, bytes) and change nothing")
	f.BoolVar(&includeCurrent, "include-current", false, "also compact the current UTC day's partition")
	f.DurationVar(&minFileAge, "min-file-age", 0, "skip files committed less than this long ago (default 0: off)")
	f.IntVar(&maxCommits, "max-commits", 0, "commit in at most this many groups of partitions, >= 1 (default 10)")
	f.IntVar(&workers, "workers", 0, "bins rewritten at once, >= 1 (default: number of CPUs)")
	f.StringVar(&memory, "memory", "", "bytes all workers together may buffer (default 384MiB)")
	return cmd
}

// spareProcs gives the Go scheduler two Ps per CPU, unless GOMAXPROCS is
// set, and returns the number it had. Most of a compaction's CPU is zstd
// in C (cgo). A goroutine in a C call keeps its thread but soon loses its
// P to the next runnable goroutine; with one P per CPU, the call then
// returns to no P, and its thread sleeps until one is free while the CPU
// it ran on idles. On 2 CPUs that was 5% of a rewrite's CPU time idle
// (perf's sched_switch: threads asleep in exitsyscallNoP) and 115K context
// switches per 10M rows; with 4 Ps there were 39K, and the rewrite ran
// 11% faster (median of 10 interleaved rounds). Ingest, whose decoding
// is Go, ran slower with more Ps, so only compaction asks for them.
func spareProcs() int {
	n := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" {
		return n
	}
	return runtime.GOMAXPROCS(2 * n)
}
