package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Create commits version 1 of a new, empty table. It fails with
// ErrTableExists if the location already holds one, and refuses a schema
// whose column names clash (see Schema.Validate).
func (t *Table) Create(ctx context.Context, schema Schema, spec PartitionSpec, props map[string]string, runID string) (*Manifest, error) {
	if err := schema.Validate(); err != nil {
		return nil, fmt.Errorf("create %s: schema: %w", t.loc, err)
	}
	return t.Commit(ctx, Change{Operation: "create", RunID: runID, Create: true,
		Schema: &schema, Spec: &spec, Properties: props, DataChange: true})
}

// Rollback commits a new version whose content is version to's. It first
// checks that every file of that version still exists, so a rollback never
// points the table at files a vacuum already deleted.
func (t *Table) Rollback(ctx context.Context, to int64, runID string) (*Manifest, error) {
	target, err := t.Manifest(ctx, to)
	if err != nil {
		return nil, err
	}
	files, err := t.Files(ctx, target)
	if err != nil {
		return nil, err
	}
	if err := t.checkFilesExist(ctx, files); err != nil {
		return nil, fmt.Errorf("rollback to version %d: %w", to, err)
	}
	return t.Commit(ctx, Change{Operation: "rollback", RunID: runID, RestoreFrom: target})
}

func (t *Table) checkFilesExist(ctx context.Context, files []DataFile) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for _, f := range files {
		if isAbsoluteLocation(f.Path) {
			continue // adopted from outside the table root: not ours to check cheaply
		}
		g.Go(func() error {
			_, err := t.store.Stat(gctx, f.Path)
			if errors.Is(err, cloud.ErrNotFound) {
				return fmt.Errorf("%s: %w", t.store.URL(f.Path), ErrMissingFile)
			}
			return err
		})
	}
	return g.Wait()
}

// NewDataFilePath returns a fresh, unique key for a data file in partition
// (a Hive folder, "" for none): <partition>/part-<time>-<uuid>.zstd.parquet.
// The time prefix sorts files by creation; the UUID makes names unique
// across writers, so data files never overwrite each other.
func NewDataFilePath(partition string) string {
	name := fmt.Sprintf("part-%s-%s.zstd.parquet", time.Now().UTC().Format("20060102T150405"), uuid.NewString())
	if partition == "" {
		return name
	}
	return partition + "/" + name
}

// ownDataFile matches the base names NewDataFilePath gives.
var ownDataFile = regexp.MustCompile(`^part-[0-9]{8}T[0-9]{6}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.zstd\.parquet$`)

// isOwnDataFile reports whether key is named as sluice names the data
// files it writes.
func isOwnDataFile(key string) bool { return ownDataFile.MatchString(path.Base(key)) }

// PartitionOf returns the Hive partition folder and values of a row under
// spec; identity fields (values only in folder names) cannot be computed
// from a row and yield an error. To route many rows, use a Partitioner.
func PartitionOf(schema Schema, spec PartitionSpec, row []any) (string, map[string]*string, error) {
	return NewPartitioner(schema, spec).Of(row)
}

// Partitioner routes rows to their Hive partition folders, remembering
// each day's folder and values: building them is otherwise most of the
// cost of routing a row. Not safe for concurrent use.
type Partitioner struct {
	schema Schema
	spec   PartitionSpec
	cache  map[int64]partitionOf
	// dayCol is the column of a spec of one day field, else -1; last is
	// the partition of day lastDay, the last one routed by it (rows of a
	// batch mostly share a day); noDay before the first.
	dayCol  int
	last    partitionOf
	lastDay int64
}

// noDay is no day a time has: Unix seconds divided by 86400 stay far
// above it.
const noDay = math.MinInt64

type partitionOf struct {
	folder string
	vals   map[string]*string
}

// NewPartitioner returns a Partitioner for rows of schema under spec.
func NewPartitioner(schema Schema, spec PartitionSpec) *Partitioner {
	p := &Partitioner{schema: schema, spec: spec, cache: map[int64]partitionOf{}, dayCol: -1, lastDay: noDay}
	if len(spec.Fields) == 1 && spec.Fields[0].Transform == "day" {
		p.dayCol = p.sourceIndex(spec.Fields[0].Source)
	}
	return p
}

// Of returns the folder and values of row's partition. The values map is
// shared by every row of the partition: callers must not change it.
func (p *Partitioner) Of(row []any) (string, map[string]*string, error) {
	if len(p.spec.Fields) == 0 {
		return "", nil, nil
	}
	// One day field, the common case: cached by day.
	if idx := p.dayCol; idx >= 0 && idx < len(row) {
		if t, ok := row[idx].(time.Time); ok {
			day := t.Unix()
			if day < 0 {
				day -= 86399
			}
			day /= 86400
			if day == p.lastDay {
				return p.last.folder, p.last.vals, nil
			}
			if e, ok := p.cache[day]; ok {
				p.last, p.lastDay = e, day
				return e.folder, e.vals, nil
			}
			folder, vals, err := partitionOfRow(p.schema, p.spec, row)
			if err == nil && len(p.cache) < 1<<16 {
				p.cache[day] = partitionOf{folder, vals}
			}
			return folder, vals, err
		}
	}
	return partitionOfRow(p.schema, p.spec, row)
}

func (p *Partitioner) sourceIndex(name string) int {
	for i, c := range p.schema.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func partitionOfRow(schema Schema, spec PartitionSpec, row []any) (string, map[string]*string, error) {
	if len(spec.Fields) == 0 {
		return "", nil, nil
	}
	folder := ""
	vals := make(map[string]*string, len(spec.Fields))
	for _, f := range spec.Fields {
		if f.Transform != "day" {
			return "", nil, fmt.Errorf("partition field %q: rows cannot be routed to an identity partition", f.Name)
		}
		idx := -1
		for i, c := range schema.Columns {
			if c.Name == f.Source {
				idx = i
			}
		}
		if idx < 0 || idx >= len(row) {
			return "", nil, fmt.Errorf("partition field %q: no column %q", f.Name, f.Source)
		}
		var v *string
		switch x := row[idx].(type) {
		case time.Time:
			s := x.UTC().Format("2006-01-02")
			v = &s
		case nil:
		default:
			return "", nil, fmt.Errorf("partition field %q: column %q holds %T, want a time", f.Name, f.Source, row[idx])
		}
		vals[f.Name] = v
		seg := f.Name + "=" + HiveDefaultPartition
		if v != nil {
			seg = f.Name + "=" + hiveEscape(*v)
		}
		if folder != "" {
			folder += "/"
		}
		folder += seg
	}
	return folder, vals, nil
}

// WriteFiles writes rows (in the table schema's column order) as one data
// file per partition and returns them, ready for a Change's Add. Nothing is
// visible until they are committed.
func (t *Table) WriteFiles(ctx context.Context, m *Manifest, rows [][]any) ([]DataFile, error) {
	type group struct {
		vals map[string]*string
		rows [][]any
	}
	groups := map[string]*group{}
	var order []string
	router := NewPartitioner(m.Schema, m.Spec)
	for _, r := range rows {
		p, vals, err := router.Of(r)
		if err != nil {
			return nil, err
		}
		g := groups[p]
		if g == nil {
			g = &group{vals: vals}
			groups[p] = g
			order = append(order, p)
		}
		g.rows = append(g.rows, r)
	}
	var out []DataFile
	for _, p := range order {
		g := groups[p]
		key := NewDataFilePath(p)
		n, stats, err := pqio.WriteParquet(ctx, t.store, key, m.Schema, g.rows)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", t.store.URL(key), err)
		}
		out = append(out, DataFile{Path: key, Partition: p, PartitionValues: g.vals, Bytes: n, FileStats: stats})
	}
	return out, nil
}
