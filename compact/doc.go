// Package compact bin-packs a table's small Parquet files into large ones,
// as Delta's OPTIMIZE and Iceberg's rewrite_data_files do, without Spark.
//
// A run has four stages: plan (plan.go: which files of which partitions go
// into which output files, printed by --dry-run), rewrite (rewrite.go:
// stream rows from inputs to outputs in the table's schema, column by
// column where the types allow; reuse.go: an input page that comes out
// byte for byte the same keeps its compressed bytes), verify (checksum.go:
// rows, null counts and an order-independent checksum of every row equal
// between inputs and outputs, before anything is committed; proof.go: a
// kept page is proven by its bytes when its output is read back) and commit
// (compact.go: one manifest commit per group of partitions, marked as no
// data change).
//
// compact never deletes an input file: replaced files stay live in older
// versions until vacuum removes them after the retention. It never imports
// ingest, rollup or warehouse; it reaches the catalog through the small
// Table interface it declares.
package compact
