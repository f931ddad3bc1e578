package delta

import (
	"fmt"

	"github.com/sluice-data/sluice/catalog"
)

// Listed gives the snapshot's live files as a sluice import adopts them:
// their keys relative to the table's root, sizes and partition values. A
// file outside the table's folder (an absolute path in the log) is
// refused: import adopts a folder's files.
func (s *Snapshot) Listed() (*catalog.Listed, error) {
	l := &catalog.Listed{Log: fmt.Sprintf("the Delta log at version %d", s.Version),
		PartitionKeys: s.Metadata.PartitionColumns, Files: make([]catalog.ListedFile, 0, len(s.Files))}
	for _, f := range s.Files {
		if f.outsideRoot() {
			return nil, fmt.Errorf("%s names %s, outside the table's folder: import adopts a folder's own files", l.Log, f.Path)
		}
		vals := make(map[string]*string, len(s.Metadata.PartitionColumns))
		for _, k := range s.Metadata.PartitionColumns {
			v, ok := f.Add.PartitionValues[k]
			if !ok {
				return nil, fmt.Errorf("%s: %s: %w: no value for partition column %q", l.Log, f.Path, ErrCorruptLog, k)
			}
			vals[k] = v
		}
		l.Files = append(l.Files, catalog.ListedFile{Key: f.Path, Size: f.Add.Size, PartitionValues: vals})
	}
	return l, nil
}
