package catalog

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"time"

	"github.com/google/uuid"

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
	// HasDeletes says rows of the file are deleted by other files (an
	// Iceberg table's position deletes): compaction rewrites it whatever
	// its size, leaving those rows out. Never set for a sluice table.
	HasDeletes bool `json:"-"`
}

// NewDataFilePath returns a fresh, unique key for a data file in partition
// (a Hive folder, "" for none): <partition>/part-<time>-<uuid>.zstd.parquet.
// The time prefix sorts files by creation; the UUID makes names unique
// across writers, so data files never overwrite each other.
func NewDataFilePath(partition string) string {
	name := fmt.Sprintf("part-%s-%s.zstd.parquet", time.Now().UTC().Format("20060102T150405"), uuid.NewString())
	if partition == "" {
		return name
	}
	return partition + "/" + name
}

// NewDataFilePath names a data file written for the table, in partition:
// NewDataFilePath's name. A table of another format names its own (see
// Maintainable).
func (t *Table) NewDataFilePath(partition string) string { return NewDataFilePath(partition) }

// ownDataFile matches the base names NewDataFilePath gives.
var ownDataFile = regexp.MustCompile(`^part-[0-9]{8}T[0-9]{6}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.zstd\.parquet$`)

// isOwnDataFile reports whether key is named as sluice names the data
// files it writes.
func isOwnDataFile(key string) bool { return ownDataFile.MatchString(path.Base(key)) }

// WriteFiles writes rows (in the table schema's column order) as one data
// file per partition and returns them, ready for a Change's Add. Nothing is
// visible until they are committed.
func (t *Table) WriteFiles(ctx context.Context, m *Manifest, rows [][]any) ([]DataFile, error) {
	type group struct {
		vals map[string]*string
		rows [][]any
	}
	groups := map[string]*group{}
	var order []string
	router := NewPartitioner(m.Schema, m.Spec)
	for _, r := range rows {
		p, vals, err := router.Of(r)
		if err != nil {
			return nil, err
		}
		g := groups[p]
		if g == nil {
			g = &group{vals: vals}
			groups[p] = g
			order = append(order, p)
		}
		g.rows = append(g.rows, r)
	}
	var out []DataFile
	for _, p := range order {
		g := groups[p]
		key := NewDataFilePath(p)
		n, stats, err := pqio.WriteParquet(ctx, t.store, key, m.Schema, g.rows)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", t.store.URL(key), err)
		}
		out = append(out, DataFile{Path: key, Partition: p, PartitionValues: g.vals, Bytes: n, FileStats: stats})
	}
	return out, nil
}
