// Package inspect owns looking at a table without changing it: opening a
// table of any kind for reading (a sluice table, a Delta folder, a table in
// an Iceberg catalog), streaming its rows (Rows), and the report of its
// state (Describe): schema, partitioning, totals, the file-size
// histogram, the small-file debt per partition, versions, source
// checkpoints, mirrors, the quarantine and the last publish. The one
// write it owns is RecordPublish, the note a publish leaves for Describe.
//
// The small-file debt is the compaction planner's own decision
// (compact.PlanCompaction): inspect never keeps a second definition of a
// small file.
//
// inspect imports catalog, cloud, compact, delta, iceberg and
// internal/pqio only: never ingest, rollup, warehouse, scheduler or jobs,
// so that the command line and the web console can both call it. It
// never commits a version, and never applies a delete it cannot read:
// rows of a file that other files delete are refused, not shown.
package inspect
