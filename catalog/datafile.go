package catalog

import (
	"time"

	"github.com/sluice-data/sluice/internal/pqio"
)

// DataFile is one live data file of a table, as a manifest records it.
type DataFile struct {
	// Path is the file's key relative to the table root, '/'-separated,
	// e.g. "date=2024-01-31/part-00000-<uuid>.zstd.parquet".
	Path string `json:"path"`
	// Partition is the Hive partition folder ("date=2024-01-31",
	// "a=1/b=x"), "" for an unpartitioned table. It groups files into the
	// per-partition pieces of a manifest.
	Partition string `json:"-"`
	// PartitionValues are the decoded partition values by partition field
	// name; a nil value is SQL NULL (Hive's __HIVE_DEFAULT_PARTITION__).
	PartitionValues map[string]*string `json:"pv,omitempty"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	pqio.FileStats
	// AddedAt is when the commit that added the file was staged (what
	// compaction's --min-file-age measures); AddedVersion the version that
	// commit was first built for. A commit that lost races to appends
	// lands a few versions later with its file lists reused, so the
	// version that added the file is at least AddedVersion; History gives
	// the exact one. Both are set by the commit, not by the writer.
	AddedVersion int64     `json:"added_v"`
	AddedAt      time.Time `json:"added_at"`
}
