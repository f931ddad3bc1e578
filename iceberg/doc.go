// Package iceberg does two things with Apache Iceberg tables in SQL
// catalogs (SQLite or PostgreSQL). It maintains tables other engines
// write, in place: Maintained (catalog.Maintainable) gives compaction an
// Iceberg table's current data files, with their position deletes, and
// commits each group of rewrites as a "replace" snapshot through
// iceberg-go's rewrite; its Vacuum expires snapshots and removes orphan
// files through iceberg-go; Listed gives import a table's live files.
// And it mirrors a sluice table's versions as Iceberg snapshots, so that
// any Iceberg reader sees exactly the live files of a committed version,
// with time travel by snapshot.
//
// Maintenance files: address.go iceberg+ locations and opening a
// catalog sluice did not create; maintain.go the table, its partitions
// and file names; maintain_scan.go its live files and their deletes;
// maintain_commit.go the rewrite commit and its retries;
// maintain_conflict.go what other writers' snapshots changed since;
// maintain_vacuum.go expiry and orphan removal; posdeletes.go the rows
// position deletes and deletion vectors delete; foreign_schema.go the
// table's schema as the data files' (with field ids); listed.go import.
//
// The mirror:
//
// sluice's own manifest stays the source of truth. Sync turns each version
// not yet mirrored into one Iceberg snapshot, in order, through
// github.com/apache/iceberg-go, which writes all Iceberg metadata (table
// metadata JSON, manifest lists, manifests); the data files are registered
// where they are, never rewritten. Every snapshot's summary carries
// sluice.version, which is how a later sync knows where to resume: a crash
// at any point leaves either the previous snapshot or the new one current,
// never a half-made one.
//
// A table has one mirror. Sync records it in the table's settings
// (_sluice/mirrors/iceberg.json: catalog URL without its password,
// identifier, location, Iceberg table uuid, whether every commit syncs
// it), and refuses to sync into an Iceberg table that mirrors another
// table (each mirror carries its table's id as sluice.table-id, and its
// metadata must be in the table's own _iceberg/) or that is not the
// recorded one: two tables' files never mix in one Iceberg table, two
// Iceberg tables never share one _iceberg/ folder, and vacuum, which keeps
// what the recorded mirror's snapshots reference, never misses one.
//
// Nothing sluice needs lives in the mirror's Iceberg location but what
// iceberg-go writes there, since Iceberg's orphan-file cleanup deletes
// anything else; and the mirror is gc.enabled=false, since its data files
// are sluice's: Iceberg's own snapshot expiry (iceberg-go's, Spark's)
// refuses to run on it, and Retain expires its snapshots for vacuum
// without deleting a file.
//
// Files: sync.go Sync and the per-version snapshot; owner.go which
// Iceberg table is a table's mirror, and its properties; catalog.go the
// SQL catalog and creating the mirror; schema.go the type and partition
// mapping; evolve.go new columns; retain.go expiring snapshots with
// vacuum's retention and the files the others reference; settings.go the
// table's mirror settings; hint.go version-hint.text, for readers that
// take the mirror's path; bounds.go the column statistics of data files,
// for pruning.
// The mirror's metadata lives under the table's _iceberg/ folder, on
// whatever store the table is (local disk, S3). It imports catalog and
// cloud (and internal/pqio, to read the statistics' text) only, never the
// jobs (ingest, compact, rollup, warehouse).
//
// A sync's cost follows the change, not the table: it reads only the
// partitions whose pieces a version changed, and appends through
// iceberg-go's fast append (a new manifest for the new files, the others
// reused) without its duplicate check, which would read every manifest.
package iceberg
