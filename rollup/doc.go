// Package rollup maintains a rolling daily aggregate table from a snapshot
// plus event deltas, as docs/contract.md states it:
//
//   - The snapshot (a sluice table, a Parquet file or a CSV file with a
//     header line) holds the key columns, one column per running measure
//     named like it (the base value) and a `date` column: the snapshot
//     day, the same on every row.
//   - The events are a sluice table with the key columns, a time column
//     (date or timestamp; its day is taken in UTC or in Options.Location)
//     and the measured columns.
//   - The output is a sluice table partitioned by `date` (DATE): one row
//     per key of (snapshot ∪ events) per day from the snapshot day through
//     Options.Through (default: the last event day). A running measure
//     `name=sum(col)` is the base (0 for a key absent from the snapshot)
//     plus the sum of col over the key's events of every day up to and
//     including that day. Per-day measures `count()`, `min(col)`,
//     `max(col)` and `sum_day(col)` carry no running total: count and
//     sum_day are 0 on a day without events, min and max NULL. NULL
//     measure values are ignored, as SQL aggregates ignore them. A
//     measure over an int32 or int64 column is int64; over a float64
//     column it is float64 (a float64 running total may start from an
//     integer base), its sums added in the order the files and their
//     rows are read, as any engine adds floats in some order. Over a
//     decimal(p, s) column of up to 18 digits, sums are exact (128-bit)
//     decimal(38, s), as SQL's SUM gives them, from a base of scale s;
//     min and max keep the column's type. An int64 sum (a day's, or a
//     running total) is exact whatever order the events are added in, and
//     one that does not fit int64 (or a decimal sum past 38 digits) fails
//     the run with ErrOverflow, naming the measure, the key and the day,
//     before anything is written.
//   - Events dated on or before the snapshot day are already counted in
//     the snapshot: they are not added again, and Result counts them.
//
// Aggregation runs column by column: each row group's needed columns (and
// only those) are decoded into typed slices, reused from row group to row
// group, the rows' (key, day) cells are computed once, and each measure is
// one loop over its column. Memory is bounded by the dense grid of (key,
// day) cells being computed, laid out day by day, which is the output's
// size (with room for a quarter more keys), not by the number of events.
// The days are then made into rows and written several at once.
//
// A run is incremental. The output's manifest carries a checkpoint (key
// "rollup") with the source version it reflects, the snapshot's identity
// (its day and a checksum of its rows), the options that shape the table
// and the last day. The next run reads the source's versions since then:
// compactions (no data change) are skipped, the partitions other commits
// touched give the days that changed, and the output is restated from the
// earliest changed day E on, starting from the running totals stored in
// partition E-1, replacing the partitions from E on in one commit. A new
// snapshot, other options, a source rollback, a source that is not
// partitioned by the day of the time column, or a late event of a key the
// output does not hold yet mean a full recompute, which Result says.
//
// rollup imports catalog, cloud and internal/pqio of this module; it never imports
// ingest, compact or warehouse.
package rollup
