// Package ingest appends what has arrived at a source to a table, exactly
// once: it lists the source, takes what the table's checkpoint does not
// record yet, decodes and validates it against the table schema, writes
// Parquet files partitioned by event time, and commits those files together
// with the advanced checkpoint in one catalog version.
//
// It owns the sources (landing files; Kafka topics, read by offset from
// the partitions a consumer group assigns, so that instances ingesting one
// topic into one table share its partitions evenly), the decoders (JSON
// lines, CSV with a header row, Parquet; gzip and zstd by extension),
// per-record validation, the quarantine of bad records, and the micro-batch
// buffer that bounds memory by a budget rather than by run size.
//
// A run is a two-stage pipeline: the caller's goroutine reads and decodes
// records into per-partition buffers, and each sink's writer goroutine
// encodes, compresses and uploads the batches handed to it, so the two
// halves of the work use two cores. Landing files hand their rows over
// when a file ends (a failed file's rows are dropped before any reach a
// writer); a Kafka run, which never drops a record it read, every 16 MiB.
//
// Fields of a record that the table schema does not have are ignored,
// unless the table has a string column named _extra (ExtraColumn): then
// they are kept there as one compact JSON object, in the record's order —
// a JSON line's or Kafka value's unknown members with their values as
// written, a CSV file's unknown header columns as strings, a Parquet
// file's unknown columns when not NULL (numbers and booleans as such,
// other types as their canonical text) — and _extra is NULL for a record
// without any ("{}" if the column is not nullable). Without an _extra
// column, a Parquet file with columns the table lacks fails whole, naming
// them.
//
// Options.DedupKey (--dedup-key) drops, for producers that retry, a valid
// record whose key value the table's commits of the last DedupWindow
// (default 24h, by commit time) wrote, or that an earlier record of the
// same run has; Result.RecordsDeduplicated counts them, so records in =
// rows written + quarantined + deduplicated. Only the key column of the
// files those commits added is read, and each key is kept as a 128-bit
// hash: at most about 60 MB of memory per million keys. A rollback
// forgets the keys of the commits it undid; a compaction is not a write.
// The window ends when the run starts, so deduplication is exact for
// runs of a table one after the other; concurrent runs (or instances
// sharing a topic) do not see each other's keys. dedup.go says why the
// window is commit time rather than event time.
//
// Exactly once rests on the catalog's commit protocol: data files are
// written first under fresh names, then one commit adds them and moves the
// source checkpoint, with the checkpoint the run started from as a
// requirement. A crash before the commit leaves only orphan files (vacuum
// removes them) and a rerun takes the same input again; a run that lost the
// race to a concurrent run of the same source fails with catalog.ErrConflict
// and commits nothing to the table. A Kafka run's commit covers only the
// partitions it read, merged into the newest checkpoint, so group members
// never conflict with each other; a member commits what it read before
// the group moves a partition away, and the group's own offsets are
// written after each commit for lag monitoring only.
//
// # Files
//
// Each file holds one part of the package:
//
//   - ingest.go: Run, and the landing-file run (listing, reading in
//     passes, committing); the quarantine table; the commit of both.
//   - options.go: Options, their defaults and validation.
//   - landing_checkpoint.go: the checkpoint format of a landing source.
//   - sink.go: the micro-batch buffer and its writer goroutine.
//   - dedup.go: Options.DedupKey, the keys of the window and of a run.
//   - decode.go: the decoder, formats and compression by extension,
//     decompression, the checks every text record gets.
//   - decode_json.go: JSON lines files and Kafka values.
//   - decode_json_flat.go: the one-pass scanner of JSON records: escapes,
//     numbers, nested values kept as text.
//   - decode_json_strict.go: RFC 8259 string escapes and duplicate names.
//   - decode_csv.go: CSV files with a header row.
//   - decode_parquet.go: Parquet landing files.
//   - convert.go: a field's value to its column's type, validated.
//   - timestamp.go: the fast path for UTC RFC 3339 timestamps.
//   - alloc.go: string slabs and boxed values, shared chunks that save an
//     allocation per field.
//   - arena.go: a JSON lines block's chunks, reused once its rows are
//     written or dropped.
//   - extra.go: the _extra column.
//   - kafka_source.go: the kafka:// URL and the Kafka run (reading,
//     decoding into the sinks).
//   - kafka_checkpoint.go: the checkpoint format of a Kafka source and the
//     commit that advances it.
//   - kafka_offsets.go: a partition's share of a run; listing log start
//     and last stable offsets; planning from the checkpoint.
//   - kafka_group.go: consumer group timing, the assignment callbacks and
//     hand-over, the liveness of other members, the group's own offsets.
//   - kafka_pool.go: the buffers lent to franz-go and the fetch limits.
//
// The package imports catalog and cloud only. It never imports compact,
// rollup or warehouse: helpers that two job packages need belong in catalog
// or cloud.
package ingest
