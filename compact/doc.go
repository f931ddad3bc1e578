// Package compact bin-packs a table's small Parquet files into large ones,
// as Delta's OPTIMIZE and Iceberg's rewrite_data_files do, without Spark.
//
// A run has four stages: plan (which files of which partitions go into
// which output files, printed by --dry-run), rewrite (stream rows from
// inputs to outputs in the table's schema, column by column where the
// types allow), verify (rows, null counts and an order-independent
// checksum of every row equal between inputs and outputs, read back from
// the outputs before anything is committed) and commit (one manifest
// commit per group of partitions, marked as no data change).
//
// Each file holds one part of that:
//
//   - compact.go: Run, the whole run: plan, rewrite bins in parallel,
//     commit per group of partitions; the Table interface it needs.
//   - plan.go: PlanCompaction and its rules, the Plan and its printout.
//   - options.go: RewriteOptions, their defaults and validation.
//   - rewrite.go: Rewrite, one bin's rewrite: the rewriter's state and how
//     each input file's columns fill the table's (colPlan, copyFile).
//   - prefetch.go: input files fetched ahead of their decoding, in order,
//     within the memory budget.
//   - copy.go: row groups, column chunks and pages copied to the output,
//     with the fast path that builds values from a page's typed data;
//     a compatible input column's values are converted to the table's
//     type by internal/pqio's Converter.
//   - reuse.go: an input page that comes out byte for byte the same keeps
//     its compressed bytes (reusingCodec).
//   - output.go: the output file's life: opened in a temporary file, row
//     groups flushed, closed at the target size, handed to the read-back
//     (verify.go), uploaded; removed on failure.
//   - verify.go: the read-back of each output and the comparison of
//     inputs with outputs (ErrVerify); hashing of page values.
//   - checksum.go: the order-independent row checksum both sides compute.
//   - proof.go: a reused page is proven by its bytes when its output is
//     read back, instead of by its values.
//   - deletes.go: an input's deleted rows (Iceberg's position deletes)
//     left out, the input read row by row; RowDeleter.
//   - nested.go: a table with struct, list or map columns, rewritten row
//     by row through internal/pqio and verified per leaf, each row's hash
//     folding its leaves' repetition and definition levels.
//   - planstream.go: a work plan made a partition at a time, holding one
//     partition's file list at once.
//   - sort.go: Ordering (--sort-by, --zorder-by), the table properties
//     that make one the default, and why rows are ordered: so that
//     readers skip files and row groups by their min/max.
//   - sortrun.go: the external merge sort, sorted runs spilled to local
//     disk beyond a share of the memory budget.
//   - sortrewrite.go: an ordered rewrite of a partition: its reading and
//     its output files cut where the key changes.
//   - zorder.go: order-preserving keys of column values, their z-order
//     interleaving, and multi-column sort keys.
//
// It is format-blind: a table is whatever implements Table (a sluice
// table, a Delta table through delta.Maintained), names of the files
// written for it included.
//
// compact never deletes an input file: replaced files stay live in older
// versions until vacuum removes them after the retention. It never imports
// ingest, rollup or warehouse; it reaches the catalog through the small
// Table interface it declares.
package compact
