package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
	"github.com/sluice-data/sluice/scheduler"
)

func (a *app) ingestCommand() *cobra.Command {
	var (
		from, format, quarantine, epochUnit, maxRecordBytes, memory, onGap string
		until                                                              string
		maxRecords                                                         int64
		minAge                                                             time.Duration
		ordered                                                            bool
		dedupKey                                                           string
		dedupWindow                                                        time.Duration
	)
	var group, instanceID string
	cmd := &cobra.Command{
		Use:   "ingest TABLE --from SOURCE [--format jsonl|csv|parquet] [--max-records N] [--quarantine TABLE2] [--min-age D] [--until TIME] [--on-gap fail|skip]",
		Short: "Ingest landing files or a Kafka topic into a table, exactly once",
		Long: `Append the landing files under SOURCE (a path, file://, s3:// or az:// prefix)
that TABLE has not taken yet, and record them in the same commit: a rerun
takes only new files; a crashed run leaves nothing half-done and is redone.

Formats by extension: .jsonl/.json/.ndjson (JSON lines), .csv (header row),
.parquet; .gz and .zst compressed. --format overrides the extension.
Records are validated against the table schema; a bad one goes to the
quarantine table (default: TABLE + "_quarantine", beside it) with the
reason and its file:line. A file that cannot be read as a whole (a truncated
gzip, a Parquet file of an incompatible schema) is reported, not recorded,
and retried by the next run; the others are committed and the exit code is 1.

Files younger than --min-age are left for the next run: a producer may
still be writing them. --until TIME (RFC 3339) stops at TIME: files
modified after it are left for a later run, and a Kafka run reads each
partition up to its first record timestamped at or after TIME. A scheduled
ingest job passes its interval's end, so a rerun of an interval takes the
same input.

A Kafka source, kafka://host:port[,host:port]/topic, is read per partition
from the offset TABLE records up to the end offset listed when the run is
given the partition, with read_committed isolation; each record's value is
one JSON object. The offsets are committed with the files. Records that
retention deleted before they were read fail the run, or with --on-gap
skip are recorded as a gap and skipped.

Instances ingesting one topic into one table share its partitions through
a consumer group (--group, default "sluice:" + the table's location), each
committing the offsets of its own partitions; the group's offsets are
written after each commit so that Kafka tools show the lag.

--dedup-key COL drops a valid record whose COL value the table's commits of
the last --dedup-window (24h by default) already wrote, or an earlier record
of the same run has: for producers that retry. The summary counts them in
records_deduplicated: records_in = rows_written + records_quarantined +
records_deduplicated.`,
		Example: `  sluice ingest ./lake/events --from s3://landing/events/ --json
  sluice ingest ./lake/events --from kafka://broker1:9092,broker2:9092/events --max-records 1000000
  sluice ingest ./lake/events --from ./incoming --format csv --min-age 2m`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usageError{cmd: "ingest", err: errors.New("ingest: --from SOURCE is required")}
			}
			if err := countsAtLeastOne(cmd, "max-records"); err != nil {
				return err
			}
			kafka := strings.HasPrefix(strings.ToLower(from), "kafka://")
			o := ingest.Options{Format: ingest.Format(format), MaxRecords: maxRecords, MinAge: minAge,
				EpochUnit: ingest.EpochUnit(epochUnit), Quarantine: quarantine, OrderedNames: ordered,
				OnGap: ingest.GapPolicy(onGap), RunID: a.runID, Logger: a.logger}
			o.Group, o.InstanceID = group, instanceID
			o.DedupKey, o.DedupWindow = dedupKey, dedupWindow
			if until != "" {
				t, err := time.Parse(time.RFC3339Nano, until)
				if err != nil {
					return usageError{cmd: "ingest", err: fmt.Errorf("--until %q: want an RFC 3339 time such as 2024-05-01T00:00:00Z", until)}
				}
				o.Until = t
			}
			if memory != "" {
				n, err := humanize.ParseBytes(memory)
				if err != nil || n == 0 || n > 1<<50 {
					return usageError{cmd: "ingest", err: fmt.Errorf("--memory %q: want a size such as 256MiB", memory)}
				}
				o.MemoryBudget = int64(n)
			}
			// Unset, the record limit is 1 MiB or what --memory holds.
			if cmd.Flags().Changed("max-record-bytes") {
				n, err := humanize.ParseBytes(maxRecordBytes)
				if err != nil || n == 0 || n > 1<<40 {
					return usageError{cmd: "ingest", err: fmt.Errorf("--max-record-bytes %q: want a size such as 1MiB", maxRecordBytes)}
				}
				o.MaxRecordBytes = int(n)
			}
			if err := recordFits(o); err != nil {
				return usageError{cmd: "ingest", err: err}
			}
			if err := o.Validate(); err != nil {
				return usageError{cmd: "ingest", err: err}
			}
			budget := o.MemoryBudget
			if budget == 0 {
				budget = ingest.DefaultMemoryBudget
			}
			tuneGC(budget)
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			defer a.afterCommit(cmd, t)()
			what := "ingesting files"
			if kafka {
				what = "ingesting records"
			}
			bar := a.progress(what)
			o.Progress = bar.set
			res, err := ingest.Run(cmd.Context(), t, from, o)
			bar.done()
			if err != nil && !errors.Is(err, ingest.ErrFilesFailed) {
				// The counts say how far the run got, and the versions
				// what it committed before the failure (a Kafka run
				// commits as partitions move; the quarantine table
				// commits first), as on a success.
				a.summary(ingestSummary(args[0], from, kafka, res))
				if errors.Is(err, catalog.ErrTableNotFound) {
					return fmt.Errorf("%w (create it first with 'sluice init')", err)
				}
				return err
			}
			if res.RecordsDeduplicated > 0 {
				a.note("%d records dropped as duplicates of --dedup-key %s", res.RecordsDeduplicated, dedupKey)
			}
			if kafka {
				a.note("%d records, %d rows written, %d quarantined, %d skipped by retention; %s at version %d",
					res.RecordsIn, res.RowsWritten, res.RecordsQuarantined, res.RecordsSkipped, args[0], res.Version)
			} else {
				a.note("took %d of %d files: %d records, %d rows written, %d quarantined, %d files failed; %s at version %d",
					res.FilesIn, res.FilesSeen, res.RecordsIn, res.RowsWritten, res.RecordsQuarantined, res.FilesFailed, args[0], res.Version)
			}
			a.summary(ingestSummary(args[0], from, kafka, res))
			return err
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "landing prefix (path, file://, s3://, az://) or kafka://host:port[,host:port]/topic")
	cmd.Flags().StringVar(&format, "format", "", "jsonl, csv or parquet (default: by each file's extension)")
	cmd.Flags().Int64Var(&maxRecords, "max-records", 0, "stop once this many records were read (landing files are taken whole; Kafka stops exactly)")
	cmd.Flags().StringVar(&quarantine, "quarantine", "", "quarantine table for bad records (default: TABLE + \"_quarantine\")")
	cmd.Flags().DurationVar(&minAge, "min-age", 0, "leave files modified more recently than this for the next run")
	cmd.Flags().StringVar(&until, "until", "", "stop at this RFC 3339 time: later files and Kafka records wait for a later run")
	cmd.Flags().StringVar(&epochUnit, "epoch-unit", "s", "unit of numeric timestamps: s, ms or us")
	cmd.Flags().StringVar(&maxRecordBytes, "max-record-bytes", "1MiB",
		fmt.Sprintf("largest record accepted; larger ones are quarantined (at most a %dth of --memory)", ingest.RecordMemoryMultiple))
	cmd.Flags().StringVar(&memory, "memory", sizeText(ingest.DefaultMemoryBudget),
		"memory budget of the run: rows buffered, the largest record, fetched batches; the process aims to stay within it plus "+sizeText(gcHeadroom))
	cmd.Flags().BoolVar(&ordered, "ordered-names", false, "landing file names only increase: keep a high-water mark in the checkpoint instead of every name")
	cmd.Flags().StringVar(&dedupKey, "dedup-key", "", "drop records whose value of this column the table's commits of the --dedup-window, or earlier records of the run, already wrote")
	cmd.Flags().DurationVar(&dedupWindow, "dedup-window", 0, "how far back, by commit time, --dedup-key looks (default 24h)")
	cmd.Flags().StringVar(&onGap, "on-gap", "fail", "Kafka: when retention deleted records not yet read, fail, or skip them and record the gap")
	cmd.Flags().StringVar(&group, "group", "", "Kafka: consumer group sharing the topic's partitions between instances (default \"sluice:\" + the table's location)")
	cmd.Flags().StringVar(&instanceID, "instance-id", "", "Kafka: static group member ID; a restart with the same ID takes its partitions back at once (one running instance per ID)")
	return cmd
}

// ingestSummary is ingest's --json summary of res.
func ingestSummary(table, from string, kafka bool, res ingest.Result) map[string]any {
	out := map[string]any{"command": "ingest", "table": table, "source": from,
		"records_in": res.RecordsIn, "rows_written": res.RowsWritten, "records_quarantined": res.RecordsQuarantined,
		"files_in": res.FilesIn, "files_failed": res.FilesFailed, "files_waiting": res.FilesWaiting,
		"files_out": res.FilesOut, "bytes_in": res.BytesIn, "version": res.Version,
		"partitions": orEmpty(res.Partitions)}
	out["records_deduplicated"] = res.RecordsDeduplicated
	if kafka {
		out["records_skipped"] = res.RecordsSkipped
		out["kafka_partitions"] = orEmpty(res.KafkaPartitions)
		lag := map[string]int64{}
		for p, n := range res.KafkaLag {
			lag[strconv.Itoa(int(p))] = n
		}
		out[scheduler.KafkaLagKey] = lag
	}
	if res.QuarantineVersion > 0 {
		out["quarantine_version"] = res.QuarantineVersion
	}
	return out
}

// recordFits refuses a --max-record-bytes that --memory cannot hold: a
// record takes up to ingest.RecordMemoryMultiple times its size on its way
// to a Parquet file, and the run must stay within --memory whatever its
// records.
func recordFits(o ingest.Options) error {
	budget := o.MemoryBudget
	if budget == 0 {
		budget = ingest.DefaultMemoryBudget
	}
	if o.MaxRecordBytes <= ingest.MaxRecordBytesFor(budget) {
		return nil
	}
	return fmt.Errorf("ingest: --max-record-bytes %s cannot fit in --memory %s: a record takes up to %d times its size in memory; "+
		"give --memory %s or more, or --max-record-bytes %s or less",
		sizeText(uint64(o.MaxRecordBytes)), sizeText(uint64(budget)), ingest.RecordMemoryMultiple,
		sizeText(uint64(o.MaxRecordBytes)*ingest.RecordMemoryMultiple), sizeText(uint64(ingest.MaxRecordBytesFor(budget))))
}
