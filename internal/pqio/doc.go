// Package pqio owns reading and writing Parquet for the whole module: the
// one opener of Parquet files (open.go) and the reads over a cloud.Store
// that it serves (readerat.go: the footer in one request); the column-type
// model that files are read and written as (schema.go, values.go: Kind,
// Type, Column, Schema and their canonical text); mapping a file's schema
// and footer statistics to that model (inspect.go; nested.go for struct,
// list and map groups in every layout the Parquet format lists);
// nested values shredded into leaves with their levels and assembled
// back (nested_values.go); the nested writer's nodes, the Shredder and
// the copy of Parquet rows between files of one layout (nested_write.go);
// and truncating
// statistics as they are written (stats.go); compatibility and widening
// (compat.go, convert.go: one converter, one decimal path); reading rows
// and single columns (read.go, column.go); reading flat files column
// by column into batches of Parquet values (scan.go:
// ScanParquetBatches); writing (write.go, group.go);
// the codecs (codec.go, zstddecode.go, the C zstd with cgo and the pure-Go
// one without: zstd_*.go); page reuse and priming (zstddecode.go:
// PrimeZstdPage); the pieces that reach inside parquet-go, each with a
// guard test that fails when parquet-go changes under it: the go:linkname
// of its codec table (zstddecode.go), the unsafe write of a value's
// definition level (levels.go) and of string bytes (group.go); and panic
// containment (NoPanic): a malformed file fails its own
// read, never the process.
//
// pqio must never know what a table is: no manifests, partitions,
// versions, commits or job options, and no import of catalog or of any job
// package. It imports nothing of this module but cloud, for file access,
// so that every job (ingest, compact, rollup) and catalog can use it
// without a cycle. Every error that fails a read names the file's key and,
// where there is one, the column; a failed read of the object is the
// store's error, never ErrCorruptFile.
package pqio
