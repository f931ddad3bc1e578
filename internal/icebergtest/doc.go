// Package icebergtest owns the foreign Iceberg tables that tests of
// in-place compaction run against, and the readers that check them.
//
// A foreign table is one sluice did not write: Write builds it with
// iceberg-go's own writer (Append, UpdateSpec, merge-on-read Delete) in a
// SQLite SQL catalog, as a streaming writer would leave it: many small
// appends, some of them racing each other and retrying their commits, a
// partition spec that evolved half way (day(ts), then day(ts) and
// identity(region)), and merge-on-read position deletes. Its schema covers
// what real event logs hold: nested columns (struct, list, map), decimals,
// instants, dates, skewed keys, nulls, and strings with quotes,
// backslashes, newlines and non-ASCII text.
//
// SnapshotRows reads every snapshot of such a table with two readers that
// share no code with iceberg-go or sluice, and fails the test when they
// disagree: icebird (tools/icebirdrows.mjs, pure JavaScript) and a walk
// of the table format written from the Iceberg spec
// (tools/iceberg_walk.py, with Debian's python3-avro, whose output
// tools/icewalkrows.mjs reads with DuckDB). Both print the row count and
// duckrows' order-independent checksum of each snapshot, position deletes
// applied, so that a test can say "compaction left every snapshot's rows
// as they were".
//
// The package is for tests only: its functions take a testing.TB and
// fail it. Nothing outside _test.go files imports it.
package icebergtest
