// Package sparklog reads the log that Spark Structured Streaming's file
// sink keeps beside its output, in _spark_metadata/ (Spark's
// FileStreamSinkLog), and gives the data files it names live at a batch
// as catalog's import adopts them. A file of the output folder that no
// committed batch names, the partial output of a failed batch, is never
// among them.
//
// The log is one file per batch, _spark_metadata/<batchId>, and every few
// batches a compaction, <batchId>.compact, that holds the whole state up
// to its batch; the writer may then delete the files before it. Each file
// is a version header ("v1") and one JSON object a line, each adding or
// deleting a file named by its absolute URI.
//
//   - errors.go: the sentinel errors;
//   - log.go: listing _spark_metadata/, naming its batch files, and which
//     of them make up the state at a batch;
//   - entry.go: reading one batch file: its header and its JSON lines;
//   - snapshot.go: the live files at a batch, as Spark's reader replays
//     them;
//   - paths.go: a logged URI as a key under the folder imported;
//   - hive.go: a key's partition values, from its Hive folders;
//   - listed.go: a snapshot as catalog.Listed.
//
// It owns the log only: reading the data files is internal/pqio's and
// adopting them catalog's. It reads through cloud.Store, so an output
// folder on local disk, S3 or Azure reads alike. It imports catalog and
// cloud of this module.
package sparklog
