package main

import (
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/jobs"
)

func (a *app) publishCommand() *cobra.Command {
	var o jobs.Publish
	cmd := &cobra.Command{
		Use:   "publish TABLE --to postgres://...|sqlite:///path.db|redshift://... --as NAME [--keep-old] [--lock-timeout 5s] [--force] [--drop-dependents] [--iam-role ARN] [--connections 4]",
		Short: "Load a table into PostgreSQL, a SQLite file or Redshift with a _new/_old swap",
		Long: `Load the latest version of TABLE into the warehouse --to as the table --as
(NAME or SCHEMA.NAME, plain identifiers, folded to lower case): build
NAME_new by binary COPY, streamed from the table's files, then in one
transaction rename NAME to NAME_old and NAME_new to NAME and drop NAME_old
(kept with --keep-old). Readers of NAME see the whole old table or the whole
new one. On PostgreSQL, NAME_new is loaded over --connections
connections at once (default 4, at most one per file), each copying a share
of the files in its own transaction, committed only when all have loaded;
--connections 1 loads in the transaction that creates NAME_new, with COPY
FREEZE. Indexes and constraints are built after the load. Redshift and
SQLite load on one connection. What NAME carries follows it to the new table: privileges (column
privileges too), comments, row-level security and its policies, indexes,
PRIMARY KEY, UNIQUE, CHECK and FOREIGN KEY constraints (built before the
swap), replica identity, publication membership, the owner; views on NAME
are recreated on the new table. What cannot follow (triggers, rules,
foreign keys of other tables that reference NAME, materialized views, an
index or privilege on a column the new table lacks, an owner the publishing
role may not set...) makes publish refuse before loading anything, naming
each; --drop-dependents leaves those behind, dropped with the old table.
A NAME_new or NAME_old that no publish of NAME made is never dropped:
publish refuses, naming it. The swap's lock is taken within --lock-timeout
and retried with backoff, so it never holds readers back for longer. The
version published is recorded with the table's identity in
sluice_published beside NAME: publishing the same table's same version
again does nothing, whatever path names the table (--force reloads).
TABLE may be a Delta table (a folder with _delta_log/ and no sluice table):
the rows live at its newest version are loaded, partition columns from
the log, and the Delta table's id and version are what is recorded.

The password comes from the URL, PGPASSWORD or ~/.pgpass and is never
printed.

--to sqlite:///path/warehouse.db publishes into a SQLite file (created when
missing; no server), put in WAL mode so readers never wait: NAME_new is
loaded and swapped in one write transaction, views on NAME read the new
table, and --lock-timeout bounds each wait for another writer; indexes and
triggers on NAME are not carried (refused, or left behind with
--drop-dependents). Timestamps
are stored as UTC text 'YYYY-MM-DD HH:MM:SS.ffffff', dates 'YYYY-MM-DD',
decimals as text at full precision, uuids as lower-case text, booleans as
0/1; a NaN is refused (SQLite would store NULL).

--to redshift://user@host:5439/db loads a table on s3:// with COPY ...
FORMAT AS PARQUET MANIFEST (--iam-role ARN for its credentials) from a
manifest of the version's files that sluice writes beside the table, in
_sluice_publish/; load and rename swap run in one transaction. Redshift has
no lock_timeout or advisory locks: --lock-timeout does not apply, the lock
on sluice_published serialises publishes, grants, comments and the rest of
what NAME carries are not carried, and the statements have been checked only against Redshift's
documentation, never run on a cluster.`,
		Example: `  sluice publish ./lake/events --to sqlite:///srv/warehouse.db --as events
  sluice publish ./lake/events --to postgres://loader@db/analytics --as events
  PGPASSWORD=... sluice publish s3://lake/events --to postgres://loader@db/analytics --as mart.events --json`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Table = args[0]
			return a.runJob(cmd, &o)
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}
