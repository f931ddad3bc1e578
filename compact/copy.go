package compact

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/sluice-data/sluice/internal/pqio"
)

// testHookCorrupt, when set by a test, may change values of table column
// col after they were hashed and before they are written: a corruption the
// verification must catch.
var testHookCorrupt func(col int, v *parquet.Value)

// copyRowGroup decodes every column of one input row group, converts,
// checks and hashes its values and writes them to the output columns.
// data is the whole input file when it was fetched into memory (else
// nil), metas the row group's column chunks as its footer describes them.
func (rw *rewriter) copyRowGroup(key string, rg parquet.RowGroup, plans []colPlan, data []byte, metas []format.ColumnChunk) error {
	n := int(rg.NumRows())
	chunks := rg.ColumnChunks()
	writers := rw.w.ColumnWriters()
	rw.in.begin(n)
	if rw.vals == nil {
		rw.vals = make([]parquet.Value, 4096)
	}
	for j := range plans {
		pl := &plans[j]
		colw := writers[j]
		if pl.leaf < 0 {
			for off := 0; off < n; {
				m := min(n-off, len(rw.vals))
				vals := rw.vals[:m]
				clear(vals) // NULLs: the zero Value, levels 0
				if _, err := colw.WriteRowValues(vals); err != nil {
					return fmt.Errorf("%s: column %q: write: %w", key, rw.schema.Columns[j].Name, err)
				}
				off += m
			}
			rw.in.mixNulls(j, 0, n)
			rw.nulls[j] += int64(n)
			continue
		}
		k := rw.leaves[j].Type().Kind()
		isBytes := k == parquet.ByteArray || k == parquet.FixedLenByteArray
		var raws []rawPage
		if pl.reuse && pl.leaf < len(metas) {
			raws = reusablePages(data, &metas[pl.leaf].MetaData, int(pl.maxDef))
		}
		off, size, err := rw.copyChunk(key, j, pl, chunks[pl.leaf], n, isBytes, colw, raws)
		if err != nil {
			return err
		}
		if off != n {
			return fmt.Errorf("%s: %w: column %q holds %d values for %d rows", key, pqio.ErrCorruptFile, rw.schema.Columns[j].Name, off, n)
		}
		rw.rgBytes += size + int64(n)*fixedWidth(rw.leaves[j].Type())
	}
	rw.in.end()
	rw.fileRows += int64(n)
	if err := rw.proof.settle(rw.fileRows); err != nil {
		return err
	}
	rw.res.RowsIn += int64(n)
	return nil
}

// copyChunk decodes one input column chunk (table column j of a row group
// of n rows), page by page: it converts, checks and hashes the values and
// writes them to colw. raws, when not nil, are the chunk's data pages as
// stored, which may be reused (see reusingCodec). It returns how many
// values it read and, for a byte array column, their bytes.
func (rw *rewriter) copyChunk(key string, j int, pl *colPlan, chunk parquet.ColumnChunk, n int, isBytes bool, colw *parquet.ColumnWriter, raws []rawPage) (off int, size int64, err error) {
	name := rw.schema.Columns[j].Name
	pages := chunk.Pages()
	defer pages.Close()
	rw.ph.dict = nil // a chunk's dictionary is its own
	salt, null := columnSalt(j), nullHash(j)
	codec := rw.codecs[name]
	defer codec.done()
	for i := 0; ; i++ {
		// A page that may be reused is written as a page of its own:
		// what the column holds is flushed before it, and it after. Its
		// bytes, decompressed here to compare them with what the writer
		// makes of them, are primed for parquet-go's read of the page,
		// which then copies them instead of decompressing again.
		reuse := i < len(raws) && codec.accepts(len(raws[i].body), raws[i].uncompressed)
		if reuse {
			if err := colw.Flush(); err != nil {
				return off, size, fmt.Errorf("%s: column %q: write: %w", key, name, err)
			}
			reuse = codec.expectPage(raws[i])
		}
		var p parquet.Page
		var perr error
		if reuse {
			release := pqio.PrimeZstdPage(raws[i].body, codec.want)
			p, perr = pages.ReadPage()
			release()
			if perr == nil && p.NumValues() != int64(raws[i].values) {
				codec.done() // not the page expected: no reuse
				reuse = false
			}
		} else {
			p, perr = pages.ReadPage()
		}
		if perr != nil {
			if errors.Is(perr, io.EOF) {
				return off, size, nil
			}
			return off, size, fmt.Errorf("%s: column %q: %w: %v", key, name, pqio.ErrCorruptFile, perr)
		}
		m, psize, err := rw.copyPage(key, j, pl, p, off, n, isBytes, colw, salt, null)
		parquet.Release(p)
		if err == nil && reuse {
			before := codec.reused
			if err = colw.Flush(); err != nil {
				err = fmt.Errorf("%s: column %q: write: %w", key, name, err)
			} else if codec.reused > before && len(rw.ph.vh) == m {
				// Stored as read, and without NULLs: copyPage hashed
				// its values into rw.ph.vh, one a row.
				rw.proof.add(j, rw.fileRows+int64(off), rw.ph.vh, raws[i].body)
			}
			codec.done()
		}
		if err != nil {
			return off, size, err
		}
		off += m
		size += psize
	}
}

// copyPage is copyChunk's work on one page whose first value is the
// row group's row off.
func (rw *rewriter) copyPage(key string, j int, pl *colPlan, p parquet.Page, off, n int, isBytes bool, colw *parquet.ColumnWriter, salt, null uint64) (int, int64, error) {
	name := rw.schema.Columns[j].Name
	nv := int(p.NumValues())
	if off+nv > n {
		return 0, 0, fmt.Errorf("%s: %w: column %q holds more values than the row group's %d rows", key, pqio.ErrCorruptFile, name, n)
	}
	if pl.pageHash {
		if _, err := rw.ph.mixPage(&rw.in, j, off, n, p, rw.hashers[j], pl.maxDef, salt, null); err != nil {
			return 0, 0, fmt.Errorf("%s: column %q: %w: %v", key, name, pqio.ErrCorruptFile, err)
		}
	}
	if pl.conv == nil {
		if size, ok, err := rw.copyTyped(key, j, pl, p, off, nv, colw); ok || err != nil {
			return nv, size, err
		}
	}
	// Values already in the table's type and levels, with no NULL where
	// the table refuses one, are written as read: only the fixed-width
	// columns' NULLs need counting, which the page's levels do.
	asRead := pl.conv == nil && !pl.relevel && !isBytes && (pl.nullable || p.NumNulls() == 0)
	if asRead {
		rw.nulls[j] += p.NumNulls()
	}
	r := p.Values()
	start := off
	var size int64
	for {
		m, rerr := r.ReadValues(rw.vals)
		if m > 0 {
			if off+m > start+nv {
				return 0, 0, fmt.Errorf("%s: %w: column %q: a page of %d values holds more", key, pqio.ErrCorruptFile, name, nv)
			}
			vals := rw.vals[:m]
			var nulls int64
			check := vals
			if asRead {
				check = nil
			}
			for i := range check {
				v := &vals[i]
				if v.IsNull() {
					nulls++
					if !pl.nullable {
						return 0, 0, fmt.Errorf("%s: column %q: NULL in row %d of a row group but the table column is not nullable: %w", key, name, off+i, pqio.ErrIncompatibleSchema)
					}
					continue // a NULL's levels are 0 in any flat column
				}
				if pl.conv != nil {
					x, err := pl.conv(*v)
					if err != nil {
						return 0, 0, fmt.Errorf("%s: column %q: %w", key, name, err)
					}
					*v = x
				}
				if pl.relevel {
					pqio.SetDefinitionLevel(v, pl.def)
				}
				if isBytes {
					size += int64(len(v.ByteArray()))
				}
			}
			rw.nulls[j] += nulls
			if err := rw.writeValues(key, j, pl, off, vals, colw); err != nil {
				return 0, 0, err
			}
			off += m
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				break
			}
			return 0, 0, fmt.Errorf("%s: column %q: %w: %v", key, name, pqio.ErrCorruptFile, rerr)
		}
	}
	if off-start != nv {
		return 0, 0, fmt.Errorf("%s: %w: column %q: a page of %d values holds %d", key, pqio.ErrCorruptFile, name, nv, off-start)
	}
	return nv, size, nil
}

// copyTyped is copyPage's work on a page of the table column's own type:
// the values are built straight from the page's typed data (or its
// dictionary), not through parquet-go's value reader, which costs more per
// value than the rest of the copy short of compression. A page with NULLs
// takes this path when its column is flat (see pageHashes.covers) and the
// table column nullable; its non-null values are spread over the rows its
// definition levels say. Only an optional column's buffer reads a value's
// definition level, so only a nullable table column's values get one. ok
// is false, with nothing written, for a page it does not take: NULLs where
// the table column refuses them (copyPage reports those), nested levels,
// and FLOAT and INT96, which no table column holds unconverted.
func (rw *rewriter) copyTyped(key string, j int, pl *colPlan, p parquet.Page, off, nv int, colw *parquet.ColumnWriter) (size int64, ok bool, err error) {
	nulls := int(p.NumNulls())
	var defs []byte
	if nulls > 0 {
		defs = p.DefinitionLevels()
		if !pl.nullable || !pl.pageHash || pl.maxDef != 1 || len(defs) != nv {
			return 0, false, nil
		}
	}
	data := p.Data()
	// fill builds the values of rows [start, start+len(vals)) of the page
	// and returns their bytes (zero for a fixed-width kind); have is how
	// many values the page's data holds.
	var fill func(vals []parquet.Value, start int) int64
	var have int
	switch kind := p.Type().Kind(); {
	case p.Dictionary() != nil:
		dict, idx := p.Dictionary(), data.Int32()
		isBytes := kind == parquet.ByteArray || kind == parquet.FixedLenByteArray
		have, fill = len(idx), func(vals []parquet.Value, start int) (n int64) {
			dict.Lookup(idx[start:start+len(vals)], vals)
			for i := 0; isBytes && i < len(vals); i++ {
				n += int64(len(vals[i].ByteArray()))
			}
			return n
		}
	case kind == parquet.Boolean:
		// Packed bits from bit 0 (see hashValues), padding after them.
		bits := data.Boolean()
		have = min(nv-nulls, len(bits)*8)
		fill = func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				vals[i] = parquet.BooleanValue(bit(bits, start+i))
			}
			return 0
		}
	case kind == parquet.Int32:
		xs := data.Int32()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.Int32Value(x)
			}
			return 0
		}
	case kind == parquet.Int64:
		xs := data.Int64()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.Int64Value(x)
			}
			return 0
		}
	case kind == parquet.Double:
		xs := data.Double()
		have, fill = len(xs), func(vals []parquet.Value, start int) int64 {
			for i, x := range xs[start : start+len(vals)] {
				vals[i] = parquet.DoubleValue(x)
			}
			return 0
		}
	case kind == parquet.ByteArray:
		b, offs := data.ByteArray()
		have, fill = max(len(offs)-1, 0), func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				vals[i] = parquet.ByteArrayValue(b[offs[start+i]:offs[start+i+1]])
			}
			return int64(offs[start+len(vals)] - offs[start])
		}
	case kind == parquet.FixedLenByteArray:
		b, w := data.FixedLenByteArray()
		if w > 0 {
			have = len(b) / w
		}
		fill = func(vals []parquet.Value, start int) int64 {
			for i := range vals {
				k := (start + i) * w
				vals[i] = parquet.FixedLenByteArrayValue(b[k : k+w])
			}
			return int64(len(vals) * w)
		}
	default:
		return 0, false, nil
	}
	if have != nv-nulls {
		return 0, true, fmt.Errorf("%s: %w: column %q: a page of %d values and %d NULLs holds %d values", key, pqio.ErrCorruptFile, rw.schema.Columns[j].Name, nv, nulls, have)
	}
	k := 0 // the page's non-null values used so far
	for start := 0; start < nv; start += len(rw.vals) {
		vals := rw.vals[:min(nv-start, len(rw.vals))]
		if defs == nil {
			size += fill(vals, k)
			k += len(vals)
			if pl.nullable {
				for i := range vals {
					pqio.SetDefinitionLevel(&vals[i], pl.def)
				}
			}
		} else {
			n, dense, err := spreadValues(vals, defs[start:start+len(vals)], have-k, func(dense []parquet.Value) int64 { return fill(dense, k) }, pl.def)
			if err != nil {
				return size, true, fmt.Errorf("%s: %w: column %q: %v", key, pqio.ErrCorruptFile, rw.schema.Columns[j].Name, err)
			}
			size += n
			k += dense
		}
		if err := rw.writeValues(key, j, pl, off+start, vals, colw); err != nil {
			return size, true, err
		}
	}
	rw.nulls[j] += int64(nulls)
	return size, true, nil
}

// countNulls counts the NULLs of a flat optional column's page: its
// definition levels other than 1.
func countNulls(defs []byte) (n int) {
	for _, d := range defs {
		if d != 1 {
			n++
		}
	}
	return n
}

// spreadValues builds the values of the rows whose definition levels are
// defs (1 for a value, else NULL). fill builds the dense non-null values,
// of which left remain in the page; they are moved to the rows that defs
// marks, with definition level def, and the other rows become NULLs. It
// returns fill's bytes and how many values it took.
func spreadValues(vals []parquet.Value, defs []byte, left int, fill func(dense []parquet.Value) int64, def int) (size int64, dense int, err error) {
	dense = len(vals) - countNulls(defs)
	if dense > left {
		return 0, 0, fmt.Errorf("a page's levels define more values than it holds")
	}
	size = fill(vals[:dense])
	// From the back, so that no dense value is overwritten before it has
	// moved: src, the last one not yet moved, is below i at every NULL.
	src := dense - 1
	for i := len(vals) - 1; i >= 0; i-- {
		if defs[i] != 1 {
			vals[i] = parquet.Value{}
			continue
		}
		vals[i] = vals[src]
		pqio.SetDefinitionLevel(&vals[i], def)
		src--
	}
	return size, dense, nil
}

// writeValues hashes the values of table column j from the row group's
// row off on, unless their page was hashed whole (colPlan.pageHash), and
// writes them to colw.
func (rw *rewriter) writeValues(key string, j int, pl *colPlan, off int, vals []parquet.Value, colw *parquet.ColumnWriter) error {
	if !pl.pageHash {
		rw.in.mix(j, off, vals, rw.hashers[j])
	}
	if testHookCorrupt != nil {
		for i := range vals {
			testHookCorrupt(j, &vals[i])
		}
	}
	if _, err := colw.WriteRowValues(vals); err != nil {
		return fmt.Errorf("%s: column %q: write: %w", key, rw.schema.Columns[j].Name, err)
	}
	return nil
}

// fixedWidth is the plain size of one value of a column type, 4 for the
// length prefix of a byte array.
func fixedWidth(t parquet.Type) int64 {
	switch t.Kind() {
	case parquet.Boolean:
		return 1
	case parquet.Int32, parquet.Float:
		return 4
	case parquet.Int64, parquet.Double:
		return 8
	case parquet.Int96:
		return 12
	case parquet.FixedLenByteArray:
		return 0 // counted from the values
	default:
		return 4
	}
}
