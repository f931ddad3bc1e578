package icebergtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// Options describe a foreign table for Write. The zero value is a valid
// table: 20 appends of 500 rows, no spec change, no deletes.
type Options struct {
	// Dir is the local folder the catalog file (catalog.db) and the
	// warehouse (warehouse/) go in; "" is a new t.TempDir().
	Dir string
	// CatalogName is the SQL catalog's name, the catalog_name its rows
	// carry; "" is "default", as PyIceberg names it.
	CatalogName string
	// Namespace and Name name the table; "" are "lake" and "events".
	Namespace, Name string
	// FormatVersion is 2 (0 means 2) or 3. Merge-on-read deletes are
	// Parquet position delete files in version 2 and deletion vectors
	// (Puffin) in version 3, as iceberg-go writes them.
	FormatVersion int
	// Appends is the number of append commits, before and after the spec
	// change together; 0 means 20. Each writes one small file per
	// partition its rows fall in.
	Appends int
	// RowsPerAppend is the number of rows of each append; 0 means 500.
	RowsPerAppend int
	// SpecChangeAt is the number of appends after which the partition spec
	// evolves from day(ts) to day(ts), identity(region): the files written
	// before stay under spec 0, those after are under spec 1. 0 (or
	// Appends or more) never changes it.
	SpecChangeAt int
	// PositionDeletes is the number of data files that get a merge-on-read
	// delete of some of their rows, one delete commit each: half of them
	// (rounded down) files of spec 0 right before the spec change, the
	// rest at the end, files of the latest appends' spec.
	PositionDeletes int
	// Concurrent is the number of goroutines the appends are shared by:
	// their commits race, and a commit that loses reloads the table and
	// appends again, writing its files anew. The files of the attempts
	// that lost stay in the data folder, unreferenced, as real writers
	// leave them. 0 or 1 appends one at a time.
	Concurrent int
	// Seed draws the rows and the choice of deleted rows.
	Seed int64
	// Warehouse is where the table goes when not on local disk: an
	// s3://bucket/prefix the catalog's file IO writes through Props. The
	// catalog file stays in Dir.
	Warehouse string
	// Props are more properties of the catalog, e.g. iceberg-go's
	// s3.endpoint, s3.access-key-id, s3.secret-access-key and s3.region
	// for an S3 Warehouse.
	Props map[string]string
}

// Table is a foreign table written by Write: where it is, and how many
// rows were appended to and deleted from it.
type Table struct {
	// CatalogURL is the SQLite catalog's URL, sqlite:///abs/path/catalog.db.
	CatalogURL string
	// CatalogName is the name the catalog's rows carry.
	CatalogName string
	// Namespace and Name name the table in the catalog.
	Namespace, Name string
	// Warehouse is the catalog's warehouse, file:///abs/Dir/warehouse, or
	// Options.Warehouse.
	Warehouse string
	// Location is the table's location as iceberg-go records it,
	// file:///abs/Dir/warehouse/<namespace>.db/<name>: its data files are
	// under Location/data/<partition path>/ (ts_day=2024-03-01/, then
	// ts_day=2024-03-01/region=us-east-1/ after the spec change), with
	// the version 2 position delete files among them (Parquet files in the
	// partition's folder, named as data files are: only the manifests
	// tell them apart); version 3 deletion vectors are
	// Location/data/*-deletes.puffin; the metadata (metadata.json,
	// manifest lists, manifests) is under Location/metadata/. Not every
	// file under data/ is live: list the table's files through its
	// metadata.
	Location string
	// FormatVersion is the table's format version.
	FormatVersion int
	// Props are the catalog's properties beside its warehouse (Options.Props).
	Props map[string]string

	db    *sql.DB
	cat   *icesql.Catalog
	seed  int64
	ident table.Identifier

	mu       sync.Mutex
	nextID   int64 // the id of the next appended row
	appended int64
	deleted  int64
	delFiles []string // data files rows were deleted from, in commit order
	retries  int64    // commits redone after losing a race
}

// Write builds the table o describes and returns it; it fails t on any
// error. The catalog stays open until t ends.
func Write(t testing.TB, o Options) *Table {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx := context.Background()
	tb, err := create(ctx, o)
	if err != nil {
		t.Fatalf("icebergtest: %v", err)
	}
	t.Cleanup(func() { tb.close() })
	if err := tb.build(ctx, o); err != nil {
		t.Fatalf("icebergtest: %s: %v", tb.URL(), err)
	}
	return tb
}

func (o Options) withDefaults() (Options, error) {
	if o.CatalogName == "" {
		o.CatalogName = "default"
	}
	if o.Namespace == "" {
		o.Namespace = "lake"
	}
	if o.Name == "" {
		o.Name = "events"
	}
	if o.FormatVersion == 0 {
		o.FormatVersion = 2
	}
	if o.Appends == 0 {
		o.Appends = 20
	}
	if o.RowsPerAppend == 0 {
		o.RowsPerAppend = 500
	}
	switch {
	case o.FormatVersion != 2 && o.FormatVersion != 3:
		return o, fmt.Errorf("icebergtest: FormatVersion %d: want 2 or 3", o.FormatVersion)
	case o.Appends < 0 || o.RowsPerAppend < 0 || o.SpecChangeAt < 0 || o.PositionDeletes < 0 || o.Concurrent < 0:
		return o, fmt.Errorf("icebergtest: negative option in %+v", o)
	case strings.Contains(o.Namespace, ".") || strings.Contains(o.Name, "."):
		return o, fmt.Errorf("icebergtest: %s.%s: names with dots are not supported", o.Namespace, o.Name)
	}
	return o, nil
}

// create makes the folder, opens the catalog, and creates the namespace
// and the empty table: partitioned by day(ts), deleting by merge-on-read.
func create(ctx context.Context, o Options) (*Table, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("folder %s: %w", o.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	wh := o.Warehouse
	if wh == "" {
		warehouse := filepath.Join(dir, "warehouse")
		if err := os.MkdirAll(warehouse, 0o755); err != nil {
			return nil, fmt.Errorf("warehouse: %w", err)
		}
		wh = (&url.URL{Scheme: "file", Path: filepath.ToSlash(warehouse)}).String()
	}
	tb := &Table{
		CatalogURL:    "sqlite://" + filepath.ToSlash(filepath.Join(dir, "catalog.db")),
		CatalogName:   o.CatalogName,
		Namespace:     o.Namespace,
		Name:          o.Name,
		Warehouse:     wh,
		FormatVersion: o.FormatVersion,
		Props:         maps.Clone(o.Props),
		seed:          o.Seed,
		ident:         table.Identifier{o.Namespace, o.Name},
	}
	if err := tb.open(); err != nil {
		return nil, err
	}
	if err := tb.cat.CreateNamespace(ctx, table.Identifier{o.Namespace}, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		tb.close()
		return nil, fmt.Errorf("create namespace %s: %w", o.Namespace, err)
	}
	sc := schema()
	ts, ok := sc.FindFieldByName("ts")
	if !ok {
		tb.close()
		return nil, errors.New("schema: no ts column")
	}
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{ts.ID}, FieldID: 1000, Name: "ts_day", Transform: ice.DayTransform{}})
	tbl, err := tb.cat.CreateTable(ctx, tb.ident, sc,
		icecat.WithPartitionSpec(&spec),
		icecat.WithProperties(ice.Properties{
			table.PropertyFormatVersion: strconv.Itoa(o.FormatVersion),
			table.WriteDeleteModeKey:    table.WriteModeMergeOnRead,
		}))
	if err != nil {
		tb.close()
		return nil, fmt.Errorf("create table %s: %w", strings.Join(tb.ident, "."), err)
	}
	tb.Location = tbl.Location()
	return tb, nil
}

// open opens the table's SQLite catalog.
func (tb *Table) open() error {
	db, cat, err := tb.openCatalog()
	if err != nil {
		return err
	}
	tb.db, tb.cat = db, cat
	return nil
}

// openCatalog opens a catalog on the table's SQLite file as sluice does:
// WAL and a busy timeout let the racing writers (and a REST server's
// catalog) share the file, and transactions take the write lock when
// they begin.
func (tb *Table) openCatalog() (*sql.DB, *icesql.Catalog, error) {
	path := strings.TrimPrefix(tb.CatalogURL, "sqlite://")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, nil, fmt.Errorf("open catalog %s: %w", tb.CatalogURL, err)
	}
	props := ice.Properties{"warehouse": tb.Warehouse}
	maps.Copy(props, tb.Props)
	cat, err := icesql.NewCatalog(tb.CatalogName, db, icesql.SQLite, props)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open catalog %s: %w", tb.CatalogURL, err)
	}
	return db, cat, nil
}

func (tb *Table) close() {
	if tb.cat != nil {
		tb.cat.Close()
	}
	if tb.db != nil {
		tb.db.Close()
	}
}

// build makes the table's commits: the appends before the spec change,
// the first half of the deletes, the spec change, the other appends, the
// other deletes.
func (tb *Table) build(ctx context.Context, o Options) error {
	tb.nextID = int64(o.Appends) * int64(o.RowsPerAppend)
	before := o.Appends
	if o.SpecChangeAt > 0 && o.SpecChangeAt < o.Appends {
		before = o.SpecChangeAt
	}
	early := 0
	if before < o.Appends {
		early = o.PositionDeletes / 2
	}
	if err := tb.appendAll(ctx, 0, before, o); err != nil {
		return err
	}
	if err := tb.deleteFiles(ctx, early); err != nil {
		return err
	}
	if before < o.Appends {
		if err := tb.evolveSpec(ctx); err != nil {
			return err
		}
		if err := tb.appendAll(ctx, before, o.Appends, o); err != nil {
			return err
		}
	}
	return tb.deleteFiles(ctx, o.PositionDeletes-early)
}

// appendAll makes appends from up to to (exclusive), o.Concurrent at once.
// Append i holds ids [i*RowsPerAppend, (i+1)*RowsPerAppend).
func (tb *Table) appendAll(ctx context.Context, from, to int, o Options) error {
	workers := max(o.Concurrent, 1)
	next := make(chan int)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[w] != nil {
					continue
				}
				errs[w] = tb.appendRows(ctx, int64(i)*int64(o.RowsPerAppend), o.RowsPerAppend)
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// Append commits one more append of rows rows (new ids, after every row
// so far), under the table's current spec: a writer working beside
// whatever else commits. A commit that loses a race reloads the table and
// appends again.
func (tb *Table) Append(ctx context.Context, rows int) error {
	if rows <= 0 {
		return fmt.Errorf("icebergtest: append of %d rows", rows)
	}
	tb.mu.Lock()
	first := tb.nextID
	tb.nextID += int64(rows)
	tb.mu.Unlock()
	if err := tb.appendRows(ctx, first, rows); err != nil {
		return fmt.Errorf("icebergtest: %s: %w", tb.URL(), err)
	}
	return nil
}

// appendRows commits rows rows, ids from first, retrying on conflicts.
func (tb *Table) appendRows(ctx context.Context, first int64, rows int) error {
	err := tb.retry(ctx, func(tbl *table.Table) (*table.Table, error) {
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		if err != nil {
			return nil, fmt.Errorf("arrow schema: %w", err)
		}
		data, err := batch(sc, tb.seed, first, rows)
		if err != nil {
			return nil, fmt.Errorf("rows %d..%d: %w", first, first+int64(rows)-1, err)
		}
		defer data.Release()
		return tbl.AppendTable(ctx, data, int64(rows), nil)
	})
	if err != nil {
		return fmt.Errorf("append rows %d..%d: %w", first, first+int64(rows)-1, err)
	}
	tb.mu.Lock()
	tb.appended += int64(rows)
	tb.mu.Unlock()
	return nil
}

// retry runs op on the freshly loaded table until its commit does not
// lose a race (iceberg-go's commit retries are off by default: a writer
// that loses reloads and redoes its work, as PyIceberg's callers do).
func (tb *Table) retry(ctx context.Context, op func(*table.Table) (*table.Table, error)) error {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for attempt := 1; ; attempt++ {
		tbl, err := tb.cat.LoadTable(ctx, tb.ident)
		if err != nil {
			return fmt.Errorf("load table: %w", err)
		}
		_, err = op(tbl)
		if err == nil {
			return nil
		}
		if !isConflict(err) || attempt == 50 {
			return fmt.Errorf("attempt %d: %w", attempt, err)
		}
		tb.mu.Lock()
		tb.retries++
		tb.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1+r.IntN(10*min(attempt, 10))) * time.Millisecond):
		}
	}
}

// isConflict reports whether a commit failed because another one came
// first: iceberg-go's ErrCommitFailed, or a requirement (the branch's
// snapshot, the spec id) that no longer holds in the catalog.
func isConflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || strings.Contains(strings.ToLower(err.Error()), "requirement failed")
}

// evolveSpec adds identity(region) to the partition spec.
func (tb *Table) evolveSpec(ctx context.Context) error {
	err := tb.retry(ctx, func(tbl *table.Table) (*table.Table, error) {
		txn := tbl.NewTransaction()
		if err := txn.UpdateSpec(true).AddIdentity("region").Commit(); err != nil {
			return nil, err
		}
		return txn.Commit(ctx)
	})
	if err != nil {
		return fmt.Errorf("add identity(region) to the spec: %w", err)
	}
	return nil
}

// deleteFiles deletes some rows of n live data files of the current
// spec, the largest first (ties broken by the seed), one commit each.
// The two calls Write makes pick files of different specs, so the data
// files are distinct.
func (tb *Table) deleteFiles(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	tbl, err := tb.cat.LoadTable(ctx, tb.ident)
	if err != nil {
		return fmt.Errorf("load table: %w", err)
	}
	tasks, err := planFiles(ctx, tbl)
	if err != nil {
		return err
	}
	cur := tbl.Spec()
	spec := cur.ID()
	var files []ice.DataFile
	for _, task := range tasks {
		f := task.File
		if int(f.SpecID()) == spec && f.Count() >= 2 {
			files = append(files, f)
		}
	}
	if len(files) < n {
		return fmt.Errorf("%d data files to delete rows of, only %d of spec %d have 2 rows or more", n, len(files), spec)
	}
	r := rand.New(rand.NewPCG(uint64(tb.seed), 7))
	r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	slices.SortStableFunc(files, func(a, b ice.DataFile) int { return int(b.Count() - a.Count()) })
	for _, f := range files[:n] {
		if err := tb.deleteSomeRows(ctx, f.FilePath()); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSomeRowsOf commits a merge-on-read delete of some rows (about one
// in ten, at least one, never all) of the live data file dataFilePath, by
// iceberg-go's Delete with a filter on their ids: a position delete file
// (version 2) or deletion vector (version 3) for that file. Rows already
// deleted are not counted again. A commit that loses a race reloads the
// table and deletes again.
func (tb *Table) DeleteSomeRowsOf(ctx context.Context, dataFilePath string) error {
	if err := tb.deleteSomeRows(ctx, dataFilePath); err != nil {
		return fmt.Errorf("icebergtest: %s: %w", tb.URL(), err)
	}
	return nil
}

func (tb *Table) deleteSomeRows(ctx context.Context, path string) error {
	var deleted int64
	err := tb.retry(ctx, func(tbl *table.Table) (*table.Table, error) {
		ids, err := liveIDs(ctx, tbl, path)
		if err != nil {
			return nil, err
		}
		if len(ids) < 2 {
			return nil, fmt.Errorf("data file %s has %d live rows: too few to delete some of them", path, len(ids))
		}
		h := fnv.New64a()
		h.Write([]byte(path))
		r := rand.New(rand.NewPCG(uint64(tb.seed), h.Sum64()))
		k := max(1, len(ids)/10)
		picked := make([]int64, 0, k)
		for _, i := range r.Perm(len(ids))[:k] {
			picked = append(picked, ids[i])
		}
		slices.Sort(picked)
		deleted = int64(len(picked))
		return tbl.Delete(ctx, ice.IsIn(ice.Reference("id"), picked...), nil)
	})
	if err != nil {
		return fmt.Errorf("delete rows of %s: %w", path, err)
	}
	tb.mu.Lock()
	tb.deleted += deleted
	tb.delFiles = append(tb.delFiles, path)
	tb.mu.Unlock()
	return nil
}

// planFiles plans a scan of tbl's current snapshot.
func planFiles(ctx context.Context, tbl *table.Table) ([]table.FileScanTask, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan scan: %w", err)
	}
	return tasks, nil
}

// liveIDs reads the ids of the rows of data file path that no delete has
// deleted, in file order.
func liveIDs(ctx context.Context, tbl *table.Table, path string) ([]int64, error) {
	scan := tbl.Scan(table.WithSelectedFields("id"))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan scan: %w", err)
	}
	i := slices.IndexFunc(tasks, func(t table.FileScanTask) bool { return t.File.FilePath() == path })
	if i < 0 {
		return nil, fmt.Errorf("%s is no live data file of the current snapshot", path)
	}
	_, recs, err := scan.ReadTasks(ctx, tasks[i:i+1])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var ids []int64
	for rec, err := range recs {
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		col, ok := rec.Column(0).(*array.Int64)
		if !ok {
			rec.Release()
			return nil, fmt.Errorf("read %s: id column is %s", path, rec.Column(0).DataType())
		}
		ids = append(ids, col.Int64Values()...)
		rec.Release()
	}
	return ids, nil
}

// Load loads the table fresh through the catalog.
func (tb *Table) Load(t testing.TB) *table.Table {
	t.Helper()
	tbl, err := tb.cat.LoadTable(context.Background(), tb.ident)
	if err != nil {
		t.Fatalf("icebergtest: load %s: %v", tb.URL(), err)
	}
	return tbl
}

// MetadataLocation is the table's current metadata file, as the catalog
// has it: file:///abs/.../metadata/NNNNN-<uuid>.metadata.json.
func (tb *Table) MetadataLocation(t testing.TB) string {
	t.Helper()
	return tb.Load(t).MetadataLocation()
}

// URL is the table's location as sluice commands take it:
// iceberg+sqlite:///abs/path/catalog.db#namespace.name.
func (tb *Table) URL() string {
	return "iceberg+" + tb.CatalogURL + "#" + tb.Namespace + "." + tb.Name
}

// RowsAppended is the number of rows all appends so far committed.
func (tb *Table) RowsAppended() int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.appended
}

// RowsDeleted is the number of rows all deletes so far deleted.
func (tb *Table) RowsDeleted() int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.deleted
}

// Retries is the number of commits that lost a race to another one and
// were made again, on the reloaded table.
func (tb *Table) Retries() int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.retries
}

// DeletedFrom lists the data files rows were deleted from, one per delete
// commit, in commit order.
func (tb *Table) DeletedFrom() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return slices.Clone(tb.delFiles)
}

// Rows is the number of rows the table's current snapshot should hold:
// RowsAppended minus RowsDeleted.
func (tb *Table) Rows() int64 {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.appended - tb.deleted
}
