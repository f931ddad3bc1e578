package iceberg

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
)

// change is what one snapshot committed by another writer did that a
// rewrite must know: the data files it removed and the delete files it
// added.
type change struct {
	removed map[string]bool
	deletes []ice.DataFile
}

// changes caches each snapshot's change, read once for every commit of
// a run that has to look at it.
type changes struct {
	mu sync.Mutex
	by map[int64]*change
}

// of gives the change of snapshot s of tbl, read on the first ask: the
// entries its own manifests added or deleted (a manifest carried over
// from its parent holds none).
func (c *changes) of(ctx context.Context, tbl *table.Table, s *table.Snapshot) (*change, error) {
	c.mu.Lock()
	ch, ok := c.by[s.SnapshotID]
	c.mu.Unlock()
	if ok {
		return ch, nil
	}
	ch, err := readChange(ctx, tbl, s)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.by == nil {
		c.by = map[int64]*change{}
	}
	c.by[s.SnapshotID] = ch
	c.mu.Unlock()
	return ch, nil
}

// readChange reads what snapshot s of tbl removed and added.
func readChange(ctx context.Context, tbl *table.Table, s *table.Snapshot) (*change, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mans, err := s.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read the manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	ch := &change{removed: map[string]bool{}}
	for _, mf := range mans {
		if mf.SnapshotID() != s.SnapshotID {
			continue // written by an earlier snapshot: nothing of s's
		}
		for e, err := range mf.Entries(fs, false) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			if e.SnapshotID() != s.SnapshotID {
				continue
			}
			df := e.DataFile()
			switch {
			case df.ContentType() == ice.EntryContentData && e.Status() == ice.EntryStatusDELETED:
				ch.removed[df.FilePath()] = true
			case df.ContentType() != ice.EntryContentData && e.Status() == ice.EntryStatusADDED:
				ch.deletes = append(ch.deletes, df)
			}
		}
	}
	return ch, nil
}

// checkConcurrent fails with catalog.ErrConflict when a snapshot
// committed since the one Latest read, up to tbl's current one, removed
// one of the inputs or added deletes that may apply to one (a position
// delete or deletion vector naming it, or not naming its file and of its
// partition; any equality delete): the rewrite would bring back rows
// or drop them. A snapshot this run committed itself removed only other
// inputs, and is looked at like the rest. The current snapshot not
// descending from the one read (a rollback) is a conflict too.
func (m *Maintained) checkConcurrent(ctx context.Context, tbl *table.Table, inputs []catalog.DataFile) error {
	meta := tbl.Metadata()
	paths := make(map[string]bool, len(inputs))
	parts := map[string]bool{}
	for _, f := range inputs {
		lf := m.live[f.Path]
		paths[lf.df.FilePath()] = true
		parts[partitionID(lf.df)] = true
	}
	for s := tbl.CurrentSnapshot(); s == nil || s.SnapshotID != m.base; {
		if s == nil || s.ParentSnapshotID == nil {
			return fmt.Errorf("%s: %w: the table's current snapshot does not descend from the one the compaction read (rolled back or replaced)", m.Address(), catalog.ErrConflict)
		}
		ch, err := m.changes.of(ctx, tbl, s)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Address(), err)
		}
		for p := range ch.removed {
			if paths[p] {
				return fmt.Errorf("%s: %w: snapshot %d removed %s since the compaction read the table", m.Address(), catalog.ErrConflict, s.SnapshotID, p)
			}
		}
		for _, d := range ch.deletes {
			if ref := d.ReferencedDataFile(); ref != nil {
				if paths[*ref] {
					return fmt.Errorf("%s: %w: snapshot %d deleted rows of %s since the compaction read the table", m.Address(), catalog.ErrConflict, s.SnapshotID, *ref)
				}
				continue
			}
			if d.ContentType() == ice.EntryContentEqDeletes || parts[partitionID(d)] {
				return fmt.Errorf("%s: %w: snapshot %d added deletes (%s) that may apply to the compaction's inputs", m.Address(), catalog.ErrConflict, s.SnapshotID, d.FilePath())
			}
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// partitionID names a file's partition of its spec.
func partitionID(df ice.DataFile) string {
	p := df.Partition()
	keys := slices.Sorted(maps.Keys(p))
	id := fmt.Sprint(df.SpecID())
	for _, k := range keys {
		id += fmt.Sprintf("/%d=%v", k, p[k])
	}
	return id
}

// removable are the inputs' entries and the delete files that, once they
// and the inputs this run committed before are gone, apply to no live
// data file of the snapshot Latest read: a delete file applies to no
// data file added after it, so none added since can need it.
func (m *Maintained) removable(inputs []catalog.DataFile) []ice.DataFile {
	removing := make(map[string]bool, len(inputs))
	var out []ice.DataFile
	for _, f := range inputs {
		removing[f.Path] = true
		out = append(out, m.live[f.Path].df)
	}
	seen := map[string]bool{}
	for _, f := range inputs {
		for _, d := range m.live[f.Path].deletes {
			id := deleteID(d)
			if seen[id] {
				continue
			}
			seen[id] = true
			all := true
			for _, k := range m.users[id] {
				all = all && (removing[k] || m.removed[k])
			}
			if all {
				out = append(out, d)
			}
		}
	}
	return out
}
