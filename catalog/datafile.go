package catalog

import "time"

// ColumnStats are one column's statistics over one data file. Min and Max
// are in the column type's canonical text form (see FormatValue) and are nil
// when unknown (all nulls, or the writer kept no statistics).
//
// A string bound holds at most StatsTruncateBytes bytes: a longer min is
// cut to a prefix (MinTruncated) and a longer max to a prefix rounded up
// (MaxTruncated), so both still bound every value, but a truncated bound
// is no value of the file: nothing may use it as one (an aggregate's
// min/max answered from statistics, say). MaxTruncated with a nil Max
// says that no prefix could be rounded up: there is no upper bound.
// Manifests written before truncation have neither flag: their bounds are
// exact.
type ColumnStats struct {
	Min          *string `json:"min,omitempty"`
	Max          *string `json:"max,omitempty"`
	MinTruncated bool    `json:"min_trunc,omitempty"`
	MaxTruncated bool    `json:"max_trunc,omitempty"`
	NullCount    int64   `json:"nulls"`
}

// FileStats are what reading a Parquet file's footer tells: its rows and
// per-column statistics, keyed by column name.
type FileStats struct {
	Rows    int64                  `json:"rows"`
	Columns map[string]ColumnStats `json:"cols,omitempty"`
}

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
	FileStats
	// AddedAt is when the commit that added the file was staged (what
	// compaction's --min-file-age measures); AddedVersion the version that
	// commit was first built for. A commit that lost races to appends
	// lands a few versions later with its file lists reused, so the
	// version that added the file is at least AddedVersion; History gives
	// the exact one. Both are set by the commit, not by the writer.
	AddedVersion int64     `json:"added_v"`
	AddedAt      time.Time `json:"added_at"`
}
