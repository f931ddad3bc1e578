package compact

import (
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/internal/pqio"
)

// sortBatch is the rows written to the output writer at once.
const sortBatch = 256

// startSort readies the rewrite to order its rows (RewriteOptions.Order):
// the sorter, whose buffer gets a sixteenth of the memory budget, and the
// sorting_columns the outputs record.
func (rw *rewriter) startSort(budget int64) error {
	idx, err := rw.o.Order.check(rw.schema)
	if err != nil {
		return err
	}
	kinds := make([]parquet.Kind, len(rw.leaves))
	signed := make([]bool, len(rw.leaves))
	for j, f := range rw.leaves {
		kinds[j] = f.Type().Kind()
		signed[j] = rw.schema.Columns[j].Type.Kind == pqio.KindDecimal
	}
	// Rows compare by a key of bytes built once a row: one comparison of
	// bytes, not one per column through parquet.Value.
	keyOf := sortKeyFunc(idx, kinds, signed)
	if rw.o.Order.ZOrder {
		keyOf = zorderKeyFunc(idx, kinds, signed)
	} else {
		rw.sortingColumns = make([]parquet.SortingColumn, len(rw.o.Order.Columns))
		for i, c := range rw.o.Order.Columns {
			rw.sortingColumns[i] = parquet.NullsFirst(parquet.Ascending(c))
		}
	}
	rw.sorter = newSorter(rw.ctx, kinds, keyOf, min(max(budget/16, 1<<20), sortBufferCap))
	return nil
}

// sortRowGroups reads the rows of input f that are kept (del: those not
// deleted) into the sorter: converted to the table's types, counted and
// hashed for the verification as any rewrite's inputs.
func (rw *rewriter) sortRowGroups(key string, f *parquet.File, plans []colPlan, del *deletions) error {
	return rw.keptRowGroups(f, del, func(_ int, rg parquet.RowGroup, first int64, kept int) error {
		return pqio.NoPanic(func() error { return rw.sortRowGroup(key, rg, plans, del, first, kept) })
	})
}

// sortRowGroup is sortRowGroups for one row group of n rows, from the
// file's row first on, of which kept are kept.
func (rw *rewriter) sortRowGroup(key string, rg parquet.RowGroup, plans []colPlan, del *deletions, first int64, kept int) error {
	n := rg.NumRows()
	if rw.vals == nil {
		rw.vals = make([]parquet.Value, 4096)
	}
	if rw.rowBuf == nil {
		rw.rowBuf = make([]parquet.Row, rowBatch)
	}
	rows := rg.Rows()
	defer rows.Close()
	pos, off := first, 0
	for {
		m, rerr := rows.ReadRows(rw.rowBuf)
		hashed := rw.keptRows[:0]
		for i, row := range rw.rowBuf[:m] {
			if h, _ := del.keep(pos + int64(i)); h {
				hashed = append(hashed, row)
			}
		}
		rw.keptRows = hashed
		if off+len(hashed) > kept {
			return fmt.Errorf("%s: %w: more rows kept of a row group than its %d rows less %d deleted", key, ErrVerify, n, n-int64(kept))
		}
		if err := rw.sortRows(key, plans, hashed); err != nil {
			return err
		}
		pos += int64(m)
		off += len(hashed)
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("%s: %w: %v", key, pqio.ErrCorruptFile, rerr)
		}
	}
	if pos-first != n {
		return fmt.Errorf("%s: %w: a row group of %d rows holds %d", key, pqio.ErrCorruptFile, n, pos-first)
	}
	if off != kept {
		return fmt.Errorf("%s: %w: %d rows kept of a row group of %d rows, %d deleted", key, ErrVerify, off, n, n-int64(kept))
	}
	rw.res.RowsIn += n
	rw.res.RowsDeleted += n - int64(kept)
	return nil
}

// sortRows converts and hashes a batch of kept input rows and adds them
// to the sorter, which encodes each as it is added.
func (rw *rewriter) sortRows(key string, plans []colPlan, in []parquet.Row) error {
	if len(in) == 0 {
		return nil
	}
	cols := len(plans)
	if cap(rw.sortBacking) < len(in)*cols {
		rw.sortBacking = make([]parquet.Value, len(in)*cols)
	}
	backing := rw.sortBacking[:len(in)*cols]
	// The batch's bytes, in one buffer: a column's converted values may
	// be in a buffer the next column's conversion reuses.
	block := rw.sortBytes[:0]
	rw.in.begin(len(in))
	for j := range plans {
		vals, _, err := rw.rowValues(key, j, &plans[j], in, rw.vals, true)
		if err != nil {
			return err
		}
		rw.in.mix(j, 0, vals, rw.hashers[j])
		k := rw.leaves[j].Type().Kind()
		for i := range vals {
			v := &vals[i]
			if v.IsNull() || (k != parquet.ByteArray && k != parquet.FixedLenByteArray) {
				backing[i*cols+j] = v.Level(0, v.DefinitionLevel(), j)
				continue
			}
			start := len(block)
			block = append(block, v.ByteArray()...)
			b := block[start:len(block):len(block)]
			nv := parquet.ByteArrayValue(b)
			if k == parquet.FixedLenByteArray {
				nv = parquet.FixedLenByteArrayValue(b)
			}
			backing[i*cols+j] = nv.Level(0, v.DefinitionLevel(), j)
		}
	}
	rw.in.end()
	for i := range in {
		if err := rw.sorter.add(backing[i*cols : (i+1)*cols : (i+1)*cols]); err != nil {
			return fmt.Errorf("rewrite %s: %w", rw.partition, err)
		}
	}
	clear(backing)
	rw.sortBytes = block[:0]
	return nil
}

// writeSorted writes the sorted rows to the outputs. A file or row group
// is cut where it is due (as startRowGroup cuts them, by rows when the
// planner set the number of outputs) but only between two rows of
// different keys, so that the outputs' key ranges are disjoint; a run of
// one key four times a row group long is cut anyway.
func (rw *rewriter) writeSorted() error {
	var perOutput int64
	if rw.o.Outputs > 0 {
		rows := rw.res.RowsIn - rw.res.RowsDeleted
		perOutput = (rows + int64(rw.o.Outputs) - 1) / int64(rw.o.Outputs)
	}
	batch := make([]parquet.Row, 0, sortBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := pqio.NoPanic(func() error { _, err := rw.w.WriteRows(batch); return err })
		clear(batch)
		batch = batch[:0]
		if err != nil {
			return fmt.Errorf("rewrite %s: write: %w", rw.partition, err)
		}
		return nil
	}
	// A z-order's files end where the key crosses into another of 4 ×
	// Outputs cells of the keys' span (the bits after those all keys
	// share): a file then covers whole cells, not a sliver of the next
	// cell, which may lie far off on some column.
	cellBits := 0
	if rw.o.Order.ZOrder && rw.o.Outputs > 0 && rw.sorter.lo != nil {
		cellBits = firstDifferingBit(rw.sorter.lo, rw.sorter.hi) + bits.Len(uint(4*rw.o.Outputs-1))
	}
	var prev sortRow
	var written int64
	err := rw.sorter.finish(func(r *sortRow) error {
		if rw.w == nil {
			if err := rw.openFile(); err != nil {
				return err
			}
		} else if rw.fileRows > 0 {
			newKey := compareRows(&prev, r) != 0
			boundary := newKey
			if cellBits > 0 {
				boundary = firstDifferingBit(prev.key, r.key) < cellBits
			}
			if rw.sortedFileFull(perOutput, written, boundary) {
				if err := flush(); err != nil {
					return err
				}
				if err := rw.closeFile(); err != nil {
					return err
				}
				if err := rw.openFile(); err != nil {
					return err
				}
			} else if rw.rgBytes >= rw.o.RowGroupBytes && (newKey || rw.rgBytes >= 4*rw.o.RowGroupBytes) {
				if err := flush(); err != nil {
					return err
				}
				if err := rw.flushRowGroup(); err != nil {
					return err
				}
			}
		}
		batch = append(batch, r.row)
		b := rw.rowBytes(r.row)
		rw.rgBytes += b
		rw.inBytes += b
		rw.fileRows++
		written++
		// r.key may be a buffer the sorter reuses for the next row.
		prev = sortRow{key: append(prev.key[:0], r.key...), pre: r.pre}
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// sortedFileFull says whether the output file is full before a row,
// written rows after the outputs' first, boundary when a file may end
// between the last row and it (cutBoundary). Sorted outputs count
// their rows' plain bytes as input bytes (inBytes), so the ratio learnt
// at each row group is compressed to plain.
func (rw *rewriter) sortedFileFull(perOutput, written int64, boundary bool) bool {
	if perOutput > 0 {
		if len(rw.res.Outputs)+1 >= rw.o.Outputs {
			return false
		}
		// Due by the rows of every output so far, so that a cut put off to
		// a boundary does not put off the next ones.
		due := written >= int64(len(rw.res.Outputs)+1)*perOutput
		return due && (boundary || rw.fileRows >= 2*perOutput)
	}
	est := rw.cw.n + int64(float64(rw.inBytes-rw.flushedInBytes)*rw.ratio)
	return est > rw.o.TargetFileSize && (boundary || est > 2*rw.o.TargetFileSize)
}

// firstDifferingBit is the index, from the most significant bit of the
// first byte, of the first bit where keys a and b differ; 8 × their length
// when they are equal.
func firstDifferingBit(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if x := a[i] ^ b[i]; x != 0 {
			return 8*i + bits.LeadingZeros8(x)
		}
	}
	return 8 * min(len(a), len(b))
}

// rowBytes is the plain size of a row's values, as a row group counts it.
func (rw *rewriter) rowBytes(row parquet.Row) int64 {
	var n int64
	for j := range row {
		v := &row[j]
		n += fixedWidth(rw.leaves[j].Type())
		if k := v.Kind(); !v.IsNull() && (k == parquet.ByteArray || k == parquet.FixedLenByteArray) {
			n += int64(len(v.ByteArray()))
		}
	}
	return n
}
