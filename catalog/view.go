package catalog

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Readable is what reading a table's rows needs, whatever its format: its
// newest version and the versions before it, its partitions and live
// files, where a data file lives, and what names the table. *Table
// implements it for a sluice table; View for one version of a table of
// another format, read through that format's own log (a Delta table), so
// that the jobs that only read a table (rollup's source, publish) read
// either through the same code.
type Readable interface {
	// Location is the location the table was opened with.
	Location() string
	// Store is the table's folder.
	Store() cloud.Store
	// Identity names the table at version m, however its location is
	// spelled.
	Identity(m *Manifest) string
	Latest(ctx context.Context) (*Manifest, error)
	// Manifest reads version v; ErrVersionNotFound when it cannot.
	Manifest(ctx context.Context, v int64) (*Manifest, error)
	Partitions(ctx context.Context, m *Manifest) ([]PartitionRef, error)
	PartitionFiles(ctx context.Context, ref PartitionRef) ([]DataFile, error)
	// Files are the live files of m, sorted by path.
	Files(ctx context.Context, m *Manifest) ([]DataFile, error)
	DataFileStore(ctx context.Context, f DataFile) (cloud.Store, string, error)
	FileURL(f DataFile) string
	Close() error
}

var (
	_ Readable = (*Table)(nil)
	_ Readable = (*View)(nil)
)

// ReadSchema is the schema a reader of m's rows sees: m's columns, then
// its identity partition fields that are no column of it (Spark's
// partition columns, found only in folder names or a log), nullable, as
// Spark and DuckDB read a Hive-partitioned folder. A data file lacking a
// column that is a partition field has it from its PartitionValues.
func ReadSchema(m *Manifest) Schema {
	cols := append([]Column(nil), m.Schema.Columns...)
	for _, f := range m.Spec.Fields {
		if _, ok := m.Schema.Column(f.Name); ok || f.Transform != "identity" {
			continue
		}
		cols = append(cols, Column{Name: f.Name, Type: f.Type, Nullable: true})
	}
	return Schema{Columns: cols}
}

// View is one version of a table of another format, as its own log gives
// it: a manifest and the live data files, held in memory and committed
// nowhere. It is read as a sluice table's version is (Readable), and
// holds that version only. Its schema may hold partition columns that the
// data files lack: their values are the files' PartitionValues, in the
// canonical text of the columns' types (pqio.FormatValue).
type View struct {
	t      *Table // where the files are, and their stores
	format string
	m      Manifest
	files  []DataFile // sorted by path
	refs   []PartitionRef
	parts  map[string][]DataFile
}

// NewView returns the view of version m (Version, TableID, Schema and
// Spec set) of the table of format ("Delta") at location, whose folder
// is store, holding files (Path, Partition, PartitionValues and Bytes
// set). Every file's footer is read, a few at a time, for its rows and
// column statistics, which the logs of other formats may lack or keep
// less exactly; m's totals are set from them. The view owns store: Close
// closes it. On an error store stays the caller's.
func NewView(ctx context.Context, location string, store cloud.Store, format string, m Manifest, files []DataFile) (*View, error) {
	v := &View{t: NewTable(location, store, Options{}), format: format, m: m, parts: map[string][]DataFile{}}
	v.files = append([]DataFile(nil), files...)
	sort.Slice(v.files, func(i, j int) bool { return v.files[i].Path < v.files[j].Path })
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(v.t.opts.ReadConcurrency)
	for i := range v.files {
		f := &v.files[i]
		g.Go(func() error {
			st, key, err := v.t.DataFileStore(gctx, *f)
			if err != nil {
				return fmt.Errorf("open %s: %w", v.t.FileURL(*f), err)
			}
			if _, f.FileStats, err = pqio.InspectParquet(gctx, st, key, f.Bytes); err != nil {
				return fmt.Errorf("%s table %s at version %d: %w", format, cloud.Redact(location), m.Version, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		v.t.closeExternal()
		return nil, err
	}
	v.m.Files, v.m.Rows, v.m.Bytes = 0, 0, 0
	for _, f := range v.files {
		if _, ok := v.parts[f.Partition]; !ok {
			v.refs = append(v.refs, PartitionRef{Partition: f.Partition})
		}
		v.parts[f.Partition] = append(v.parts[f.Partition], f)
		v.m.Files++
		v.m.Rows += f.Rows
		v.m.Bytes += f.Bytes
	}
	sort.Slice(v.refs, func(i, j int) bool { return v.refs[i].Partition < v.refs[j].Partition })
	for i := range v.refs {
		for _, f := range v.parts[v.refs[i].Partition] {
			v.refs[i].Files++
			v.refs[i].Rows += f.Rows
			v.refs[i].Bytes += f.Bytes
		}
	}
	return v, nil
}

// Format names the table's format: "Delta".
func (v *View) Format() string { return v.format }

// Location returns the location the table was opened with.
func (v *View) Location() string { return v.t.Location() }

// Store returns the table's folder.
func (v *View) Store() cloud.Store { return v.t.Store() }

// Identity returns what names the table: the view's TableID (the
// format's own table id), or its folder's absolute URL when it has none.
func (v *View) Identity(m *Manifest) string { return m.Identity(v.t.Store().URL("")) }

// Latest returns the view's version. The manifest is the caller's.
func (v *View) Latest(context.Context) (*Manifest, error) {
	m := v.m
	return &m, nil
}

// Manifest returns the view's version when v is it; any other version
// fails with ErrVersionNotFound: a view holds one.
func (v *View) Manifest(ctx context.Context, version int64) (*Manifest, error) {
	if err := v.check(version); err != nil {
		return nil, err
	}
	return v.Latest(ctx)
}

// check refuses another version than the view's.
func (v *View) check(version int64) error {
	if version != v.m.Version {
		return fmt.Errorf("%s: version %d: %w (a view of the %s table holds version %d only)",
			cloud.Redact(v.Location()), version, ErrVersionNotFound, v.format, v.m.Version)
	}
	return nil
}

// Partitions returns the refs of every partition, sorted. A ref lists no
// pieces: PartitionFiles finds its files by its Partition.
func (v *View) Partitions(_ context.Context, m *Manifest) ([]PartitionRef, error) {
	if err := v.check(m.Version); err != nil {
		return nil, err
	}
	return append([]PartitionRef(nil), v.refs...), nil
}

// PartitionFiles returns the live files of one partition.
func (v *View) PartitionFiles(_ context.Context, ref PartitionRef) ([]DataFile, error) {
	return append([]DataFile(nil), v.parts[ref.Partition]...), nil
}

// Files returns the live files, sorted by path.
func (v *View) Files(_ context.Context, m *Manifest) ([]DataFile, error) {
	if err := v.check(m.Version); err != nil {
		return nil, err
	}
	return append([]DataFile(nil), v.files...), nil
}

// DataFileStore returns the store and key where data file f lives.
func (v *View) DataFileStore(ctx context.Context, f DataFile) (cloud.Store, string, error) {
	return v.t.DataFileStore(ctx, f)
}

// FileURL returns where a data file lives, as users write locations.
func (v *View) FileURL(f DataFile) string { return v.t.FileURL(f) }

// Close releases the table's store and any opened for files elsewhere.
func (v *View) Close() error { return v.t.Close() }

// closeExternal closes the stores opened for data files outside the
// table's folder, leaving the table's own.
func (t *Table) closeExternal() {
	t.extMu.Lock()
	defer t.extMu.Unlock()
	for dir, st := range t.external {
		st.Close()
		delete(t.external, dir)
	}
}
