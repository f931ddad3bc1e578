// Package warehouse publishes a table into a SQL warehouse with the
// _new/_old swap: it builds NAME_new from the table's live files, then in
// one transaction renames NAME to NAME_old and NAME_new to NAME and drops
// NAME_old, so readers of NAME see the complete old rows or the complete
// new ones, never a half-loaded table.
//
// PostgreSQL is built (pgx, binary COPY data encoded by copy.go; a flat
// table's files read column by column and encoded from their Parquet
// values by copybatch.go). NAME_new
// is loaded over Options.Connections connections at once, each copying
// the files it takes from a shared queue in a transaction of its own;
// none commits before all have copied and the rows add up to the
// version's, and a failed load drops NAME_new. On one connection (or a
// version of one file) NAME_new is created and loaded in one transaction
// with COPY FREEZE. Around the swap it handles what
// bites hand-written loads. What NAME carries is read before the load and
// follows it to NAME_new: table and column privileges, the table's and
// its columns' comments, row-level security (ENABLE, FORCE) and its
// policies, indexes and PRIMARY KEY, UNIQUE, CHECK and FOREIGN KEY
// constraints (built on NAME_new after the COPY under temporary names,
// renamed inside the swap once the old table is gone, so the swap stays
// short), replica identity, membership of the publications that list it
// (column list and row filter included), and its owner when the
// publishing role may give the table to it; views that depend on NAME are
// recreated on it (CREATE OR REPLACE, so views on those views stay
// bound). The swap's ACCESS EXCLUSIVE lock is taken with a lock_timeout
// and retried with backoff so it never queues readers behind a long one
// for longer than the timeout, a session advisory lock on the target name
// keeps two publishes from mixing, and the published version is recorded
// with the table's identity (catalog.Table.Identity) in a sluice_published
// table beside NAME, so that publishing the same table's version again
// changes nothing however its location is spelled; a record of an older
// sluice, without identity, matches nothing and costs one reload.
//
// Not carried, and refused before anything is loaded, naming each:
// triggers, rules, foreign keys of other tables that reference NAME,
// materialized views on it, exclusion constraints, extended statistics,
// sequences owned by its columns, publications the publishing role does
// not own, an owner it may not set, and what the new columns cannot take
// (an index, policy or privilege on a column the table no longer has,
// tried on the empty NAME_new before the COPY). Options.DropDependents
// (--drop-dependents) leaves those behind, dropped with the old table
// (kept on it with KeepOld). Never dropped, always refused: functions or
// columns of other tables that use NAME's row type, policies of other
// tables that read NAME, inheritance, and a NAME whose owner's privileges
// the publishing role lacks. Not carried and not refused: column
// defaults, identity and generated columns, storage parameters and
// statistics targets (NAME_new's columns are the table's, as the lake
// defines them). A dependent added while NAME_new loads is found under
// the swap's lock and fails the swap.
//
// NAME_new and NAME_old are dropped only when a publish of NAME made
// them: NAME_new is marked by its comment until the swap, and a NAME_old
// kept by KeepOld by its comment after it. A NAME_new left by a publish
// that died after its load is dropped and rebuilt; any other NAME_new or
// NAME_old (someone's, or a table published as NAME_new) makes the
// publish refuse with ErrTaken before the load.
//
// No value read from the database or given by the user is spliced into
// SQL text: values are bind parameters, statements that take none
// (COMMENT, GRANT, CREATE POLICY...) are built by the server with
// format() and run by EXECUTE in a DO block, and every statement runs
// alone by the extended protocol (exec.go), so that a table's comment or
// a role's name is data whatever standard_conforming_strings says.
//
// SQLite (modernc.org/sqlite, pure Go) takes a file: in WAL mode readers
// read a snapshot and never wait, and DDL is transactional, so NAME_new is
// loaded and swapped in one write transaction (the write lock doubles as
// the advisory lock), which never leaves a NAME_new behind: any is
// someone's and refused; a NAME_old kept by KeepOld is marked by a no-op
// trigger. RENAME runs with legacy_alter_table so views, bound by name,
// read the new NAME. Indexes and triggers on NAME are not carried:
// refused, or left behind with DropDependents. Types are mapped in
// sqlitetypes.go.
//
// Redshift (redshift://, the same wire protocol) has no COPY FROM STDIN: a
// manifest of the version's live files is written beside the table (which
// must be on S3) and, in one transaction, NAME_new is loaded by COPY ...
// FORMAT AS PARQUET MANIFEST and renamed over NAME; Redshift's late-binding
// views need no recreation. Grants, comments and the rest of what NAME
// carries are not carried there; the identity is recorded and NAME_old is
// marked as on PostgreSQL, and COPY's literals (which take no bind
// parameters) are refused when they hold a quote, a backslash or a
// control character. Only the statements are tested against
// Redshift's documentation (golden files); everything PostgreSQL also
// accepts is run against PostgreSQL.
//
// warehouse imports catalog, cloud and internal/pqio of this module only:
// the catalog lists a version's live files, pqio reads their rows, cloud
// writes the Redshift manifest into _sluice_publish/ beside the table; it
// never writes the table's data or versions.
package warehouse
