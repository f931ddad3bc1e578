// Package delta reads and commits to the log of a Delta Lake table, as
// the Delta protocol (PROTOCOL.md of delta-io/delta) defines it: the JSON
// commits under _delta_log/, the checkpoints (classic single-file,
// multi-part and V2 with sidecars, JSON or Parquet) and Action
// Reconciliation, which gives the table's protocol, metadata and live
// data files at any version. It refuses, naming the feature, a table
// that uses what it cannot read (deletion vectors, column mapping, an
// unknown reader feature).
//
// It owns the log only: reading and writing data files is the business of
// internal/pqio and of the packages that use this one. For maintenance it
// gives a table as catalog.Maintainable (Maintained), so that sluice's
// compaction plans, rewrites and verifies a Delta table's files as it does
// its own, commits each batch as Spark's OPTIMIZE would, and checkpoints
// the log after it; and vacuums a Delta table as Delta's VACUUM does.
//
//   - actions.go: the actions, as JSON commits and Parquet checkpoints
//     spell them;
//   - log.go: listing the log, naming its files;
//   - checkpoint.go: reading a checkpoint, a batch of actions at a time;
//   - checkpoint_write.go, checkpoint_schema.go: writing a classic
//     checkpoint as Spark writes one, in two passes over the log that
//     hold only the live files' keys;
//   - settings.go: the table properties that say how the log and the
//     files are kept (checkpoint interval, retentions);
//   - snapshot.go: the checkpoint and commits a version is read from,
//     read in order, and Action Reconciliation into a Snapshot;
//   - features.go: which protocol versions and features it reads;
//   - paths.go: the URI paths of the log, canonicalized for reconciling;
//   - listed.go: a snapshot's live files as catalog's import adopts them;
//   - commit.go: a commit as a create-only put, and its rebase over the
//     commits that won the race, as Spark's OPTIMIZE rebases;
//   - maintain.go: a table opened for maintenance (Maintained): its live
//     files as the planner sees them, which protocols it writes to, and
//     the commit of a compaction;
//   - optimize.go: a compaction's actions: commitInfo with OPTIMIZE's
//     metrics, a remove of each input, an add of each output;
//   - schema.go: the log's schemaString as the data files' schema;
//   - stats.go: a written file's stats JSON, as Spark collects them;
//   - history.go: the commits of the log, with what each added and
//     removed and the table's totals after it;
//   - vacuum.go: deleting the files no retained version references, and
//     the log entries behind a checkpoint that metadata cleanup may
//     delete.
package delta
