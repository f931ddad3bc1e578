package compact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// An input may have deleted rows (an Iceberg data file's position deletes):
// RewriteOptions.Deleted gives their positions, 0-based in file order, and
// the rewrite leaves them out, so that the outputs hold the table's rows as
// a reader sees them and the deletes can be dropped with the inputs.
//
// Such an input is read row by row (copyRowGroupRows; nested tables:
// nestedRewrite.copyFile), its rows in order, so that a row's position is
// known whatever the row groups and pages: a cursor over the sorted
// positions says which rows go. None of its pages is reused and none of
// its pages' values is hashed as a page (both need every row of a page);
// the other inputs of the bin keep those fast paths.
//
// The verification holds the same: the inputs' side hashes and counts the
// kept rows only, the outputs' side reads back what was written, and
// RowsIn (rows read), RowsDeleted (positions that fall in the file, counted
// by a search of the positions, not by the row cursor) and RowsOut must
// agree: RowsOut = RowsIn - RowsDeleted, as must the rows hashed. A deleted
// row written anyway is one row too many; written in place of a kept row,
// it changes the checksum.

// ErrDeletePosition is a deleted row position (RewriteOptions.Deleted,
// RowDeleter) that is not a row of its file: negative, or at or past the
// file's row count. The rewrite fails and writes nothing.
var ErrDeletePosition = errors.New("deleted row position out of range")

// RowDeleter is implemented by a Table whose data files may have deleted
// rows, as an Iceberg table's position deletes delete them. Run asks it,
// for each input of a bin before the bin is rewritten, and the rewrite
// leaves those rows out (RewriteOptions.Deleted). An error fails the
// bin's partition, as a failed rewrite does.
type RowDeleter interface {
	// DeletedRows returns the sorted, distinct 0-based positions, in file
	// order, of f's deleted rows; nil when none is.
	DeletedRows(ctx context.Context, f catalog.DataFile) ([]int64, error)
}

// testHookWriteRow, when set by a test, decides for each row of an input
// with deleted rows whether it is written, in place of whether it is
// deleted; the inputs' side of the verification still hashes and counts
// exactly the rows not deleted. It stands for a rewrite that lets a
// deleted row slip through, which the verification must catch.
var testHookWriteRow func(file string, pos int64, deleted bool) bool

// deletions are the deleted rows of one input file.
type deletions struct {
	file string
	pos  []int64 // sorted, distinct, each a row of the file
	next int     // pos[next] is the first position not yet passed (deleted)
}

// deletions returns the deleted rows of input f, of rows rows; nil when
// none is.
func (o RewriteOptions) deletions(f catalog.DataFile, rows int64) (*deletions, error) {
	if o.Deleted == nil {
		return nil, nil
	}
	pos := o.Deleted(f)
	if len(pos) == 0 {
		return nil, nil
	}
	if !sortedDistinct(pos) {
		pos = slices.Compact(slices.Sorted(slices.Values(pos)))
	}
	for _, p := range []int64{pos[0], pos[len(pos)-1]} {
		if p < 0 || p >= rows {
			return nil, fmt.Errorf("%s: %w: row %d deleted of a file of %d rows", f.Path, ErrDeletePosition, p, rows)
		}
	}
	return &deletions{file: f.Path, pos: pos}, nil
}

// sortedDistinct reports whether pos is strictly increasing.
func sortedDistinct(pos []int64) bool {
	for i := 1; i < len(pos); i++ {
		if pos[i] <= pos[i-1] {
			return false
		}
	}
	return true
}

// within counts the deleted rows among the n rows from start on. A nil
// *deletions has none.
func (d *deletions) within(start, n int64) int64 {
	if d == nil {
		return 0
	}
	lo, _ := slices.BinarySearch(d.pos, start)
	hi, _ := slices.BinarySearch(d.pos, start+n)
	return int64(hi - lo)
}

// keep says of the file's row at pos, rows asked in increasing order,
// whether it is kept (hashed and counted on the inputs' side) and whether
// it is written: the same, but for testHookWriteRow. A nil *deletions
// keeps every row.
func (d *deletions) keep(pos int64) (kept, write bool) {
	if d == nil {
		return true, true
	}
	for d.next < len(d.pos) && d.pos[d.next] < pos {
		d.next++
	}
	kept = d.next == len(d.pos) || d.pos[d.next] != pos
	if testHookWriteRow != nil {
		return kept, testHookWriteRow(d.file, pos, !kept)
	}
	return kept, kept
}

// rowBatch is the rows copyRowGroupRows reads at a time; at most
// len(rewriter.vals).
const rowBatch = 1024

// copyRowGroupRows is copyRowGroup for an input with deleted rows: it reads
// the row group's n rows, from the file's row first on, whole and in order,
// leaves out the deleted ones (kept rows remain), and converts, checks,
// hashes and writes the kept rows' values column by column, a batch of
// rows at a time.
func (rw *rewriter) copyRowGroupRows(key string, rg parquet.RowGroup, plans []colPlan, del *deletions, first int64, kept int) error {
	n := rg.NumRows()
	writers := rw.w.ColumnWriters()
	if rw.vals == nil {
		rw.vals = make([]parquet.Value, 4096)
	}
	if rw.rowBuf == nil {
		rw.rowBuf = make([]parquet.Row, rowBatch)
	}
	rw.in.begin(kept)
	rows := rg.Rows()
	defer rows.Close()
	pos, off, wrote := first, 0, 0
	for {
		m, rerr := rows.ReadRows(rw.rowBuf)
		// Row headers are gathered in slices of their own: ReadRows
		// refills each of rowBuf's rows in place.
		hashed, written := rw.keptRows[:0], rw.writtenRows[:0]
		for i, row := range rw.rowBuf[:m] {
			h, w := del.keep(pos + int64(i))
			if h {
				hashed = append(hashed, row)
			}
			if w {
				written = append(written, row)
			}
		}
		rw.keptRows, rw.writtenRows = hashed, written
		if off+len(hashed) > kept {
			return fmt.Errorf("%s: %w: more rows kept of a row group than its %d rows less %d deleted", key, ErrVerify, n, n-int64(kept))
		}
		if err := rw.copyKeptRows(key, plans, writers, hashed, written, off); err != nil {
			return err
		}
		pos += int64(m)
		off += len(hashed)
		wrote += len(written)
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
	rw.in.end()
	rw.fileRows += int64(wrote)
	rw.res.RowsIn += n
	rw.res.RowsDeleted += n - int64(kept)
	return rw.proof.settle(rw.fileRows)
}

// copyKeptRows converts, checks, hashes and writes, column by column, the
// kept rows of a batch (hashed), which are the row group's kept rows from
// off on. written are the rows written: hashed, unless testHookWriteRow
// says otherwise.
func (rw *rewriter) copyKeptRows(key string, plans []colPlan, writers []*parquet.ColumnWriter, hashed, written []parquet.Row, off int) error {
	split := testHookWriteRow != nil
	for j := range plans {
		pl := &plans[j]
		vals, size, err := rw.rowValues(key, j, pl, hashed, rw.vals, true)
		if err != nil {
			return err
		}
		if !split {
			if err := rw.writeValues(key, j, pl, off, vals, writers[j]); err != nil {
				return err
			}
		} else {
			rw.in.mix(j, off, vals, rw.hashers[j])
			wv, _, err := rw.rowValues(key, j, pl, written, make([]parquet.Value, len(written)), false)
			if err != nil {
				return err
			}
			if _, err := writers[j].WriteRowValues(wv); err != nil {
				return fmt.Errorf("%s: column %q: write: %w", key, rw.schema.Columns[j].Name, err)
			}
		}
		rw.rgBytes += size + int64(len(vals))*fixedWidth(rw.leaves[j].Type())
	}
	return nil
}

// rowValues builds in dst the values of table column j of rows, converted
// to the table's type and levels as copyPage does, and returns them with
// their bytes (byte array columns). count adds their NULLs to the inputs'
// side of the verification.
func (rw *rewriter) rowValues(key string, j int, pl *colPlan, rows []parquet.Row, dst []parquet.Value, count bool) ([]parquet.Value, int64, error) {
	name := rw.schema.Columns[j].Name
	k := rw.leaves[j].Type().Kind()
	isBytes := k == parquet.ByteArray || k == parquet.FixedLenByteArray
	vals := dst[:len(rows)]
	var size, nulls int64
	for i, row := range rows {
		var v parquet.Value // a column the file lacks: NULL
		if pl.leaf >= 0 {
			var ok bool
			if v, ok = leafValue(row, pl.leaf); !ok {
				return nil, 0, fmt.Errorf("%s: %w: column %q: a row without its value", key, pqio.ErrCorruptFile, name)
			}
		}
		if v.IsNull() {
			nulls++
			if !pl.nullable && pl.leaf >= 0 {
				return nil, 0, fmt.Errorf("%s: column %q: NULL in a row but the table column is not nullable: %w", key, name, pqio.ErrIncompatibleSchema)
			}
			vals[i] = v
			continue
		}
		if pl.conv != nil {
			x, err := pl.conv(v)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: column %q: %w", key, name, err)
			}
			v = x
		}
		if pl.relevel {
			pqio.SetDefinitionLevel(&v, pl.def)
		}
		if isBytes {
			size += int64(len(v.ByteArray()))
		}
		vals[i] = v
	}
	if count {
		rw.nulls[j] += nulls
	}
	return vals, size, nil
}

// leafValue returns the value of leaf column leaf in a row of a flat file:
// one value a leaf, in leaf order.
func leafValue(row parquet.Row, leaf int) (parquet.Value, bool) {
	if leaf < len(row) && row[leaf].Column() == leaf {
		return row[leaf], true
	}
	for _, v := range row {
		if v.Column() == leaf {
			return v, true
		}
	}
	return parquet.Value{}, false
}
