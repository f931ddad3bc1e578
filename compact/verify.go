package compact

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// ErrVerify: the rows a rewrite wrote do not match the rows it read (row
// count, null counts per column or the order-independent checksum of every
// row's values). The outputs were deleted.
var ErrVerify = errors.New("rewrite verification failed")

// readBackHook, set by tests only, sees each output file, whole, and its
// proof just before the read-back.
var readBackHook func(f *os.File, size int64, proof *reuseProof)

// readBack reads an output file as written and adds its rows to the
// outputs' side of the verification; it returns the file's footer stats.
func (rw *rewriter) readBack(key string, r io.ReaderAt, size int64) (catalog.FileStats, error) {
	open := pqio.OpenParquetFile
	if rw.proof.proves() {
		open = pqio.OpenParquetFileWithIndex // to seek past proven pages
	}
	f, err := open(key, r, size)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	fileSchema, _, stats, err := pqio.DescribeParquetFile(key, f)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	if got, want := fileSchema.Stored().String(), rw.schema.Stored().String(); got != want {
		return catalog.FileStats{}, fmt.Errorf("rewrite: %s: %w: the output's schema is %s, the table's %s", key, ErrVerify, got, want)
	}
	sum, n, err := fileChecksum(rw.ctx, f, rw.hashers, rw.proof, r)
	if err != nil {
		return catalog.FileStats{}, fmt.Errorf("rewrite: reading back %s: %w", key, err)
	}
	if n != stats.Rows {
		return catalog.FileStats{}, fmt.Errorf("rewrite: %s: %w: %d rows read back, the footer says %d", key, ErrVerify, n, stats.Rows)
	}
	rw.outSum += sum
	if rw.outNulls == nil {
		rw.outNulls = make([]int64, len(rw.schema.Columns))
	}
	for j, c := range rw.schema.Columns {
		rw.outNulls[j] += stats.Columns[c.Name].NullCount
	}
	return stats, nil
}

// verify compares the inputs' rows with the outputs'.
func (rw *rewriter) verify() error {
	if err := verifyRows(rw.partition, rw.res, rw.in.n); err != nil {
		return err
	}
	if rw.res.RowsOut == 0 {
		return nil
	}
	for j, c := range rw.schema.Columns {
		if rw.nulls[j] != rw.outNulls[j] {
			return fmt.Errorf("rewrite %s: %w: column %q: %d NULLs in, %d out", rw.partition, ErrVerify, c.Name, rw.nulls[j], rw.outNulls[j])
		}
	}
	if rw.in.sum != rw.outSum {
		return fmt.Errorf("rewrite %s: %w: the checksum of the rows read (%016x) differs from the rows written (%016x)", rw.partition, ErrVerify, rw.in.sum, rw.outSum)
	}
	return nil
}

// verifyRows compares the rows a rewrite of partition read, less those
// deleted, with the rows it hashed on the inputs' side and the rows it
// wrote.
func verifyRows(partition string, res RewriteResult, hashed int64) error {
	want := res.RowsIn - res.RowsDeleted
	if res.RowsOut != want {
		return fmt.Errorf("rewrite %s: %w: %d rows in, %d of them deleted, %d rows out", partition, ErrVerify, res.RowsIn, res.RowsDeleted, res.RowsOut)
	}
	if hashed != want {
		return fmt.Errorf("rewrite %s: %w: %d rows in, %d of them deleted, %d rows hashed", partition, ErrVerify, res.RowsIn, res.RowsDeleted, hashed)
	}
	return nil
}

// fileChecksum is the order-independent checksum of every row of a file
// whose columns are the table's (same order, same types); hashers are the
// table's (tableHashers).
//
// The columns sluice writes are read page by page, on the pages' typed
// values (pageHashes): a dictionary's values are hashed once, not once per
// row that refers to them. Other columns (booleans, nested or repeated
// ones, which a table never has) go through parquet-go's ReadValues.
// Both hash every value exactly as rowHashes.mix does.
//
// proof, when it holds pages (the file must then have been opened with
// its page index), proves those pages by their bytes, read through r,
// instead of reading their values (see reuseProof); nil reads every page.
func fileChecksum(ctx context.Context, f *parquet.File, hashers []valueHasher, proof *reuseProof, r io.ReaderAt) (sum uint64, rows int64, err error) {
	var h rowHashes
	var ph pageHashes
	vals := make([]parquet.Value, 4096)
	cols := f.Root().Columns()
	fp := proof.forFile(f, len(hashers), r)
	err = pqio.NoPanic(func() error {
		var start int64 // the row group's first row in the file
		for g, rg := range f.RowGroups() {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := int(rg.NumRows())
			chunks := rg.ColumnChunks()
			if len(chunks) != len(hashers) {
				return fmt.Errorf("%w: %d columns, want %d", ErrVerify, len(chunks), len(hashers))
			}
			h.begin(n)
			for j, c := range chunks {
				cp, err := fp.chunk(g, j, start, n)
				if err != nil {
					return err
				}
				var off int
				if len(cols) == len(chunks) && ph.covers(cols[j], hashers[j]) {
					off, err = ph.mixChunk(&h, j, c, n, hashers[j], byte(cols[j].MaxDefinitionLevel()), cp)
				} else if cp == nil {
					off, err = mixChunkValues(&h, j, c, n, hashers[j], vals)
				} else {
					err = fmt.Errorf("%w: column %d has reused pages but is not read page by page", ErrVerify, j)
				}
				if err != nil {
					return err
				}
				if off != n {
					return fmt.Errorf("%w: column %d holds %d values for %d rows", ErrVerify, j, off, n)
				}
			}
			if err := fp.addShares(h.rows, start); err != nil {
				return err
			}
			h.end()
			start += int64(n)
		}
		return fp.done(start)
	})
	return h.sum, h.n, err
}

// mixChunkValues mixes the values of column chunk c (column j of a row
// group of n rows) into h, read as parquet.Values; it returns how many it
// read.
func mixChunkValues(h *rowHashes, j int, c parquet.ColumnChunk, n int, hv valueHasher, vals []parquet.Value) (int, error) {
	r := parquet.NewColumnChunkValueReader(c)
	defer r.Close()
	off := 0
	for {
		m, rerr := r.ReadValues(vals)
		if off+m > n {
			return off, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
		}
		h.mix(j, off, vals[:m], hv)
		off += m
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return off, nil
			}
			return off, rerr
		}
	}
}

// pageHashes hashes the values of column chunks page by page.
type pageHashes struct {
	vh       []uint64           // salted hashes of the current page's non-null values
	dict     parquet.Dictionary // the dictionary whose hashes dictHash holds
	dictHash []uint64           // its entries' salted hashes
}

// covers reports whether mixChunk reads column col of hasher hv: a flat,
// required or optional column of a physical type with typed page values.
func (ph *pageHashes) covers(col *parquet.Column, hv valueHasher) bool {
	if !col.Leaf() || col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 {
		return false
	}
	switch parquet.Kind(hv) {
	case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.Int96, parquet.ByteArray, parquet.FixedLenByteArray:
		return col.Type().Kind() == parquet.Kind(hv)
	}
	return false
}

// mixChunk mixes the values of column chunk c (column j of a row group of
// n rows, NULL where the definition level is below maxDef) into h; it
// returns how many it read.
func (ph *pageHashes) mixChunk(h *rowHashes, j int, c parquet.ColumnChunk, n int, hv valueHasher, maxDef byte, cp *chunkProof) (int, error) {
	pages := c.Pages()
	defer pages.Close()
	ph.dict = nil // a chunk's dictionary is its own
	salt, null := columnSalt(j), nullHash(j)
	off := 0
	for {
		if cp.at(off) {
			pg, last, err := cp.skip()
			if err != nil {
				return off, fmt.Errorf("column %d: %w", j, err)
			}
			if off+pg.n > n {
				return off, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
			}
			// Its values' terms come with the proof (see reuseProof).
			rows := h.rows[off : off+pg.n]
			for i := range rows {
				rows[i] = fold(rows[i], 0)
			}
			off += pg.n
			if last {
				return off, nil
			}
			if err := pages.SeekToRow(int64(off)); err != nil {
				return off, err
			}
			continue
		}
		p, err := pages.ReadPage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cp != nil && len(cp.pages) > 0 {
					return off, fmt.Errorf("%w: column %d ends at row %d, before the reused page written at row %d", ErrVerify, j, off, cp.pages[0].row)
				}
				return off, nil
			}
			return off, err
		}
		if cp.crosses(off, int(p.NumValues())) {
			parquet.Release(p)
			return off, fmt.Errorf("%w: column %d: a page at row %d runs into the reused page written at row %d", ErrVerify, j, off, cp.pages[0].row)
		}
		m, err := ph.mixPage(h, j, off, n, p, hv, maxDef, salt, null)
		parquet.Release(p)
		if err != nil {
			return off, err
		}
		off += m
	}
}

func (ph *pageHashes) mixPage(h *rowHashes, j, off, n int, p parquet.Page, hv valueHasher, maxDef byte, salt, null uint64) (int, error) {
	nv := int(p.NumValues())
	if off+nv > n {
		return 0, fmt.Errorf("%w: column %d holds more values than rows", ErrVerify, j)
	}
	defs := p.DefinitionLevels()
	if len(p.RepetitionLevels()) != 0 || (maxDef > 0 && len(defs) != nv) || (maxDef == 0 && len(defs) != 0) {
		return 0, fmt.Errorf("%w: column %d: a page of %d values has %d definition and %d repetition levels", ErrVerify, j, nv, len(defs), len(p.RepetitionLevels()))
	}
	// vh holds the salted hashes (x of rowHashes.mix) of the page's
	// non-null values; a dictionary's entries are hashed and salted once.
	data := p.Data()
	var vh []uint64
	if d := p.Dictionary(); d != nil {
		if d != ph.dict {
			ph.dictHash = saltHashes(hashValues(ph.dictHash[:0], parquet.Kind(hv), d.Page().Data(), d.Len()), salt)
			ph.dict = d
		}
		idx := data.Int32()
		vh = ph.vh[:0]
		for _, i := range idx {
			if uint(i) >= uint(len(ph.dictHash)) {
				return 0, fmt.Errorf("%w: column %d: dictionary index %d of %d entries", ErrVerify, j, i, len(ph.dictHash))
			}
			vh = append(vh, ph.dictHash[i])
		}
	} else {
		vh = saltHashes(hashValues(ph.vh[:0], parquet.Kind(hv), data, nv-int(p.NumNulls())), salt)
	}
	ph.vh = vh
	rows := h.rows[off : off+nv]
	k := 0
	if maxDef == 0 {
		if len(vh) != nv {
			return 0, fmt.Errorf("%w: column %d: a page of %d values holds %d", ErrVerify, j, nv, len(vh))
		}
		for i, x := range vh[:len(rows)] {
			rows[i] = fold(rows[i], x)
		}
		return nv, nil
	}
	defs = defs[:len(rows)]
	for i := range rows {
		x := null
		if defs[i] == maxDef {
			if k >= len(vh) {
				return 0, fmt.Errorf("%w: column %d: a page's levels define more values than it holds", ErrVerify, j)
			}
			x = vh[k]
			k++
		}
		rows[i] = fold(rows[i], x)
	}
	if k != len(vh) {
		return 0, fmt.Errorf("%w: column %d: a page holds %d values, its levels define %d", ErrVerify, j, len(vh), k)
	}
	return nv, nil
}

// saltHashes turns value hashes into column salt's: mix64(h ^ salt).
func saltHashes(hs []uint64, salt uint64) []uint64 {
	for i, h := range hs {
		hs[i] = mix64(h ^ salt)
	}
	return hs
}

// bit is the i-th of a boolean page's packed bits: eight to a byte, the
// first in the lowest.
func bit(bits []byte, i int) bool { return bits[i>>3]>>(i&7)&1 != 0 }

// hashValues appends to dst the hash (valueHasher.hash) of each value of
// a page's typed values of physical kind k, of which there are n (read for
// booleans alone, whose data is packed bits). A boolean page's bits are
// read from the first: a page read from a file starts at bit 0, which
// TestBooleanPagesStartAtBitZero holds parquet-go to.
func hashValues(dst []uint64, k parquet.Kind, data encoding.Values, n int) []uint64 {
	switch k {
	case parquet.Boolean:
		// The last byte's padding is not a value.
		bits := data.Boolean()
		for i := range min(n, len(bits)*8) {
			dst = append(dst, hashBool(bit(bits, i)))
		}
	case parquet.Int32:
		for _, v := range data.Int32() {
			dst = append(dst, uint64(int64(v)))
		}
	case parquet.Int64:
		for _, v := range data.Int64() {
			dst = append(dst, uint64(v))
		}
	case parquet.Float:
		for _, v := range data.Float() {
			dst = append(dst, uint64(math.Float32bits(v)))
		}
	case parquet.Double:
		for _, v := range data.Double() {
			dst = append(dst, math.Float64bits(v))
		}
	case parquet.Int96:
		for _, v := range data.Int96() {
			dst = append(dst, hashInt96(v))
		}
	case parquet.ByteArray:
		b, offsets := data.ByteArray()
		for i := 0; i+1 < len(offsets); i++ {
			dst = append(dst, maphash.Bytes(hashSeed, b[offsets[i]:offsets[i+1]]))
		}
	case parquet.FixedLenByteArray:
		b, size := data.FixedLenByteArray()
		for i := 0; size > 0 && i+size <= len(b); i += size {
			dst = append(dst, maphash.Bytes(hashSeed, b[i:i+size]))
		}
	default:
		panic(fmt.Sprintf("hashValues: kind %s", k))
	}
	return dst
}
