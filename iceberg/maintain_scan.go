package iceberg

import (
	"context"
	"fmt"
	"slices"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// scanned is what one read of a snapshot's files found: its data files
// by key, and for each delete file the keys of the live data files it
// applies to.
type scanned struct {
	live  map[string]*liveFile
	users map[string][]string
}

// scan reads tbl's current snapshot: every live data file with its
// position deletes and deletion vectors (iceberg-go's scan planning,
// which matches deletes to data files by sequence number, partition and
// referenced file), and when the snapshot that added it was made. A
// data file outside the table's location, or not Parquet, is left out:
// sluice rewrites only what is in the table's own store. Equality
// deletes are refused, naming a file they apply to.
func (m *Maintained) scan(ctx context.Context, tbl *table.Table) (scanned, error) {
	s := scanned{live: map[string]*liveFile{}, users: map[string][]string{}}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return s, nil
	}
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return s, fmt.Errorf("plan the files of snapshot %d: %w", snap.SnapshotID, err)
	}
	added, err := addedTimes(ctx, tbl, snap)
	if err != nil {
		return s, err
	}
	for _, t := range tasks {
		if len(t.EqualityDeleteFiles) > 0 {
			return s, fmt.Errorf("%w: %s has equality deletes (%s)", ErrEqualityDeletes, t.File.FilePath(), t.EqualityDeleteFiles[0].FilePath())
		}
		key, ok := m.key(t.File.FilePath())
		if !ok || t.File.FileFormat() != ice.ParquetFile {
			continue
		}
		if _, dup := s.live[key]; dup {
			continue // another split of the same file
		}
		lf := &liveFile{df: t.File, added: added[t.File.FilePath()]}
		lf.deletes = append(slices.Clone(t.DeleteFiles), t.DeletionVectorFiles...)
		for _, d := range lf.deletes {
			s.users[deleteID(d)] = append(s.users[deleteID(d)], key)
		}
		s.live[key] = lf
	}
	return s, nil
}

// deleteID names a delete file's entry: its path, and for a deletion
// vector the offset of its blob in the Puffin file that holds several.
func deleteID(d ice.DataFile) string {
	if off := d.ContentOffset(); off != nil {
		return fmt.Sprintf("%s@%d", d.FilePath(), *off)
	}
	return d.FilePath()
}

// addedTimes gives each live data file of snap the time the snapshot
// that added it was made (for --min-file-age), read from the data
// manifests' entries; a file whose snapshot has expired is old, and
// left at the zero time.
func addedTimes(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (map[string]time.Time, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	meta := tbl.Metadata()
	out := map[string]time.Time{}
	for _, mf := range mans {
		if mf.ManifestContent() != ice.ManifestContentData {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for e, err := range mf.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			if s := meta.SnapshotByID(e.SnapshotID()); s != nil {
				out[e.DataFile().FilePath()] = time.UnixMilli(s.TimestampMs)
			}
		}
	}
	return out, nil
}
