package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ice "github.com/apache/iceberg-go"

	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
)

// Summary properties every mirrored snapshot carries.
const (
	// PropVersion is the sluice version a snapshot mirrors.
	PropVersion = "sluice.version"
	// PropOperation is the sluice operation that made that version.
	PropOperation = "sluice.operation"
)

// Options say where a table is mirrored.
type Options struct {
	// Namespace is the Iceberg namespace (created if missing); default
	// "sluice".
	Namespace string
	// Name is the Iceberg table name; default the table folder's last
	// element.
	Name string
	// TableUUID, when set, is the Iceberg table uuid the mirror must
	// have (Settings.TableUUID): Retain refuses any other.
	TableUUID string
	// Progress, when set, is called after each snapshot committed.
	Progress func(Snapshot)
}

// Snapshot is one mirrored version.
type Snapshot struct {
	SnapshotID       int64  `json:"snapshot_id"`
	Version          int64  `json:"version"`
	Operation        string `json:"operation"`
	MetadataLocation string `json:"metadata_location"`
}

// Result says what a sync did and where the mirror now stands.
type Result struct {
	Identifier       string `json:"identifier"`
	SnapshotID       int64  `json:"snapshot_id"`
	Version          int64  `json:"version"`
	MetadataLocation string `json:"metadata_location"`
	// Mirrored counts the snapshots this sync committed (0 when the
	// mirror was already current).
	Mirrored int   `json:"mirrored"`
	Created  bool  `json:"created"`
	From     int64 `json:"from_version"`
}

// ErrSchemaChanged is returned when a version's schema or partition spec
// differs from the mirror's in a way not mirrored: a column's type or
// nullability changed, a new column is not nullable, or the partitioning
// changed. New nullable columns are mirrored (see evolve).
var ErrSchemaChanged = errors.New("schema or partitioning changed")

// Sync brings the Iceberg mirror of tbl in cat up to tbl's newest version:
// each version after the one the mirror's current snapshot records becomes
// one snapshot, in order. It is idempotent, and resumes where a crashed or
// interrupted sync stopped.
//
// A table has one mirror, which Sync records in the table's settings
// (SettingsKey): a sync into an Iceberg table that mirrors another table
// (ErrAnotherTable) or that is not the recorded mirror
// (ErrMirroredElsewhere, ErrUnrecordedMirror) is refused, writing
// nothing. The mirror is kept gc.enabled=false and names its table
// (PropTableID); a mirror made before gets both at its next sync.
func Sync(ctx context.Context, tbl *catalog.Table, cat *Catalog, opts Options) (Result, error) {
	ident := table.Identifier{opts.Namespace, opts.Name}
	res := Result{Identifier: strings.Join(ident, ".")}
	latest, err := tbl.LatestVersion(ctx)
	if err != nil {
		return res, fmt.Errorf("read the table's latest version: %w", err)
	}
	if latest < 1 {
		return res, fmt.Errorf("table %s has no version to mirror", tbl.Location())
	}
	first, err := tbl.Manifest(ctx, 1)
	if err != nil {
		return res, fmt.Errorf("read version 1: %w", err)
	}
	last := first
	if latest > 1 {
		if last, err = tbl.Manifest(ctx, latest); err != nil {
			return res, fmt.Errorf("read version %d: %w", latest, err)
		}
	}
	it, created, err := cat.claim(ctx, tbl, ident, first, last)
	if err != nil {
		return res, err
	}
	res.Created = created
	for attempt := 0; ; attempt++ {
		err := syncFrom(ctx, it, tbl, latest, attempt == 0, &res, opts)
		if err == nil || attempt >= maxConflicts {
			if res.MetadataLocation != "" {
				// What was committed stands, even if a later version
				// failed: the hint names it.
				err = errors.Join(err, writeHint(ctx, tbl, res.MetadataLocation))
			}
			return res, err
		}
		// A commit that failed because a rival sync moved the mirror
		// first (iceberg-go has no sentinel for a failed requirement)
		// resumes after what the rival mirrored; any other failure
		// leaves the mirror where it was, and is returned.
		reloaded, lerr := cat.Load(ctx, ident)
		if lerr != nil {
			return res, err
		}
		if now, verr := mirroredVersion(reloaded); verr != nil || now <= res.Version {
			return res, err
		}
		it = reloaded
	}
}

// maxConflicts bounds how often one sync resumes after a rival's commit.
const maxConflicts = 20

// syncFrom mirrors the versions after the one the current snapshot of
// it records, up to latest, recording progress in res.
func syncFrom(ctx context.Context, it *table.Table, tbl *catalog.Table, latest int64, first bool, res *Result, opts Options) error {
	done, err := mirroredVersion(it)
	if err != nil {
		return err
	}
	if first {
		res.From = done
	}
	res.Version = done
	res.MetadataLocation = it.MetadataLocation()
	if s := it.CurrentSnapshot(); s != nil {
		res.SnapshotID = s.SnapshotID
	}
	if done > latest {
		return fmt.Errorf("the mirror %s records version %d, beyond the table's latest %d: it mirrors another table", res.Identifier, done, latest)
	}
	var prev *catalog.Manifest
	if done > 0 {
		if prev, err = tbl.Manifest(ctx, done); err != nil {
			return fmt.Errorf("read version %d: %w", done, err)
		}
	}
	for v := done + 1; v <= latest; v++ {
		cur, err := tbl.Manifest(ctx, v)
		if err != nil {
			return fmt.Errorf("read version %d: %w", v, err)
		}
		add, del, err := diffFiles(ctx, tbl, prev, cur)
		if err != nil {
			return err
		}
		if it, err = mirrorVersion(ctx, it, cur, add, del); err != nil {
			return fmt.Errorf("mirror version %d: %w", v, err)
		}
		prev = cur
		s := it.CurrentSnapshot()
		res.Mirrored++
		res.Version = v
		res.SnapshotID = s.SnapshotID
		res.MetadataLocation = it.MetadataLocation()
		if opts.Progress != nil {
			opts.Progress(Snapshot{SnapshotID: s.SnapshotID, Version: v, Operation: string(s.Summary.Operation), MetadataLocation: it.MetadataLocation()})
		}
	}
	return nil
}

// mirroredVersion is the sluice version the table's current snapshot
// mirrors, 0 when it has none yet.
func mirroredVersion(it *table.Table) (int64, error) {
	s := it.CurrentSnapshot()
	if s == nil {
		return 0, nil
	}
	if s.Summary == nil || s.Summary.Properties[PropVersion] == "" {
		return 0, fmt.Errorf("the Iceberg table's current snapshot %d has no %s: it was not written by sluice iceberg sync", s.SnapshotID, PropVersion)
	}
	v, err := strconv.ParseInt(s.Summary.Properties[PropVersion], 10, 64)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("the Iceberg table's current snapshot %d: %s=%q is not a version", s.SnapshotID, PropVersion, s.Summary.Properties[PropVersion])
	}
	return v, nil
}

// diffFiles returns, by Iceberg path, the files of version cur that
// version prev (nil: none) does not have, and those of prev that cur does
// not. Only partitions whose pieces differ are read: a partition a
// commit did not touch keeps its pieces, so the cost follows the change,
// not the table's size.
func diffFiles(ctx context.Context, tbl *catalog.Table, prev, cur *catalog.Manifest) (add, del map[string]catalog.DataFile, err error) {
	var before []catalog.PartitionRef
	if prev != nil {
		if before, err = tbl.Partitions(ctx, prev); err != nil {
			return nil, nil, fmt.Errorf("list version %d's partitions: %w", prev.Version, err)
		}
	}
	after, err := tbl.Partitions(ctx, cur)
	if err != nil {
		return nil, nil, fmt.Errorf("list version %d's partitions: %w", cur.Version, err)
	}
	add, del = map[string]catalog.DataFile{}, map[string]catalog.DataFile{}
	files := func(ref *catalog.PartitionRef, v int64) (map[string]catalog.DataFile, error) {
		out := map[string]catalog.DataFile{}
		if ref == nil {
			return out, nil
		}
		fs, err := tbl.PartitionFiles(ctx, *ref)
		if err != nil {
			return nil, fmt.Errorf("list version %d's files in %q: %w", v, ref.Partition, err)
		}
		for _, f := range fs {
			out[fileLocation(tbl.FileURL(f))] = f
		}
		return out, nil
	}
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		var b, a *catalog.PartitionRef
		switch {
		case j == len(after) || (i < len(before) && before[i].Partition < after[j].Partition):
			b = &before[i]
			i++
		case i == len(before) || after[j].Partition < before[i].Partition:
			a = &after[j]
			j++
		default:
			b, a = &before[i], &after[j]
			i, j = i+1, j+1
			if slices.Equal(b.Pieces, a.Pieces) {
				continue
			}
		}
		was, err := files(b, versionOf(prev))
		if err != nil {
			return nil, nil, err
		}
		is, err := files(a, cur.Version)
		if err != nil {
			return nil, nil, err
		}
		for p, f := range is {
			if _, ok := was[p]; !ok {
				add[p] = f
			}
		}
		for p, f := range was {
			if _, ok := is[p]; !ok {
				del[p] = f
			}
		}
	}
	return add, del, nil
}

func versionOf(m *catalog.Manifest) int64 {
	if m == nil {
		return 0
	}
	return m.Version
}

// mirrorVersion commits version m as one snapshot on it, given the files
// it adds to the version mirrored before it and those it removes: files
// only added are an append; files rewritten by a compaction a replace;
// any other removal (a rollback, a delete) an overwrite. A version that
// changed no file is an empty append, so that every version has its
// snapshot.
func mirrorVersion(ctx context.Context, it *table.Table, m *catalog.Manifest, added, removed map[string]catalog.DataFile) (*table.Table, error) {
	it, err := evolve(ctx, it, m)
	if err != nil {
		return nil, err
	}
	spec, sch := it.Spec(), it.Schema()
	var add, del []ice.DataFile
	for p, f := range added {
		df, err := dataFile(p, f, m, sch, spec)
		if err != nil {
			return nil, err
		}
		add = append(add, df)
	}
	for p, f := range removed {
		df, err := dataFile(p, f, m, sch, spec)
		if err != nil {
			return nil, err
		}
		del = append(del, df)
	}
	props := ice.Properties{PropVersion: strconv.FormatInt(m.Version, 10), PropOperation: m.Operation}
	tx := it.NewTransaction()
	// The commit is a compare-and-swap on the current snapshot: a rival
	// sync that mirrored this version first makes ours fail, never
	// mirror it twice.
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, err
	}
	switch {
	case len(del) == 0 && len(add) == 0:
		err = tx.AddFiles(ctx, nil, props, false)
	case len(del) == 0:
		// Every file added is new to the mirror (it is not in the
		// version the current snapshot mirrors): iceberg-go's check for
		// that would read every manifest, the whole table.
		err = tx.AddDataFiles(ctx, add, props, table.WithoutDuplicateCheck())
	case !m.Summary.DataChange && len(add) > 0:
		rw := tx.NewRewrite(props)
		for _, df := range del {
			rw.DeleteFile(df)
		}
		for _, df := range add {
			rw.AddDataFile(df)
		}
		err = rw.Commit(ctx)
	default:
		err = tx.ReplaceDataFilesWithDataFiles(ctx, del, add, props)
	}
	if err != nil {
		return nil, fmt.Errorf("stage the snapshot: %w", err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit the snapshot: %w", err)
	}
	return next, nil
}

// dataFile describes sluice file f of version m, at Iceberg path p, to
// Iceberg: its size, rows, partition tuple and column statistics (value
// and null counts, lower and upper bounds), all from the sluice manifest;
// the file itself is not read.
func dataFile(p string, f catalog.DataFile, m *catalog.Manifest, sch *ice.Schema, ispec ice.PartitionSpec) (ice.DataFile, error) {
	part, types, err := partitionData(m.Spec, ispec, f)
	if err != nil {
		return nil, err
	}
	b, err := ice.NewDataFileBuilder(ispec, ice.EntryContentData, p, ice.ParquetFile, part, types, nil, f.Rows, f.Bytes)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", p, err)
	}
	cm := columnMetrics(f, m.Schema, sch)
	b.ValueCounts(cm.values).NullValueCounts(cm.nulls).LowerBoundValues(cm.lower).UpperBoundValues(cm.upper)
	return b.Build(), nil
}

// fileLocation is a location as Iceberg writes it: a URL, file:// for
// local paths.
func fileLocation(loc string) string {
	if strings.HasPrefix(loc, "/") {
		return "file://" + loc
	}
	return loc
}
