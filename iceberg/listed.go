package iceberg

import (
	"context"
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// IsMetadataFile reports whether loc names an Iceberg table's metadata
// file (…/metadata/00003-<uuid>.metadata.json).
func IsMetadataFile(loc string) bool { return strings.HasSuffix(loc, metadataSuffix) }

// Listed reads the current snapshot of the Iceberg table at raw, an
// iceberg+ location or the location of its metadata file, and gives the
// table's location and its live data files there, for an import to
// adopt in place. Refused, in one line: a snapshot with delete files
// (adopting the data files alone would bring the deleted rows back),
// data files of more than one partition spec or outside the table's
// location, and files that are not Parquet. Partition values are the
// spec's fields as Iceberg writes them in paths (ts_day=2024-01-31).
func Listed(ctx context.Context, raw string) (string, *catalog.Listed, error) {
	tbl, where, closeFn, err := openForListing(ctx, raw)
	if err != nil {
		return "", nil, err
	}
	defer closeFn()
	snap := tbl.CurrentSnapshot()
	loc := strings.TrimSuffix(tbl.Location(), "/")
	l := &catalog.Listed{Log: "the Iceberg table's current snapshot"}
	if snap == nil {
		return loc, l, nil
	}
	l.Log = fmt.Sprintf("the Iceberg table's snapshot %d", snap.SnapshotID)
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("%s: plan the files of snapshot %d: %w", where, snap.SnapshotID, err)
	}
	meta, sch := tbl.Metadata(), tbl.Schema()
	spec := -1
	seen := map[string]bool{}
	for _, t := range tasks {
		f := t.File
		switch {
		case len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0:
			return "", nil, fmt.Errorf("%s: %w: %s has deletes; importing it would bring deleted rows back (compact the table in place with sluice compact, which applies position deletes)", where, ErrNotBuilt, f.FilePath())
		case f.FileFormat() != ice.ParquetFile:
			return "", nil, fmt.Errorf("%s: %s is %s, not Parquet", where, f.FilePath(), f.FileFormat())
		case spec >= 0 && int(f.SpecID()) != spec:
			return "", nil, fmt.Errorf("%s: %w: its files are of partition specs %d and %d; import adopts a table of one spec", where, ErrNotBuilt, min(spec, int(f.SpecID())), max(spec, int(f.SpecID())))
		}
		if seen[f.FilePath()] {
			continue // another split of the same file
		}
		seen[f.FilePath()] = true
		spec = int(f.SpecID())
		key, ok := keyIn(loc, f.FilePath())
		if !ok {
			return "", nil, fmt.Errorf("%s: %s is outside the table's location %s", where, f.FilePath(), cloud.Redact(loc))
		}
		ps := meta.PartitionSpecByID(spec)
		if ps == nil {
			return "", nil, fmt.Errorf("%s: %s has partition spec %d, which the table does not have", where, f.FilePath(), spec)
		}
		_, vals, _ := partitionOf(*ps, spec, sch, f.Partition())
		if l.PartitionKeys == nil {
			for _, pf := range ps.Fields() {
				l.PartitionKeys = append(l.PartitionKeys, pf.Name)
			}
		}
		l.Files = append(l.Files, catalog.ListedFile{Key: key, Size: f.FileSizeBytes(), PartitionValues: vals})
	}
	return loc, l, nil
}

// openForListing loads the table at raw: through its catalog, or from
// its metadata file.
func openForListing(ctx context.Context, raw string) (*table.Table, string, func(), error) {
	if IsTableURL(raw) {
		a, err := ParseTableURL(raw)
		if err != nil {
			return nil, "", nil, err
		}
		cat, err := openForeignCatalog(ctx, a)
		if err != nil {
			return nil, "", nil, err
		}
		tbl, err := cat.load(ctx)
		if err != nil {
			cat.Close()
			return nil, "", nil, err
		}
		return tbl, a.String(), func() { cat.Close() }, nil
	}
	where := cloud.Redact(raw)
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"imported"}, raw, iceio.LoadFSFunc(ioProperties(), raw), nil)
	if err != nil {
		return nil, "", nil, fmt.Errorf("read the Iceberg metadata file %s: %w", where, err)
	}
	return tbl, where, func() {}, nil
}

// keyIn is path's key under the location loc (as Iceberg spells it, a
// URL or a path), false for a path elsewhere.
func keyIn(loc, path string) (string, bool) {
	for _, l := range []string{loc, strings.TrimPrefix(loc, "file://"), "file://" + loc} {
		if rest, ok := strings.CutPrefix(path, l+"/"); ok && rest != "" {
			return rest, true
		}
	}
	return "", false
}
