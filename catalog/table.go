package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"sort"
	"strings"
	"sync"

	gojson "github.com/goccy/go-json"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
)

// Options tune a Table. The zero value of each field means its default.
type Options struct {
	// ReadConcurrency bounds concurrent piece reads when loading a
	// version's files, and the pieces a commit writes at once. Zero: 16.
	ReadConcurrency int
	// MaxPiecesPerPartition: when a partition is listed by more pieces than
	// this, a commit touching it merges the smallest adjacent ones. Zero: 8.
	MaxPiecesPerPartition int
	// MaxPartitionsPerPage: a page listing more partitions than this is
	// split in pages of half as many. Zero: 256.
	MaxPartitionsPerPage int
	// Logger receives one line per commit; nil: no logging.
	Logger *slog.Logger
	// Observers are told of every version the table commits (see
	// CommitObserver): the Iceberg mirror syncs through one. A table
	// opened from another's options (a quarantine table) has them too.
	Observers []CommitObserver
}

// DefaultOptions returns the defaults spelled out.
func DefaultOptions() Options {
	return Options{ReadConcurrency: 16, MaxPiecesPerPartition: 8, MaxPartitionsPerPage: 256}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.ReadConcurrency <= 0 {
		o.ReadConcurrency = d.ReadConcurrency
	}
	if o.MaxPiecesPerPartition <= 1 {
		o.MaxPiecesPerPartition = d.MaxPiecesPerPartition
	}
	if o.MaxPartitionsPerPage <= 1 {
		o.MaxPartitionsPerPage = d.MaxPartitionsPerPage
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Table is a handle on a table location. It holds no state of the table
// itself: every read asks the store, so handles in many processes agree.
type Table struct {
	loc   string
	store cloud.Store
	opts  Options
	// pieceCache keeps decoded pieces by key: pieces are immutable, so a
	// cached one is never stale.
	pieceMu    sync.Mutex
	pieceCache map[string]*Piece
	pageCache  map[string]*Page
	// external caches stores opened for data files adopted from outside
	// the table root, by location.
	extMu    sync.Mutex
	external map[string]cloud.Store
}

// Open returns a handle on the table at location (which may not exist yet:
// see Create and Latest). The caller closes it.
func Open(ctx context.Context, location string, opts Options) (*Table, error) {
	st, err := cloud.Open(ctx, location)
	if err != nil {
		return nil, err
	}
	return NewTable(location, st, opts), nil
}

// NewTable returns a handle on the table rooted at store's root.
func NewTable(location string, store cloud.Store, opts Options) *Table {
	return &Table{loc: location, store: store, opts: opts.withDefaults(), pieceCache: map[string]*Piece{}, pageCache: map[string]*Page{}}
}

// Location returns the location the table was opened with.
func (t *Table) Location() string { return t.loc }

// Identity returns what names the table at version m, however its
// location was spelled: m's TableID, or for a table that has not
// committed since ids existed, its root's absolute URL (see
// Manifest.Identity).
func (t *Table) Identity(m *Manifest) string { return m.Identity(t.store.URL("")) }

// Options returns the options the table was opened with, for a table
// opened on its behalf (its quarantine) to share its logger and
// observers.
func (t *Table) Options() Options { return t.opts }

// Store returns the table's object store.
func (t *Table) Store() cloud.Store { return t.store }

// Close releases the store and any opened for external data files.
func (t *Table) Close() error {
	t.extMu.Lock()
	defer t.extMu.Unlock()
	errs := []error{t.store.Close()}
	for _, st := range t.external {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// DataFileStore returns the store and key where data file f lives: the
// table's store for files under its root, another store for files adopted
// in place from elsewhere.
func (t *Table) DataFileStore(ctx context.Context, f DataFile) (cloud.Store, string, error) {
	if !isAbsoluteLocation(f.Path) {
		return t.store, f.Path, nil
	}
	dir, name := path.Split(f.Path)
	t.extMu.Lock()
	defer t.extMu.Unlock()
	if st, ok := t.external[dir]; ok {
		return st, name, nil
	}
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	if t.external == nil {
		t.external = map[string]cloud.Store{}
	}
	t.external[dir] = st
	return st, name, nil
}

// FileURL returns where a data file of the table lives, as users write
// locations: an absolute path on local disk, a full URL elsewhere.
func (t *Table) FileURL(f DataFile) string {
	if isAbsoluteLocation(f.Path) {
		return f.Path
	}
	return t.store.URL(f.Path)
}

func isAbsoluteLocation(p string) bool {
	return strings.HasPrefix(p, "/") || strings.Contains(p, "://")
}

// LatestVersion returns the newest committed version number, or
// ErrTableNotFound if the table has none. It reads the latest hint and then
// probes forward, so a stale hint costs one extra request, never a wrong
// answer.
func (t *Table) LatestVersion(ctx context.Context) (int64, error) {
	v := int64(0)
	if rc, _, err := t.store.Get(ctx, latestKey); err == nil {
		var hint struct {
			Version int64 `json:"version"`
		}
		b, rerr := io.ReadAll(rc)
		rc.Close()
		if rerr == nil && json.Unmarshal(b, &hint) == nil && hint.Version > 0 {
			v = hint.Version
		}
	} else if !errors.Is(err, cloud.ErrNotFound) {
		return 0, fmt.Errorf("%s: read latest hint: %w", t.loc, err)
	}
	if v > 0 {
		// The hint may be stale (a writer crashed before updating it, or
		// a slower writer overwrote a newer hint): probe forward. It can
		// also never be ahead of a committed version, since it is written
		// after the commit.
		if _, err := t.store.Stat(ctx, versionKey(v)); err != nil {
			if !errors.Is(err, cloud.ErrNotFound) {
				return 0, fmt.Errorf("%s: %w", t.loc, err)
			}
			v = 0 // a hint with no version behind it: list instead
		}
	}
	if v == 0 {
		err := t.store.List(ctx, versionsDir, func(o cloud.ObjectInfo) error {
			if n, ok := parseVersionKey(o.Key); ok && n > v {
				v = n
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("%s: list versions: %w", t.loc, err)
		}
		if v == 0 {
			return 0, fmt.Errorf("%s: %w", t.loc, ErrTableNotFound)
		}
	}
	for {
		_, err := t.store.Stat(ctx, versionKey(v+1))
		if errors.Is(err, cloud.ErrNotFound) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t.loc, err)
		}
		v++
	}
}

// Manifest reads manifest version v.
func (t *Table) Manifest(ctx context.Context, v int64) (*Manifest, error) {
	key := versionKey(v)
	b, err := t.readAll(ctx, key)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, fmt.Errorf("%s: version %d: %w", t.loc, v, ErrVersionNotFound)
	}
	if err != nil {
		return nil, err
	}
	return decodeManifest(t.store.URL(key), b)
}

// Latest reads the newest manifest.
func (t *Table) Latest(ctx context.Context) (*Manifest, error) {
	v, err := t.LatestVersion(ctx)
	if err != nil {
		return nil, err
	}
	return t.Manifest(ctx, v)
}

// History returns every manifest from version 1 to the latest, oldest
// first.
func (t *Table) History(ctx context.Context) ([]*Manifest, error) {
	latest, err := t.LatestVersion(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Manifest, latest)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for v := int64(1); v <= latest; v++ {
		g.Go(func() error {
			m, err := t.Manifest(gctx, v)
			if err != nil {
				return err
			}
			out[v-1] = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *Table) readAll(ctx context.Context, key string) ([]byte, error) {
	rc, _, err := t.store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", t.store.URL(key), err)
	}
	return b, nil
}

// piece reads one piece, through the cache.
func (t *Table) piece(ctx context.Context, key string) (*Piece, error) {
	t.pieceMu.Lock()
	p, ok := t.pieceCache[key]
	t.pieceMu.Unlock()
	if ok {
		return p, nil
	}
	b, err := t.readAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read piece: %w", err)
	}
	p = new(Piece)
	if err := gojson.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("%s: corrupt piece: %w", t.store.URL(key), err)
	}
	for i := range p.Files {
		p.Files[i].Partition = p.Partition
	}
	t.pieceMu.Lock()
	if len(t.pieceCache) > 4096 {
		clear(t.pieceCache)
	}
	t.pieceCache[key] = p
	t.pieceMu.Unlock()
	return p, nil
}

// page reads one page, through the cache.
func (t *Table) page(ctx context.Context, key string) (*Page, error) {
	t.pieceMu.Lock()
	p, ok := t.pageCache[key]
	t.pieceMu.Unlock()
	if ok {
		return p, nil
	}
	b, err := t.readAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read page: %w", err)
	}
	p = new(Page)
	if err := gojson.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("%s: corrupt page: %w", t.store.URL(key), err)
	}
	t.pieceMu.Lock()
	if len(t.pageCache) > 4096 {
		clear(t.pageCache)
	}
	t.pageCache[key] = p
	t.pieceMu.Unlock()
	return p, nil
}

// Partitions returns the refs of every partition of manifest m, sorted.
func (t *Table) Partitions(ctx context.Context, m *Manifest) ([]PartitionRef, error) {
	pages := make([]*Page, len(m.Pages))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for i, pr := range m.Pages {
		g.Go(func() error {
			pg, err := t.page(gctx, pr.Key)
			pages[i] = pg
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var refs []PartitionRef
	for _, pg := range pages {
		refs = append(refs, pg.Partitions...)
	}
	return refs, nil
}

// partitionRef returns the ref of partition p in m, nil if m has no such
// partition.
func (t *Table) partitionRef(ctx context.Context, m *Manifest, p string) (*PartitionRef, error) {
	i := m.pageFor(p)
	if i < 0 {
		return nil, nil
	}
	pg, err := t.page(ctx, m.Pages[i].Key)
	if err != nil {
		return nil, err
	}
	j, ok := refIndex(pg.Partitions, p)
	if !ok {
		return nil, nil
	}
	return &pg.Partitions[j], nil
}

// PartitionFiles returns the live files of one partition reference.
func (t *Table) PartitionFiles(ctx context.Context, ref PartitionRef) ([]DataFile, error) {
	var files []DataFile
	for _, pr := range ref.Pieces {
		p, err := t.piece(ctx, pr.Key)
		if err != nil {
			return nil, err
		}
		files = append(files, p.Files...)
	}
	return files, nil
}

// Files returns the live data files of manifest m, sorted by path.
func (t *Table) Files(ctx context.Context, m *Manifest) ([]DataFile, error) {
	refs, err := t.Partitions(ctx, m)
	if err != nil {
		return nil, err
	}
	parts := make([][]DataFile, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for i, ref := range refs {
		g.Go(func() error {
			fs, err := t.PartitionFiles(gctx, ref)
			parts[i] = fs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	files := make([]DataFile, 0, m.Files)
	for _, p := range parts {
		files = append(files, p...)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// writeJSON stores v under key. With create-only it fails with
// cloud.ErrPreconditionFailed if key exists.
func (t *Table) writeJSON(ctx context.Context, key string, v any, createOnly bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	_, err = t.store.Put(ctx, key, bytes.NewReader(b), int64(len(b)), cloud.PutOptions{IfAbsent: createOnly})
	return err
}
