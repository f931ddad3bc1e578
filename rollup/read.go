package rollup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// colData is one column of one row group, decoded into a typed slice: no
// value goes through an interface.
type colData struct {
	typ catalog.Type
	// ints holds int32, int64, bool (0/1), date (days since 1970-01-01)
	// and timestamp (microseconds since 1970-01-01 UTC) values; floats
	// float64 values.
	ints   []int64
	floats []float64
	// his holds the high words of 128-bit decimals (ints their low
	// words) when the column's values need them; empty otherwise.
	his []int64
	// bytes holds string, uuid (canonical text) and binary values back to
	// back; value i is bytes[offs[i]:offs[i+1]].
	bytes []byte
	offs  []int32
	// valid[i] is false for a NULL.
	valid []bool
}

func (d *colData) reset(typ catalog.Type) {
	d.typ = typ
	d.ints, d.floats, d.his, d.bytes, d.offs, d.valid = d.ints[:0], d.floats[:0], d.his[:0], d.bytes[:0], append(d.offs[:0], 0), d.valid[:0]
}

// reserve makes room for n values, so that appending them does not grow
// the slices value by value.
func (d *colData) reserve(n int) {
	if d.typ.Kind == catalog.KindFloat64 {
		if cap(d.floats) < n {
			d.floats = make([]float64, 0, n)
		}
	} else if cap(d.ints) < n {
		d.ints = make([]int64, 0, n)
	}
	if cap(d.valid) < n {
		d.valid = make([]bool, 0, n)
	}
}

// grow appends n copies of v to s.
func grow[T any](s []T, n int, v T) []T {
	start := len(s)
	s = slices.Grow(s, n)[:start+n]
	for i := range s[start:] {
		s[start+i] = v
	}
	return s
}

// hi is the high word of value i as a 128-bit integer.
func (d *colData) hi(i int) int64 {
	if i < len(d.his) {
		return d.his[i]
	}
	return hiOf(d.ints[i])
}

func (d *colData) value(i int) []byte { return d.bytes[d.offs[i]:d.offs[i+1]] }

func isBytes(k catalog.Kind) bool {
	return k == catalog.KindString || k == catalog.KindUUID || k == catalog.KindBinary
}

// numeric tells whether a column of kind k is one a measure aggregates.
func numeric(k catalog.Kind) bool {
	return k == catalog.KindInt32 || k == catalog.KindInt64 || k == catalog.KindFloat64
}

// readChunk appends every value of one column chunk to d, converted by
// the column's physical type once per batch of values.
func readChunk(c parquet.ColumnChunk, pc pqio.ParquetColumn, d *colData, buf []parquet.Value) error {
	r := parquet.NewColumnChunkValueReader(c)
	defer r.Close()
	k := pc.Type.Kind
	for {
		n, err := r.ReadValues(buf)
		vals := buf[:n]
		for _, v := range vals {
			d.valid = append(d.valid, !v.IsNull())
		}
		switch {
		case k == catalog.KindDecimal && (pc.Kind == parquet.FixedLenByteArray || pc.Kind == parquet.ByteArray):
			for _, v := range vals {
				hi, lo := int64(0), int64(0)
				if !v.IsNull() {
					var err error
					if hi, lo, err = decimal128(v.ByteArray()); err != nil {
						return err
					}
				}
				d.ints, d.his = append(d.ints, lo), append(d.his, hi)
			}
		case isBytes(k):
			for _, v := range vals {
				if !v.IsNull() {
					if k == catalog.KindUUID && pc.Kind == parquet.FixedLenByteArray {
						d.bytes = append(d.bytes, pqio.FormatUUID(v.ByteArray())...)
					} else {
						d.bytes = append(d.bytes, v.ByteArray()...)
					}
				}
				d.offs = append(d.offs, int32(len(d.bytes)))
			}
		case k == catalog.KindBool:
			for _, v := range vals {
				d.ints = append(d.ints, int64(boolInt(!v.IsNull() && v.Boolean())))
			}
		case k == catalog.KindTimestamp && pc.Kind == parquet.Int96:
			for _, v := range vals {
				x := int64(0)
				if !v.IsNull() {
					x = pqio.Int96Micros(v.Int96())
				}
				d.ints = append(d.ints, x)
			}
		case k == catalog.KindTimestamp:
			unit := pc.Unit
			for _, v := range vals {
				x := v.Int64()
				switch unit {
				case 1e3:
					x *= 1000
				case 1e9:
					x = pqio.FloorDiv(x, 1000)
				}
				d.ints = append(d.ints, x)
			}
		case pc.Kind == parquet.Int32 && k == catalog.KindInt64: // UINT32
			for _, v := range vals {
				d.ints = append(d.ints, int64(uint32(v.Int32())))
			}
		case pc.Kind == parquet.Int32:
			for _, v := range vals {
				d.ints = append(d.ints, int64(v.Int32()))
			}
		case pc.Kind == parquet.Int64:
			for _, v := range vals {
				d.ints = append(d.ints, v.Int64())
			}
		case pc.Kind == parquet.Double:
			for _, v := range vals {
				d.floats = append(d.floats, v.Double())
			}
		case pc.Kind == parquet.Float:
			for _, v := range vals {
				d.floats = append(d.floats, float64(v.Float()))
			}
		default:
			return fmt.Errorf("column %q: rollup does not read %s columns", pc.Name, pc.Type)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scanFile calls fn once per row group of the Parquet file at key with the
// named columns decoded (cols[i] is want[i]), reading only their pages. A
// column the file lacks reads as NULL on every row, as a nullable column
// added to a table later does. The context is checked per row group.
//
// check, when not nil, is given the file's schema before any data is read.
// cols, when not nil, are the len(want) columns to decode into (their
// slices reused), else new ones are made.
func scanFile(ctx context.Context, st cloud.Store, key string, size int64, want []catalog.Column, cols []*colData, check func(catalog.Schema) error, fn func(cols []*colData, rows int) error) error {
	f, err := pqio.OpenParquetFile(key, pqio.NewReaderAt(ctx, st, key, size), size)
	if err != nil {
		return err
	}
	schema, pcs, _, err := pqio.DescribeParquetFile(key, f)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(schema); err != nil {
			return err
		}
	}
	idx := make([]int, len(want))
	for i, w := range want {
		idx[i] = -1
		for j := range pcs {
			if pcs[j].Name == w.Name {
				idx[i] = j
			}
		}
		if j := idx[i]; j >= 0 && pcs[j].Type.Kind != w.Type.Kind && !(w.Type.Kind == catalog.KindInt64 && pcs[j].Type.Kind == catalog.KindInt32) {
			return fmt.Errorf("%s: %w: column %q: the file has %s, the table %s", key, pqio.ErrIncompatibleSchema, w.Name, pcs[j].Type, w.Type)
		}
		if j := idx[i]; j >= 0 && w.Type.Kind == catalog.KindDecimal && pcs[j].Type.Scale != w.Type.Scale {
			return fmt.Errorf("%s: %w: column %q: the file has %s, the table %s: rollup does not rescale decimals", key, pqio.ErrIncompatibleSchema, w.Name, pcs[j].Type, w.Type)
		}
	}
	if cols == nil {
		cols = make([]*colData, len(want))
		for i := range cols {
			cols[i] = &colData{}
		}
	}
	maxDefs := make([]byte, len(pcs))
	leafDefs(f.Root(), func(leaf, def int) {
		for j := range pcs {
			if pcs[j].Leaf == leaf {
				maxDefs[j] = byte(def)
			}
		}
	})
	var buf []parquet.Value // readChunk's, made for the first column it reads
	var fnErr error
	err = pqio.NoPanic(func() error {
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := int(rg.NumRows())
			for i, w := range want {
				cols[i].reset(w.Type)
				if idx[i] < 0 {
					cols[i].valid = append(cols[i].valid, make([]bool, n)...)
					cols[i].ints = append(cols[i].ints, make([]int64, n)...)
					cols[i].floats = append(cols[i].floats, make([]float64, n)...)
					cols[i].offs = append(cols[i].offs, make([]int32, n)...)
					continue
				}
				pc := pcs[idx[i]]
				cols[i].reserve(n)
				read := func() error {
					if buf == nil {
						buf = make([]parquet.Value, 4096)
					}
					return readChunk(rg.ColumnChunks()[pc.Leaf], pc, cols[i], buf)
				}
				if typedChunk(pc) {
					read = func() error { return readTypedChunk(rg.ColumnChunks()[pc.Leaf], pc, maxDefs[idx[i]], cols[i]) }
				}
				if err := read(); err != nil {
					return fmt.Errorf("row group %d: column %q: %w", g, w.Name, err)
				}
				if len(cols[i].valid) != n {
					return fmt.Errorf("row group %d: column %q: %d values for %d rows", g, w.Name, len(cols[i].valid), n)
				}
			}
			if err := fn(cols, n); err != nil {
				fnErr = err
				return err
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", st.URL(key), err)
	}
	return nil
}

// dayer turns times into day numbers (days since 1970-01-01 of the date in
// a time zone), caching the zone offset over the span it holds for.
type dayer struct {
	loc    *time.Location
	lo, hi int64 // microseconds: the cached offset holds in [lo, hi)
	off    int64 // microseconds east of UTC
}

const microsPerDay = 86400 * 1e6

func (z *dayer) day(us int64) int64 {
	if z.loc == time.UTC {
		return pqio.FloorDiv(us, microsPerDay)
	}
	if us < z.lo || us >= z.hi {
		t := time.UnixMicro(us).In(z.loc)
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		z.off = int64(off) * 1e6
		z.lo, z.hi = minTime, maxTime
		if !start.IsZero() {
			z.lo = start.UnixMicro()
		}
		if !end.IsZero() {
			z.hi = end.UnixMicro()
		}
	}
	return pqio.FloorDiv(us+z.off, microsPerDay)
}

const (
	minTime = -1 << 63
	maxTime = 1<<63 - 1
)

// dayTime is day d's date as a time.Time, as catalog writes a DATE.
func dayTime(d int64) time.Time { return time.Unix(d*86400, 0).UTC() }

// dayString is day d as YYYY-MM-DD.
func dayString(d int64) string { return dayTime(d).Format(time.DateOnly) }

// dayOfDate is the day number of t's date, whatever its zone.
func dayOfDate(t time.Time) int64 {
	y, m, dd := t.Date()
	return pqio.FloorDiv(time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// leafDefs calls fn with each leaf column's index and maximum definition
// level under c.
func leafDefs(c *parquet.Column, fn func(leaf, def int)) {
	if c.Leaf() {
		fn(c.Index(), c.MaxDefinitionLevel())
		return
	}
	for _, s := range c.Columns() {
		leafDefs(s, fn)
	}
}
