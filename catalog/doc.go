// Package catalog owns what a table is: its schema and partition spec, the
// live data files with their statistics, the numbered immutable manifest
// versions, and the commit protocol that swaps them atomically; import,
// rollback and vacuum. It reads and writes data files through
// internal/pqio, which owns the Parquet format; a table's schema types are
// pqio's, named here under the table's vocabulary (see schema.go).
//
// A table is a root location. Data files live under Hive partition folders
// (date=2024-01-31/); metadata lives under _sluice/:
//
//	_sluice/versions/00000000000000000007.json   manifest version 7
//	_sluice/pages/<uuid>.json                    an immutable list of a run of partitions' pieces
//	_sluice/pieces/<uuid>.json                   an immutable file list of one partition
//	_sluice/latest                               a hint: the newest version seen (may lag)
//
// A commit creates version N+1 with a create-only put; exactly one writer
// wins. The loser reloads, rebases its change when nothing it depends on was
// changed by the winner (adds never conflict; removing a file that is no
// longer live does), and tries again. A manifest lists pages by reference,
// each page a sorted run of partitions (First to Last) with their pieces by
// reference, so a commit rewrites only the pieces of the partitions it
// touches and the pages that list them: its cost does not grow with
// untouched partitions. A page past Options.MaxPartitionsPerPage is split
// into pages of half as many.
//
// Import adopts a folder's Parquet files by listing it, so it refuses a
// folder that is, or holds, a table whose log says which of its files are
// live (Delta Lake, Iceberg, a Spark streaming sink): see ErrTableLog.
//
// The catalog never deletes a data file as part of a commit; replaced files
// are left for Vacuum, which removes them once no retained version
// references them and they are older than the retention. The format is
// written up in docs/format/manifest.md.
//
// catalog imports only cloud and internal/pqio of this module.
package catalog
