package rollup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"path"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// dataFile is one Parquet file to read: where it is, its size, and its
// partition values (DataFile.PartitionValues), which fill the columns
// the file lacks (scanData).
type dataFile struct {
	st   cloud.Store
	key  string
	size int64
	pv   map[string]*string
}

// base is the running totals a computation starts from: the snapshot's,
// or those the output stores for the day before an incremental restart.
type base struct {
	day  int64 // the day the totals hold for
	rows int64
	sum  uint64 // an order-independent checksum of the rows
	ki   *keyIndex
	// vals[m][k] (fvals[m][k] for a float64 measure): running measure
	// m's total for key k; nil for per-day measures.
	vals  [][]int64
	fvals [][]float64
	// his[m][k] is the high word of a decimal total (vals its low).
	his [][]int64
}

// identity names the base's content: another day, other rows or other
// values give another identity.
func (b *base) identity() string {
	return fmt.Sprintf("%s/%d/%016x", dayString(b.day), b.rows, b.sum)
}

// readBase reads the key columns, the running measures' columns and `date`
// of files. what names them in errors ("snapshot s3://...").
func readBase(ctx context.Context, what string, files []dataFile, keyCols []catalog.Column, ms []Measure, loc *time.Location) (*base, error) {
	return readBaseShard(ctx, what, files, keyCols, ms, loc, nil)
}

// readBaseShard is readBase keeping only the keys of shard (nil: all). The
// identity still covers every row, so that each shard of a sharded run
// checks it is reading the snapshot its plan read.
func readBaseShard(ctx context.Context, what string, files []dataFile, keyCols []catalog.Column, ms []Measure, loc *time.Location, shard *keyShard) (*base, error) {
	b := &base{day: -1 << 62, ki: newKeyIndex(), vals: make([][]int64, len(ms)), fvals: make([][]float64, len(ms)), his: make([][]int64, len(ms))}
	want := append([]catalog.Column(nil), keyCols...)
	var mIdx []int // measure index of want[len(keyCols)+j]
	for m, x := range ms {
		if x.Func.Running() {
			want = append(want, catalog.Column{Name: x.Name, Type: x.valueType()})
			mIdx = append(mIdx, m)
		}
	}
	dateAt := len(want)
	want = append(want, catalog.Column{Name: "date", Type: catalog.Type{Kind: catalog.KindDate}})
	check := func(s catalog.Schema) error { return checkBaseSchema(what, s, keyCols, ms, want[len(keyCols):]) }
	z := &dayer{loc: loc}
	seen := false
	for _, f := range files {
		read := func(ctx context.Context, f dataFile, want []catalog.Column, check func(catalog.Schema) error, fn func([]*colData, int) error) error {
			if isCSV(f.key) {
				return scanCSV(ctx, f.st, f.key, f.size, want, check, fn)
			}
			return scanData(ctx, f, want, nil, check, fn)
		}
		err := read(ctx, f, want, check, func(cols []*colData, n int) error {
			keys, date := cols[:len(keyCols)], cols[dateAt]
			h := fnv.New64a()
			var row []byte // a row's bytes hashed: its key's encoding, then its values
			for i := 0; i < n; i++ {
				if !date.valid[i] {
					return fmt.Errorf("%s: a row has no date", what)
				}
				d := date.ints[i]
				if date.typ.Kind == catalog.KindTimestamp {
					d = z.day(d)
				}
				if !seen {
					b.day, seen = d, true
				} else if d != b.day {
					return fmt.Errorf("%s: rows of two days, %s and %s: a snapshot is of one day", what, dayString(b.day), dayString(d))
				}
				keep := shard == nil || shard.has(keys, i)
				if keep {
					if b.ki.lookup(keys, i) >= 0 {
						return fmt.Errorf("%s: key %v is on two rows", what, keyText(keys, i))
					}
					b.ki.add(keys, i)
				} else {
					b.ki.encode(keys, i) // for the checksum only
				}
				row = append(row[:0], b.ki.buf...)
				for j, m := range mIdx {
					c := cols[len(keyCols)+j]
					if ms[m].float {
						v := 0.0
						switch {
						case !c.valid[i]:
						case c.typ.Kind == catalog.KindFloat64:
							v = c.floats[i]
						default:
							v = float64(c.ints[i])
						}
						if keep {
							b.fvals[m] = append(b.fvals[m], v)
						}
						row = binary.LittleEndian.AppendUint64(row, math.Float64bits(v))
						continue
					}
					v, hi := int64(0), int64(0)
					if c.valid[i] {
						v, hi = c.ints[i], c.hi(i)
					}
					if keep {
						b.vals[m] = append(b.vals[m], v)
					}
					row = binary.LittleEndian.AppendUint64(row, uint64(v))
					if ms[m].dec {
						if keep {
							b.his[m] = append(b.his[m], hi)
						}
						row = binary.LittleEndian.AppendUint64(row, uint64(hi))
					}
				}
				h.Reset()
				h.Write(row) // one write of what were several: the same hash
				b.sum += h.Sum64()
				b.rows++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !seen {
		return nil, fmt.Errorf("%s: no rows, so no snapshot day", what)
	}
	return b, nil
}

func keyText(keys []*colData, i int) string {
	parts := make([]string, len(keys))
	for j, c := range keys {
		parts[j] = fmt.Sprint(goValue(c, i))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// checkBaseSchema checks a snapshot file's columns against what the rollup
// needs, and sets the types of the columns read (vals: the running
// measures' in order, then date) to the file's: date or timestamp; an
// integer base of a float64 measure.
func checkBaseSchema(what string, s catalog.Schema, keyCols []catalog.Column, ms []Measure, vals []catalog.Column) error {
	for _, k := range keyCols {
		c, ok := s.Column(k.Name)
		if !ok {
			return fmt.Errorf("%s has no key column %q", what, k.Name)
		}
		if c.Type.Kind != k.Type.Kind {
			return fmt.Errorf("%s: key column %q is %s, the events' is %s", what, k.Name, c.Type, k.Type)
		}
	}
	j := 0
	for _, m := range ms {
		if !m.Func.Running() {
			continue
		}
		c, ok := s.Column(m.Name)
		if !ok {
			return fmt.Errorf("%s has no column %q for the base of measure %s", what, m.Name, m)
		}
		switch {
		case m.float && numeric(c.Type.Kind):
			vals[j].Type = c.Type
		case m.dec && (c.Type.Kind != catalog.KindDecimal || c.Type.Scale != m.src.Scale):
			return fmt.Errorf("%s: column %q of measure %s is %s: want a decimal of scale %d", what, m.Name, m, c.Type, m.src.Scale)
		case m.dec:
			vals[j].Type = c.Type
		case m.float:
			return fmt.Errorf("%s: column %q of measure %s is %s: want float64, int32 or int64", what, m.Name, m, c.Type)
		case c.Type.Kind != catalog.KindInt32 && c.Type.Kind != catalog.KindInt64:
			return fmt.Errorf("%s: column %q of measure %s is %s: want int32 or int64", what, m.Name, m, c.Type)
		}
		j++
	}
	date := &vals[j]
	c, ok := s.Column("date")
	if !ok {
		return fmt.Errorf("%s has no date column (the snapshot day)", what)
	}
	if c.Type.Kind != catalog.KindDate && c.Type.Kind != catalog.KindTimestamp {
		return fmt.Errorf("%s: column \"date\" is %s: want date", what, c.Type)
	}
	date.Type = c.Type
	return nil
}

// snapshotFiles resolves a snapshot location: a Parquet file (a location
// ending in .parquet), a CSV file (.csv) or a sluice table's live files. The returned func
// releases what it opened.
func snapshotFiles(ctx context.Context, loc string) ([]dataFile, func(), error) {
	lower := strings.ToLower(loc)
	switch {
	case strings.HasSuffix(lower, ".parquet"), isCSV(lower):
		dir, name := path.Split(loc)
		if dir == "" {
			dir = "."
		}
		st, err := cloud.Open(ctx, dir)
		if err != nil {
			return nil, nil, fmt.Errorf("snapshot %s: %w", cloud.Redact(loc), err)
		}
		info, err := st.Stat(ctx, name)
		if err != nil {
			st.Close()
			return nil, nil, fmt.Errorf("snapshot %s: %w", cloud.Redact(loc), err)
		}
		return []dataFile{{st, name, info.Size, nil}}, func() { st.Close() }, nil
	}
	t, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", cloud.Redact(loc), err)
	}
	files, err := tableFiles(ctx, t)
	if err != nil {
		t.Close()
		if errors.Is(err, catalog.ErrTableNotFound) {
			return nil, nil, fmt.Errorf("snapshot %s is neither a sluice table nor a Parquet file: %w", cloud.Redact(loc), err)
		}
		return nil, nil, fmt.Errorf("snapshot %s: %w", cloud.Redact(loc), err)
	}
	return files, func() { t.Close() }, nil
}

// tableFiles lists t's live files at its latest version.
func tableFiles(ctx context.Context, t catalog.Readable) ([]dataFile, error) {
	m, err := t.Latest(ctx)
	if err != nil {
		return nil, err
	}
	return manifestFiles(ctx, t, m, nil)
}

// manifestFiles lists t's live files at version m in the partitions keep
// accepts (nil: all), reading only those partitions' pieces.
func manifestFiles(ctx context.Context, t catalog.Readable, m *catalog.Manifest, keep func(partition string) bool) ([]dataFile, error) {
	refs, err := t.Partitions(ctx, m)
	if err != nil {
		return nil, err
	}
	var out []dataFile
	for _, ref := range refs {
		if keep != nil && !keep(ref.Partition) {
			continue
		}
		files, err := t.PartitionFiles(ctx, ref)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			st, key, err := t.DataFileStore(ctx, f)
			if err != nil {
				return nil, err
			}
			out = append(out, dataFile{st, key, f.Bytes, f.PartitionValues})
		}
	}
	return out, nil
}
