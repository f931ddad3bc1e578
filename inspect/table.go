package inspect

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/iceberg"
)

// The formats a Table is read as (Table.Format).
const (
	FormatSluice  = "sluice"
	FormatDelta   = "delta"
	FormatIceberg = "iceberg"
)

// ErrVersion: a version the table cannot be read at (vacuumed, not yet
// written, or not kept by its format's reader).
var ErrVersion = errors.New("version not readable")

// OpenOptions say how a table is opened for reading.
type OpenOptions struct {
	// Catalog are the options of a sluice table (its logger, say); its
	// Observers are never called, as nothing is committed.
	Catalog catalog.Options
}

// Table is a table of any format, opened for reading only.
type Table struct {
	loc    string
	format string

	cat         *catalog.Table          // the sluice table; a Delta table's folder too
	ice         *iceberg.Maintained     // an Iceberg table
	mu          sync.Mutex              // guards views and iceLatest
	views       map[int64]*catalog.View // a Delta table's versions read
	deltaLatest int64
	iceLatest   *catalog.Manifest
}

// Open opens the table at loc, whatever its kind, for reading: a table in
// an Iceberg catalog (an iceberg+ location, opened with DryRun: nothing
// can be committed), a sluice table, or a folder holding a Delta log and
// no sluice table (a folder holding both reads as the sluice table, as
// every reader of sluice reads it). A location holding none fails with
// catalog.ErrTableNotFound. The caller closes the table.
func Open(ctx context.Context, loc string, o OpenOptions) (*Table, error) {
	where := cloud.Redact(loc)
	if iceberg.IsTableURL(loc) {
		m, err := iceberg.Open(ctx, loc, iceberg.MaintainOptions{DryRun: true})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", where, err)
		}
		return &Table{loc: loc, format: FormatIceberg, ice: m}, nil
	}
	co := o.Catalog
	co.Observers = nil
	ct, err := catalog.Open(ctx, loc, co)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", where, err)
	}
	t := &Table{loc: loc, format: FormatSluice, cat: ct}
	_, err = ct.LatestVersion(ctx)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, catalog.ErrTableNotFound) {
		ct.Close()
		return nil, err
	}
	isDelta, derr := delta.IsDelta(ctx, ct.Store())
	if derr != nil {
		ct.Close()
		return nil, fmt.Errorf("open %s: %w", where, derr)
	}
	if !isDelta {
		ct.Close()
		return nil, err
	}
	t.format = FormatDelta
	v, err := t.deltaView(ctx, delta.Latest)
	if err != nil {
		ct.Close()
		return nil, err
	}
	t.deltaLatest = v.m.Version
	return t, nil
}

// deltaViewOf is a Delta view and its manifest.
type deltaViewOf struct {
	v *catalog.View
	m *catalog.Manifest
}

// deltaView reads version (delta.Latest: the newest) of the Delta table
// as a view, kept until Close. A version with deletion vectors is refused
// by the Delta reader: its deleted rows would be read.
func (t *Table) deltaView(ctx context.Context, version int64) (deltaViewOf, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.views[version]; ok {
		m, err := v.Latest(ctx)
		return deltaViewOf{v, m}, err
	}
	where := cloud.Redact(t.loc)
	snap, err := delta.New(t.cat.Store()).Snapshot(ctx, version)
	if err != nil {
		return deltaViewOf{}, fmt.Errorf("open %s: %w", where, err)
	}
	// The view owns its store: each gets its own.
	st, err := cloud.Open(ctx, t.loc)
	if err != nil {
		return deltaViewOf{}, fmt.Errorf("open %s: %w", where, err)
	}
	v, err := snap.View(ctx, t.loc, st)
	if err != nil {
		st.Close()
		return deltaViewOf{}, fmt.Errorf("open %s: %w", where, err)
	}
	if t.views == nil {
		t.views = map[int64]*catalog.View{}
	}
	m, _ := v.Latest(ctx)
	t.views[m.Version] = v
	if version == delta.Latest {
		t.views[delta.Latest] = v
	}
	return deltaViewOf{v, m}, nil
}

// Format is the table's format: FormatSluice, FormatDelta or
// FormatIceberg.
func (t *Table) Format() string { return t.format }

// Location is the location the table was opened with, as given.
func (t *Table) Location() string { return t.loc }

// Catalog is the sluice table, nil for a table of another format.
func (t *Table) Catalog() *catalog.Table {
	if t.format != FormatSluice {
		return nil
	}
	return t.cat
}

// Store is the table's folder: where a sluice table keeps its versions
// and RecordPublish its notes. Nil for an Iceberg table, whose folder is
// its writers'.
func (t *Table) Store() cloud.Store {
	if t.cat == nil {
		return nil
	}
	return t.cat.Store()
}

// Latest reads the newest version.
func (t *Table) Latest(ctx context.Context) (*catalog.Manifest, error) {
	switch t.format {
	case FormatIceberg:
		m, err := t.ice.Latest(ctx)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", cloud.Redact(t.loc), err)
		}
		t.mu.Lock()
		t.iceLatest = m
		t.mu.Unlock()
		return m, nil
	case FormatDelta:
		d, err := t.deltaView(ctx, delta.Latest)
		return d.m, err
	}
	return t.cat.Latest(ctx)
}

// Version reads version n: a sluice table's from 1, a Delta table's
// from 0; an Iceberg table is read at its current snapshot only (n its
// sequence number). A version that cannot be read fails with ErrVersion.
func (t *Table) Version(ctx context.Context, n int64) (*catalog.Manifest, error) {
	where := cloud.Redact(t.loc)
	switch t.format {
	case FormatIceberg:
		m, err := t.Latest(ctx)
		if err != nil {
			return nil, err
		}
		if m.Version != n {
			return nil, fmt.Errorf("%s: version %d: %w (an Iceberg table is read at its current snapshot, sequence number %d)", where, n, ErrVersion, m.Version)
		}
		return m, nil
	case FormatDelta:
		if n < 0 {
			return nil, fmt.Errorf("%s: version %d: %w (a Delta table's versions start at 0)", where, n, ErrVersion)
		}
		d, err := t.deltaView(ctx, n)
		if errors.Is(err, delta.ErrVersionNotFound) {
			return nil, fmt.Errorf("%s: version %d: %w: %w", where, n, ErrVersion, err)
		}
		return d.m, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%s: version %d: %w (a sluice table's versions start at 1)", where, n, ErrVersion)
	}
	m, err := t.cat.Manifest(ctx, n)
	if errors.Is(err, catalog.ErrVersionNotFound) {
		return nil, fmt.Errorf("%s: version %d: %w: %w", where, n, ErrVersion, err)
	}
	return m, err
}

// Files are the live data files of version m (as Latest or Version read
// it).
func (t *Table) Files(ctx context.Context, m *catalog.Manifest) ([]catalog.DataFile, error) {
	switch t.format {
	case FormatIceberg:
		return t.ice.Files(ctx, m)
	case FormatDelta:
		d, err := t.deltaView(ctx, m.Version)
		if err != nil {
			return nil, err
		}
		return d.v.Files(ctx, m)
	}
	return t.cat.Files(ctx, m)
}

// dataFileStore is where data file f lives.
func (t *Table) dataFileStore(ctx context.Context, f catalog.DataFile) (cloud.Store, string, error) {
	if t.format == FormatIceberg {
		return t.ice.DataFileStore(ctx, f)
	}
	return t.cat.DataFileStore(ctx, f)
}

// fileURL is where data file f lives, as users write locations.
func (t *Table) fileURL(f catalog.DataFile) string {
	if t.format == FormatIceberg {
		return t.ice.Store().URL(f.Path)
	}
	return t.cat.FileURL(f)
}

// Close releases the table and every store it opened.
func (t *Table) Close() error {
	var errs []error
	t.mu.Lock()
	seen := map[*catalog.View]bool{}
	for _, v := range t.views {
		if !seen[v] {
			seen[v] = true
			errs = append(errs, v.Close())
		}
	}
	t.views = nil
	t.mu.Unlock()
	if t.ice != nil {
		errs = append(errs, t.ice.Close())
	}
	if t.cat != nil {
		errs = append(errs, t.cat.Close())
	}
	return errors.Join(errs...)
}
