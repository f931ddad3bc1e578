// Package warehouse publishes a table into a SQL warehouse with the
// _new/_old swap: it builds NAME_new from the table's live files, then in
// one transaction renames NAME to NAME_old and NAME_new to NAME and drops
// NAME_old, so readers of NAME see the complete old rows or the complete
// new ones, never a half-loaded table.
//
// PostgreSQL is built (pgx, binary COPY). Around the swap it handles what
// bites hand-written loads: the privileges granted on NAME and its comment
// are carried to the new table, views that depend on NAME are recreated on
// it (CREATE OR REPLACE, so views on those views stay bound), the swap's
// ACCESS EXCLUSIVE lock is taken with a lock_timeout and retried with
// backoff so it never queues readers behind a long one for longer than the
// timeout, a session advisory lock on the target name keeps two publishes
// from mixing, and the published version is recorded in a
// sluice_published table beside NAME so that publishing it again changes
// nothing. NAME_new and NAME_old belong to sluice: a stale NAME_new from a
// dead run is dropped and rebuilt.
//
// Not carried by the swap: indexes, constraints, triggers, row-level
// security policies and column privileges of NAME (the new table has the
// table's columns and nothing else); a materialized view on NAME fails the
// publish before the swap.
//
// SQLite (modernc.org/sqlite, pure Go) takes a file: in WAL mode readers
// read a snapshot and never wait, and DDL is transactional, so NAME_new is
// loaded and swapped in one write transaction (the write lock doubles as
// the advisory lock); RENAME runs with legacy_alter_table so views, bound
// by name, read the new NAME. Types are mapped in sqlitetypes.go.
//
// Redshift (redshift://, the same wire protocol) has no COPY FROM STDIN: a
// manifest of the version's live files is written beside the table (which
// must be on S3) and, in one transaction, NAME_new is loaded by COPY ...
// FORMAT AS PARQUET MANIFEST and renamed over NAME; Redshift's late-binding
// views need no recreation. Only the statements are tested against
// Redshift's documentation (golden files); everything PostgreSQL also
// accepts is run against PostgreSQL.
//
// warehouse imports catalog, cloud and internal/pqio of this module only:
// the catalog lists a version's live files, pqio reads their rows, cloud
// writes the Redshift manifest into _sluice_publish/ beside the table; it
// never writes the table's data or versions.
package warehouse
