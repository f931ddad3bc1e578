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
// internal/pqio and of the packages that use this one.
//
//   - actions.go: the actions, as JSON commits and Parquet checkpoints
//     spell them;
//   - log.go: listing the log, naming its files;
//   - checkpoint.go: reading a checkpoint, a batch of actions at a time;
//   - snapshot.go: Action Reconciliation into a Snapshot;
//   - features.go: which protocol versions and features it reads;
//   - paths.go: the URI paths of the log, canonicalized for reconciling;
//   - listed.go: a snapshot's live files as catalog's import adopts them;
//   - commit.go: a commit as a create-only put, and its rebase over the
//     commits that won the race, as Spark's OPTIMIZE rebases.
package delta
