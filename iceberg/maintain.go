package iceberg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	ice "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// MaintainOptions say how an Iceberg table is opened for maintenance.
type MaintainOptions struct {
	// DryRun opens the table to plan only: Commit is refused.
	DryRun bool
	// Engine names the writer in each snapshot's summary
	// ("sluice/v1.2.0").
	Engine string
}

// Maintained is a table in an Iceberg catalog, written by other engines,
// opened for maintenance: what compaction needs of a table
// (catalog.Maintainable), its compactions committed as Iceberg
// "replace" snapshots through iceberg-go's rewrite, which every Iceberg
// reader understands. The table stays its writers' table: sluice keeps
// nothing of its own beside it.
type Maintained struct {
	cat *foreignCatalog
	o   MaintainOptions
	st  cloud.Store // the table's location
	loc string      // the table's location, as its paths begin

	// What Latest read.
	tbl    *table.Table
	fs     iceio.IO // the table's file IO, for the rewrites to read deletes
	schema pqio.Schema
	base   int64                // the snapshot read, -1 for none
	live   map[string]*liveFile // the current snapshot's data files, by key
	users  map[string][]string  // delete file -> keys of the live files it applies to
	parts  map[string]part      // partitions, by the planner's key
	lp     table.LocationProvider
	last   int64 // the newest sequence number Commit landed, -1 before

	deleted     deletedRows
	deleteFiles deleteFiles // the position delete files read, each once
	// removed are the inputs this run committed; changes the other
	// writers' snapshots the commits looked at.
	removed map[string]bool
	changes changes
}

// liveFile is one data file of the snapshot Latest read.
type liveFile struct {
	df      ice.DataFile
	deletes []ice.DataFile // its position delete files and deletion vectors
	added   time.Time
}

// part is one partition of one spec: its spec, its tuple, and the path
// iceberg-go's writers give its files.
type part struct {
	spec   ice.PartitionSpec
	values map[int]any
	path   string
}

// Open opens the table at an iceberg+ location for maintenance. It reads
// the catalog's entry for the table and opens its location's store; the
// snapshot is read by Latest. The caller closes it.
func Open(ctx context.Context, raw string, o MaintainOptions) (*Maintained, error) {
	a, err := ParseTableURL(raw)
	if err != nil {
		return nil, err
	}
	cat, err := openForeignCatalog(ctx, a)
	if err != nil {
		return nil, err
	}
	tbl, err := cat.load(ctx)
	if err != nil {
		cat.Close()
		return nil, err
	}
	loc := strings.TrimSuffix(tbl.Location(), "/")
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		cat.Close()
		return nil, fmt.Errorf("%s: open its location %s: %w", a, cloud.Redact(loc), err)
	}
	return &Maintained{cat: cat, o: o, st: st, loc: loc, tbl: tbl, last: -1}, nil
}

// Address is the table's location, its password removed.
func (m *Maintained) Address() string { return m.cat.addr.String() }

// Latest reads the current snapshot and gives it as a manifest: its
// sequence number as the version, the data files' schema (with field
// ids), and the table's target file size (write.target-file-size-bytes,
// when set). A table with equality deletes is refused: a rewrite would
// have to apply them.
func (m *Maintained) Latest(ctx context.Context) (*catalog.Manifest, error) {
	tbl, err := m.cat.load(ctx)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	where := m.Address()
	if v := meta.Version(); v < 2 {
		return nil, fmt.Errorf("%s: %w: format version %d (sluice compacts format 2 and 3 tables)", where, ErrNotBuilt, v)
	}
	schema, err := dataSchema(tbl.Schema())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	lp, err := table.LoadLocationProvider(tbl.Location(), tbl.Properties())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	m.tbl, m.fs, m.schema, m.lp = tbl, fs, schema, lp
	man := &catalog.Manifest{Version: -1, TableID: meta.TableUUID().String(), Schema: schema, Properties: map[string]string{}}
	if n, err := strconv.ParseInt(tbl.Properties()[table.WriteTargetFileSizeBytesKey], 10, 64); err == nil && n > 0 {
		man.Properties[catalog.PropTargetFileSize] = strconv.FormatInt(n, 10)
	}
	m.live, m.parts, m.users, m.removed, m.base = map[string]*liveFile{}, map[string]part{}, map[string][]string{}, map[string]bool{}, -1
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return man, nil
	}
	man.Version = snap.SequenceNumber
	sc, err := m.scan(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	m.live, m.users, m.base = sc.live, sc.users, snap.SnapshotID
	return man, nil
}

// Files are the live data files of the snapshot Latest read, as the
// planner sees them: in the partition of their own spec (a file written
// before a spec change is rewritten under its spec, never moved to the
// new one), with their size, rows and the time the snapshot that added
// them was made. A file outside the table's location, or not Parquet,
// is left alone.
func (m *Maintained) Files(_ context.Context, man *catalog.Manifest) ([]catalog.DataFile, error) {
	if m.live == nil {
		return nil, fmt.Errorf("iceberg: Files of version %d before Latest read it", man.Version)
	}
	meta := m.tbl.Metadata()
	sch := m.tbl.Schema()
	out := make([]catalog.DataFile, 0, len(m.live))
	for key, lf := range m.live {
		spec := meta.PartitionSpecByID(int(lf.df.SpecID()))
		if spec == nil {
			return nil, fmt.Errorf("%s: data file %s has partition spec %d, which the table does not have", m.Address(), lf.df.FilePath(), lf.df.SpecID())
		}
		pkey, vals, p := partitionOf(*spec, meta.DefaultPartitionSpec(), sch, lf.df.Partition())
		m.parts[pkey] = p
		out = append(out, catalog.DataFile{Path: key, Partition: pkey, PartitionValues: vals, Bytes: lf.df.FileSizeBytes(),
			FileStats: pqio.FileStats{Rows: lf.df.Count()}, AddedAt: lf.added, HasDeletes: len(lf.deletes) > 0})
	}
	return out, nil
}

// partitionOf is the planner's key for a file's partition (Hive-style
// names and values; a spec other than the default one is named first,
// spec_id=N, so that two specs' files never share a bin), its values by
// name, and the partition as an output file is committed in.
func partitionOf(spec ice.PartitionSpec, defaultSpec int, sch *ice.Schema, values map[int]any) (string, map[string]*string, part) {
	var names []string
	vals := map[string]*string{}
	var ipath []string
	for _, f := range spec.Fields() {
		var rt ice.Type = ice.PrimitiveTypes.String
		if src, ok := sch.FindFieldByID(f.SourceID()); ok {
			rt = f.Transform.ResultType(src.Type)
		}
		v := values[f.FieldID]
		human := f.Transform.ToHumanStrType(rt, v)
		names = append(names, f.Name)
		if v != nil {
			s := human
			vals[f.Name] = &s
		} else {
			vals[f.Name] = nil
		}
		ipath = append(ipath, f.EscapedName()+"="+url.QueryEscape(human))
	}
	key := catalog.HiveDir(names, vals)
	if spec.ID() != defaultSpec {
		key = strings.TrimSuffix("spec_id="+strconv.Itoa(spec.ID())+"/"+key, "/")
	}
	return key, vals, part{spec: spec, values: values, path: strings.Join(ipath, "/")}
}

// DataFileStore is where a data file is: the table's location.
func (m *Maintained) DataFileStore(_ context.Context, f catalog.DataFile) (cloud.Store, string, error) {
	return m.st, f.Path, nil
}

// Store is the table's location, where compaction writes its files.
func (m *Maintained) Store() cloud.Store { return m.st }

// NewDataFilePath names a data file as the table's location provider
// places them (write.data.path, object-store layout), in the folder
// Iceberg's writers give the partition: 00000-0-<uuid>.parquet. Where
// the provider places it outside the table's location (the store
// compaction writes to), it goes under the location's data/ instead.
func (m *Maintained) NewDataFilePath(partition string) string {
	name := "00000-0-" + uuid.NewString() + ".parquet"
	if p := m.parts[partition].path; p != "" {
		name = p + "/" + name
	}
	if m.lp != nil {
		if key, ok := m.key(m.lp.NewDataLocation(name)); ok {
			return key
		}
	}
	return "data/" + name
}

// key is a file's key in the table's store: its path less the table's
// location, false for a file elsewhere.
func (m *Maintained) key(path string) (string, bool) { return keyIn(m.loc, path) }

// FullPath is the full path of a key of the table's store, as Iceberg
// records it.
func (m *Maintained) FullPath(key string) string { return m.loc + "/" + key }

// Close releases the catalog and the store.
func (m *Maintained) Close() error {
	return errors.Join(m.cat.Close(), m.st.Close())
}

var _ catalog.Maintainable = (*Maintained)(nil)
