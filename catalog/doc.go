// Package catalog owns what a table is: its schema and partition spec, the
// live data files with their statistics, the numbered immutable manifest
// versions, and the commit protocol that swaps them atomically. It also
// reads and writes the Parquet data files themselves.
//
// A table is a root location. Data files live under Hive partition folders
// (date=2024-01-31/); metadata lives under _sluice/:
//
//	_sluice/versions/00000000000000000007.json   manifest version 7
//	_sluice/pieces/<uuid>.json                   an immutable file list of one partition
//	_sluice/latest                               a hint: the newest version seen (may lag)
//
// A commit creates version N+1 with a create-only put; exactly one writer
// wins. The loser reloads, rebases its change when nothing it depends on was
// changed by the winner (adds never conflict; removing a file that is no
// longer live does), and tries again. A manifest lists per-partition pieces
// by reference, so a commit rewrites only the pieces of the partitions it
// touches: its cost does not grow with untouched partitions.
//
// The catalog never deletes a data file as part of a commit; replaced files
// are left for Vacuum, which removes them once no retained version
// references them and they are older than the retention. The format is
// written up in docs/format/manifest.md.
//
// catalog imports only cloud of this module.
package catalog
