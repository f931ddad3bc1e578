package sparklog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-data/sluice/catalog"
)

// Listed gives the snapshot's live files as a sluice import adopts them:
// their keys relative to the output folder (see Keys), sizes, and the
// partition keys and values of their Hive folders, which must be the
// same keys for every file. A file that is not Parquet is refused (import
// adopts Parquet files; a sink may have written JSON, CSV or ORC), and so
// is a file outside the folder.
func (s *Snapshot) Listed() (*catalog.Listed, error) {
	l := &catalog.Listed{Log: fmt.Sprintf("the Spark sink log at batch %d", s.Batch),
		Files: make([]catalog.ListedFile, 0, len(s.Files))}
	keys, err := s.Keys()
	if err != nil {
		return nil, err
	}
	for i, key := range keys {
		where := s.entries[i].where
		if !strings.HasSuffix(key, ".parquet") {
			return nil, fmt.Errorf("%s: %s names %s, not a Parquet file: import adopts Parquet files", l.Log, where, s.Files[i].Path)
		}
		ks, vals, err := partitionOf(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %s: %w", l.Log, where, s.Files[i].Path, err)
		}
		if i == 0 {
			l.PartitionKeys = ks
		} else if !slices.Equal(ks, l.PartitionKeys) {
			return nil, fmt.Errorf("%s: %s: %s: partition keys %v differ from %v of %s",
				l.Log, where, s.Files[i].Path, ks, l.PartitionKeys, s.Files[0].Path)
		}
		l.Files = append(l.Files, catalog.ListedFile{Key: key, Size: s.Files[i].Size, PartitionValues: vals})
	}
	return l, nil
}
