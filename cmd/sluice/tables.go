package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/sparklog"
	"github.com/sluice-data/sluice/jobs"
)

func (a *app) openTable(cmd *cobra.Command, loc string) (*catalog.Table, error) {
	return catalog.Open(cmd.Context(), loc, catalog.Options{Logger: a.logger, Observers: a.observers()})
}

func (a *app) initCommand() *cobra.Command {
	var o jobs.Create
	cmd := &cobra.Command{
		Use:   "init TABLE --schema S [--partition-by day(col)] [--target-file-size 256MiB]",
		Short: "Create an empty table",
		Long: `Create an empty table at TABLE (a path, file://, s3:// or az:// location).

--schema is 'name:type,name:type?,...' or @file.yaml. Types: string, uuid,
int32, int64, float64, bool, date, timestamp (UTC, microseconds),
decimal(p,s), binary, and nested struct<name:type,...>, list<type>,
map<keytype,valuetype>. A trailing ? makes a column (or a nested field,
a list's element, a map's value) nullable: 's:struct<a:int64,b:string?>?'.
--partition-by day(col) writes files under date=YYYY-MM-DD/ by the UTC day
of a date or timestamp column.`,
		Example: `  sluice init ./lake/events --schema 'event_id:uuid,list_id:int64,tally:int32,event_time:timestamp' --partition-by 'day(event_time)'`,
		Args:    exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Table = args[0]
			return a.runJob(cmd, &o)
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}

func (a *app) importCommand() *cobra.Command {
	var from string
	var version int64
	cmd := &cobra.Command{
		Use:   "import TABLE --from DIR [--version N]",
		Short: "Adopt existing Parquet files (Hive layout) into a table, in place",
		Long: `Adopt the Parquet files under DIR into TABLE without rewriting them.

If TABLE does not exist it is created: the schema is merged from the files'
footers and the partition keys are read from Hive folders (key=value/).
TABLE may be DIR itself. On an existing table, the files no version of it
ever listed are added in one commit, all or nothing: a file the table cannot
read fails the import and nothing is committed. A file a compaction replaced
or a rollback dropped is history, not news, and is never adopted again; nor
is a file sluice wrote under TABLE that no version lists (the output of a
crashed or running writer): vacuum removes those. Folders and files starting with _ or . are
skipped, as Spark and Delta use them for metadata.

A Delta Lake table (DIR holds _delta_log/) is adopted as its log says:
exactly the files live at its latest version (or --version N), with the
partition values the log gives, never a file a DELETE, MERGE, OPTIMIZE or
overwrite removed. A Delta table using deletion vectors, column mapping or
a reader feature sluice does not know is refused, naming the feature.

The output of a Spark Structured Streaming file sink (DIR holds
_spark_metadata/) is adopted as its log says too: exactly the files that
the batches it committed, compactions (N.compact) included, added and did
not delete, as of its latest batch (or of batch N, with --version N),
never the partial output of a failed batch. The log names files by
absolute path: they are read relative to DIR, or, if DIR was moved or
copied since, to the folder the sink wrote; a file outside it is refused.

An Iceberg table, named by its catalog (--from
iceberg+sqlite:///abs/path/catalog.db#ns.table, iceberg+postgres://host/db#ns.table,
iceberg+rest://host/path#ns.table with SLUICE_ICEBERG_CREDENTIAL or
SLUICE_ICEBERG_TOKEN in the environment) or by its metadata file (--from .../metadata/00003-<uuid>.metadata.json),
is adopted at its current snapshot: exactly its live data files, in the
table's own location, with the partition values of its spec. A snapshot
with delete files, or with files of two partition specs, is refused.

Any other folder that is, or holds, a table whose log says which files are
live is refused, naming the log: an Iceberg table's folder (name its
catalog or metadata file instead), a Delta log or a Spark sink's _spark_metadata/
nested below DIR. Globbing it would bring back rows the log deleted (or a
failed batch's output).`,
		Example: `  sluice import ./lake/events --from ./lake/events`,
		Args:    exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usageError{cmd: "import", err: fmt.Errorf("import: --from is required")}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			var listed *catalog.Listed
			if iceberg.IsTableURL(from) || iceberg.IsMetadataFile(from) {
				// The Iceberg table's files, in its own location.
				if cmd.Flags().Changed("version") {
					return usageError{cmd: "import", err: fmt.Errorf("import: --version: an Iceberg table is adopted at its current snapshot")}
				}
				from, listed, err = iceberg.Listed(cmd.Context(), from)
			} else {
				listed, err = logListed(cmd, from, version)
			}
			if err != nil {
				return err
			}
			bar := a.progress("reading footers")
			res, err := t.Import(cmd.Context(), from, catalog.ImportOptions{RunID: a.runID, Listed: listed,
				Progress: func(done, total int) { bar.Set(int64(done), int64(total)) }})
			bar.Done()
			if err != nil {
				return err
			}
			out := map[string]any{"command": "import", "table": args[0], "created": res.Created,
				"files_in": res.FilesFound, "files_added": res.FilesAdded, "files_skipped": res.FilesSkipped,
				"files_replaced": res.FilesReplaced, "files_uncommitted": res.FilesUncommitted,
				"rows_in": res.Rows, "rows_written": 0, "bytes_in": res.Bytes}
			if res.FilesUncommitted > 0 {
				a.note("skipped %d files that sluice wrote and no version lists (a crashed or running writer's; vacuum removes them)", res.FilesUncommitted)
			}
			if res.Manifest != nil {
				out["version"] = res.Manifest.Version
				a.line("imported %d files (%d rows) into %s at version %d", res.FilesAdded, res.Rows, textName(args[0]), res.Manifest.Version)
			} else {
				a.line("nothing new to import: all %d files are already in %s", res.FilesFound, textName(args[0]))
			}
			return a.summary(out)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "folder of Parquet files to adopt (path, file://, s3://, az://), or an Iceberg table (iceberg+sqlite:///abs/catalog.db#ns.table, or its .metadata.json)")
	cmd.Flags().Int64Var(&version, "version", -1, "of a Delta table: adopt the files live at this version; of a Spark streaming sink's output: at this batch (default: the latest)")
	return cmd
}

// logListed returns the live files of the folder from as its log names
// them: of a Delta table at version (-1: the latest), of a Spark
// streaming sink's output at batch version (-1: the latest); nil when
// from is neither. A --version on a folder that is neither is a usage
// error.
func logListed(cmd *cobra.Command, from string, version int64) (*catalog.Listed, error) {
	ctx := cmd.Context()
	st, err := cloud.Open(ctx, from)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	isDelta, err := delta.IsDelta(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", from, err)
	}
	isSink := false
	if !isDelta {
		if isSink, err = sparklog.IsSink(ctx, st); err != nil {
			return nil, fmt.Errorf("import %s: %w", from, err)
		}
	}
	if !isDelta && !isSink {
		if cmd.Flags().Changed("version") {
			return nil, usageError{cmd: "import", err: fmt.Errorf("import: --version: %s is not a Delta table (no commit in _delta_log/) nor a Spark streaming sink's output (no batch in _spark_metadata/)", from)}
		}
		return nil, nil
	}
	if version < 0 && cmd.Flags().Changed("version") {
		return nil, usageError{cmd: "import", err: fmt.Errorf("import: --version %d: want a version >= 0", version)}
	}
	var l *catalog.Listed
	if isDelta {
		l, err = deltaListed(ctx, st, version)
	} else {
		l, err = sinkListed(ctx, st, version)
	}
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", from, err)
	}
	return l, nil
}

// deltaListed returns the live files of the Delta table in st at version
// (-1: the latest).
func deltaListed(ctx context.Context, st cloud.Store, version int64) (*catalog.Listed, error) {
	snap, err := delta.New(st).Snapshot(ctx, version)
	if err != nil {
		return nil, err
	}
	return snap.Listed()
}

// sinkListed returns the live files of the Spark streaming sink's output
// in st at batch (-1: the latest).
func sinkListed(ctx context.Context, st cloud.Store, batch int64) (*catalog.Listed, error) {
	snap, err := sparklog.New(st).Snapshot(ctx, batch)
	if err != nil {
		return nil, err
	}
	return snap.Listed()
}

func (a *app) filesCommand() *cobra.Command {
	var version int64
	var nul bool
	cmd := &cobra.Command{
		Use:   "files TABLE [--version N] [-0]",
		Short: "List the live data files, one a line",
		Long: `List the live data files of TABLE (or of version N), one a line: an absolute
path on local disk, a full URL elsewhere. Only these files are the table:
a folder may also hold files not yet committed or already replaced.

TABLE may be a Delta Lake table (a folder with _delta_log/ and no sluice
table): its files live at the newest version, or at --version N (from 0),
as its log says.

A name holding a control character (a newline, a tab, an escape), bytes
that are not UTF-8, or starting with a double quote prints quoted and
escaped as Go does ("date=a\nb/part-0.parquet"): one file is always one
line. With -0 each name prints as it is, followed by a NUL byte, as
find -print0 does, for xargs -0.`,
		Example: `  sluice files ./lake/events --version 3
  sluice files ./lake/events -0 | xargs -0 du -ch`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			versionSet := cmd.Flags().Changed("version")
			if versionSet && version < 0 {
				return usageError{cmd: "files", err: fmt.Errorf("files: --version %d: want a version number >= 0", version)}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			ctx := cmd.Context()
			m, err := t.Latest(ctx)
			if errors.Is(err, catalog.ErrTableNotFound) {
				// Not a sluice table: a Delta table's files, if it is one.
				if done, derr := a.deltaFiles(cmd, args[0], version, versionSet, nul); done {
					return derr
				}
			}
			if err == nil && versionSet {
				if version < 1 {
					return usageError{cmd: "files", err: fmt.Errorf("files: --version %d: a sluice table's versions start at 1", version)}
				}
				m, err = t.Manifest(ctx, version)
			}
			if err != nil {
				return err
			}
			files, err := t.Files(ctx, m)
			if err != nil {
				return err
			}
			if a.jsonOut {
				urls := make([]string, len(files))
				for i, f := range files {
					urls[i] = t.FileURL(f)
				}
				_, nrows, nbytes := m.Totals()
				return a.summary(map[string]any{"command": "files", "table": args[0], "version": m.Version,
					"files": urls, "rows": nrows, "bytes": nbytes})
			}
			w := bufferedStdout(a)
			for _, f := range files {
				if nul {
					w.WriteString(t.FileURL(f))
					w.WriteByte(0)
				} else {
					w.WriteString(textName(t.FileURL(f)))
					w.WriteByte('\n')
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().Int64Var(&version, "version", 0, "list the files of this version instead of the latest (a sluice table's start at 1, a Delta table's at 0)")
	cmd.Flags().BoolVarP(&nul, "null", "0", false, "end each name with a NUL byte instead of a newline, and print it unescaped (for xargs -0)")
	return cmd
}

func (a *app) historyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history TABLE",
		Short: "Show the table's versions: number, time, operation, run, files and rows added/removed",
		Long: `Show the table's versions, one a line: number, commit time (UTC), operation,
run ID, files and rows added/removed, and the files and rows of the table
at that version. A rollback's files and rows added and removed are counted
file by file against the version before it, as the Iceberg mirror records
them: a rollback across a compaction puts the small files back and takes
the compacted ones out. A run ID or operation holding a control character
prints quoted and escaped as Go does, so that one version is always one line.
--json lists them as {"versions":[{"version":N,"operation":"...",...}]}.

On a table with an Iceberg mirror (sluice iceberg sync or enable), an
ICEBERG column shows how far the mirror is: the id of the snapshot
mirroring each version, "expired" once vacuum expired it, "-" for a version
not mirrored yet ("?" if the catalog could not be read). --json gives each
version "mirrored" (true once the mirror reached it) and
"iceberg_snapshot_id" (a string), and "iceberg" the catalog, identifier and
the version the mirror is at.

TABLE may be a Delta Lake table (a folder with _delta_log/ and no sluice
table): its commits, each with commitInfo's time and operation (OPTIMIZE for
a compaction, sluice's included) and engine in the RUN column, the files
and rows its add and remove actions count ("?" rows where a file's stats
have no numRecords), and the table's files and rows after it.`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			hist, err := t.History(cmd.Context())
			if errors.Is(err, catalog.ErrTableNotFound) {
				// Not a sluice table: a Delta table's history, if it is one.
				if done, derr := a.deltaHistory(cmd, args[0]); done {
					return derr
				}
			}
			if err != nil {
				return err
			}
			for i, m := range hist {
				if m.RolledBackTo > 0 && i > 0 {
					if m.Summary, err = fileDiff(cmd.Context(), t, hist[i-1], m); err != nil {
						return fmt.Errorf("history: version %d: %w", m.Version, err)
					}
				}
			}
			mirror := a.icebergHistory(cmd.Context(), t)
			if a.jsonOut {
				vs := make([]map[string]any, len(hist))
				for i, m := range hist {
					files, rows, bytes := m.Totals()
					v := map[string]any{"version": m.Version, "committed_at": m.CommittedAt.Format(time.RFC3339Nano),
						"operation": m.Operation, "run": m.RunID,
						"files_added": m.Summary.FilesAdded, "files_removed": m.Summary.FilesRemoved,
						"rows_added": m.Summary.RowsAdded, "rows_removed": m.Summary.RowsRemoved,
						"data_change": m.Summary.DataChange, "files": files, "rows": rows, "bytes": bytes}
					if m.RolledBackTo > 0 {
						v["rolled_back_to"] = m.RolledBackTo
					}
					if mirror != nil {
						mirror.fields(m.Version, v)
					}
					vs[i] = v
				}
				out := map[string]any{"command": "history", "table": args[0], "versions": vs}
				if mirror != nil {
					out["iceberg"] = mirror.report
				}
				return a.summary(out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			header := "VERSION\tTIME\tOPERATION\tRUN\tFILES +/-\tROWS +/-\tFILES\tROWS"
			if mirror != nil {
				header += "\tICEBERG"
			}
			fmt.Fprintln(tw, header)
			for _, m := range hist {
				op := m.Operation
				if m.RolledBackTo > 0 {
					op += fmt.Sprintf(" to %d", m.RolledBackTo)
				}
				files, rows, _ := m.Totals()
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t+%d/-%d\t+%d/-%d\t%d\t%d", m.Version,
					m.CommittedAt.UTC().Format("2006-01-02 15:04:05Z"), textName(op), textName(m.RunID),
					m.Summary.FilesAdded, m.Summary.FilesRemoved, m.Summary.RowsAdded, m.Summary.RowsRemoved, files, rows)
				if mirror != nil {
					fmt.Fprintf(tw, "\t%s", mirror.column(m.Version))
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	return cmd
}

// fileDiff summarises what version cur changed from prev file by file:
// the files only cur lists are added, those only prev lists removed, as
// the Iceberg mirror records it. History uses it for rollbacks, whose
// stored summary is the change of the table's totals (a rollback reuses
// the pieces of the version it restores, listing no file): a rollback
// across a compaction would show a few files added and none removed.
// Only partitions whose pieces differ are read.
func fileDiff(ctx context.Context, t *catalog.Table, prev, cur *catalog.Manifest) (catalog.Summary, error) {
	sum := catalog.Summary{DataChange: cur.Summary.DataChange, Partitions: cur.Summary.Partitions}
	before, err := t.Partitions(ctx, prev)
	if err != nil {
		return sum, fmt.Errorf("list version %d's partitions: %w", prev.Version, err)
	}
	after, err := t.Partitions(ctx, cur)
	if err != nil {
		return sum, fmt.Errorf("list version %d's partitions: %w", cur.Version, err)
	}
	refs := map[string][2]*catalog.PartitionRef{}
	for i := range before {
		r := refs[before[i].Partition]
		r[0] = &before[i]
		refs[before[i].Partition] = r
	}
	for i := range after {
		r := refs[after[i].Partition]
		r[1] = &after[i]
		refs[after[i].Partition] = r
	}
	files := func(ref *catalog.PartitionRef) (map[string]catalog.DataFile, error) {
		out := map[string]catalog.DataFile{}
		if ref == nil {
			return out, nil
		}
		fs, err := t.PartitionFiles(ctx, *ref)
		if err != nil {
			return nil, fmt.Errorf("list the files of partition %q: %w", ref.Partition, err)
		}
		for _, f := range fs {
			out[f.Path] = f
		}
		return out, nil
	}
	for _, r := range refs {
		if r[0] != nil && r[1] != nil && slices.Equal(r[0].Pieces, r[1].Pieces) {
			continue
		}
		was, err := files(r[0])
		if err != nil {
			return sum, err
		}
		is, err := files(r[1])
		if err != nil {
			return sum, err
		}
		for p, f := range is {
			if _, ok := was[p]; !ok {
				sum.FilesAdded++
				sum.RowsAdded += f.Rows
				sum.BytesAdded += f.Bytes
			}
		}
		for p, f := range was {
			if _, ok := is[p]; !ok {
				sum.FilesRemoved++
				sum.RowsRemoved += f.Rows
				sum.BytesRemoved += f.Bytes
			}
		}
	}
	return sum, nil
}

func (a *app) rollbackCommand() *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "rollback TABLE --to N",
		Short: "Commit a new version whose content is version N's",
		Long: `Commit a new version whose content (schema, files, source checkpoints) is
version N's. History is kept: the rollback is itself a version, and can be
rolled back. Fails, committing nothing, if a file of version N no longer
exists (vacuumed, or deleted from the folder an import adopted it in).`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case !cmd.Flags().Changed("to"):
				return usageError{cmd: "rollback", err: fmt.Errorf("rollback: --to N is required (a version number >= 1)")}
			case to < 1:
				return usageError{cmd: "rollback", err: fmt.Errorf("rollback: --to %d: want a version number >= 1", to)}
			}
			t, err := a.openTable(cmd, args[0])
			if err != nil {
				return err
			}
			defer t.Close()
			m, err := t.Rollback(cmd.Context(), to, a.runID)
			if err != nil {
				return err
			}
			files, rows, bytes := m.Totals()
			a.line("rolled %s back to version %d as version %d", textName(args[0]), to, m.Version)
			return a.summary(map[string]any{"command": "rollback", "table": args[0], "version": m.Version,
				"rolled_back_to": to, "files": files, "rows": rows, "bytes": bytes})
		},
	}
	cmd.Flags().Int64Var(&to, "to", 0, "the version whose content to restore")
	return cmd
}

func (a *app) vacuumCommand() *cobra.Command {
	var o jobs.Vacuum
	cmd := &cobra.Command{
		Use:   "vacuum TABLE [--retain 168h] [--dry-run]",
		Short: "Delete data files no retained version references",
		Long: `Delete data files that no version committed within --retain (nor the latest)
references and that are older than --retain, and leftovers of commits that
crashed or lost a race. Manifests are kept. Versions older than --retain can
no longer be rolled back to once their files are gone. On a table with an
Iceberg mirror (recorded by sluice iceberg sync or enable), the mirror's
snapshots older than --retain are expired too (the current one stays, and
no file is deleted by the expiry), and every file a snapshot still in the
mirror references is kept; a mirror synced after every commit is synced
first; --json says so under "iceberg". A table whose _iceberg/ holds a
mirror its settings do not record, or whose settings cannot be read, is
refused. A retention under
24h is refused without --force: a writer may still be about to commit the
files it wrote. --retain 0 --force keeps only the latest version and
deletes every file it does not reference. --dry-run lists what would be
deleted.

On a Delta table (a folder with _delta_log/, or --format delta) it deletes,
as Delta's VACUUM does, the data files that neither the newest version nor
a file removed within --retain references and that are older than
--retain; the table's delta.deletedFileRetentionDuration, when longer, is
kept unless --force. Nothing under _delta_log/ or a folder starting with '_'
or '.' is touched, but for metadata cleanup: log entries older than the
table's delta.logRetentionDuration (30 days) that a checkpoint stands in
front of. A folder holding both a sluice table and a Delta log is refused.
--dry-run lists each file with why it would go.`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Table = args[0]
			if err := a.runJob(cmd, &o); err != nil {
				return err
			}
			if res, ok := a.result.(*jobs.VacuumResult); ok && o.DryRun && !a.jsonOut {
				w := bufferedStdout(a)
				for _, d := range append(res.Deleted, res.LogDeleted...) {
					if why := res.Why[d]; why != "" {
						fmt.Fprintf(w, "%s\t%s\n", textName(d), why)
					} else {
						fmt.Fprintln(w, textName(d))
					}
				}
				return w.Flush()
			}
			return nil
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}
