package compact

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// A reused page (see reusingCodec) is stored as its input stored it, byte
// for byte, and the rewrite has decoded and hashed its values already, on
// the inputs' side. Reading it back would decompress and hash the same
// bytes again, to the same hashes: with most pages reused, that was a large
// share of a rewrite's CPU. So the read-back proves a reused page by its
// bytes instead of its values:
//
//   - when the page is written, the rewrite notes where it is (its column
//     and first row), its compressed bytes' length and hash, and the share
//     its values have in the hashes of its rows (reuseProof.add);
//   - the read-back finds the page through the output's offset index,
//     checks its header (a data page of as many values) and that its bytes
//     hash as noted, and seeks past it without decompressing it
//     (chunkProof.skip); its rows get the noted share instead.
//
// The chain holds at every link: the bytes on disk are the input's (hash);
// the input's bytes decompress to exactly what parquet-go made of the
// values written (compared byte for byte before the page was reused); and
// those values are the ones hashed on the inputs' side. Every other page,
// and every page of a file that reused none, is read back and hashed.
//
// The share is exact because fold is linear: a row's hash is the sum over
// its columns j of x_j * golden^(J-1-j) (J columns, x_j the salted hash of
// column j's value), so the read-back folds 0 for a proven page's values
// and adds the noted sum of their terms at the end of the row group.

// reusedPage is a page of the output file being written that was stored
// as its input stored it.
type reusedPage struct {
	col  int
	row  int64  // its first row: in the file while writing, in its row group when read back
	n    int    // its rows (a proven page has no NULLs: one value a row)
	size int    // its compressed bytes
	sum  uint64 // their hash (maphash, hashSeed)
}

// reuseProof is what the read-back of one output file needs to prove its
// reused pages (see above).
//
// The shares (per row of the file, the sum of its proven values' terms)
// are 8 bytes a row of the file, which may be millions: the blocks of
// rows every input row group so far has finished go to a temporary file
// (settle), so that memory holds about one block and the rows of the
// input row group being copied.
type reuseProof struct {
	pages []reusedPage
	// blocks hold the shares of rows from base on, shareBlock rows a
	// block; those of the rows before spilled are in spill, in row order
	// (a block of rows without shares may be a hole); the rows from
	// spilled to base have none.
	blocks  [][]uint64
	base    int64
	spilled int64
	spill   *os.File
	spare   [][]uint64 // blocks to use again
	// read is the block of spill that addShares read last (readAt its
	// first row; -1: none).
	read   []uint64
	readAt int64
	buf    []byte
	// coef[j] is golden^(J-1-j), column j's factor in a row's hash.
	coef []uint64
}

func newReuseProof(columns int) *reuseProof {
	p := &reuseProof{coef: make([]uint64, columns), readAt: -1}
	c := uint64(1)
	for j := columns - 1; j >= 0; j-- {
		p.coef[j] = c
		c *= golden
	}
	return p
}

// shareBlock is the number of rows of a block of reuseProof's shares.
var shareBlock int64 = 1 << 16

// reset forgets the file's pages and shares, keeping the memory.
func (p *reuseProof) reset() {
	p.pages = p.pages[:0]
	for _, b := range p.blocks {
		clear(b)
		p.spare = append(p.spare, b)
	}
	p.blocks, p.base, p.spilled, p.readAt = p.blocks[:0], 0, 0, -1
	if p.spill != nil {
		_ = p.spill.Truncate(0)
	}
}

// close removes the temporary file, if any.
func (p *reuseProof) close() {
	if p.spill != nil {
		name := p.spill.Name()
		_ = p.spill.Close()
		_ = os.Remove(name)
		p.spill = nil
	}
}

// shares returns the block holding row's share (row >= p.base), adding
// blocks up to it.
func (p *reuseProof) shares(row int64) []uint64 {
	k := int((row - p.base) / shareBlock)
	for len(p.blocks) <= k {
		var b []uint64
		if n := len(p.spare); n > 0 {
			b, p.spare = p.spare[n-1], p.spare[:n-1]
		} else {
			b = make([]uint64, shareBlock)
		}
		p.blocks = append(p.blocks, b)
	}
	return p.blocks[k]
}

// add notes a reused page of column col whose first row is the file's row
// row, whose values' salted hashes (the x of rowHashes.mix) are vh, one a
// row, and whose compressed bytes are body. Its rows are past the last
// settle's.
func (p *reuseProof) add(col int, row int64, vh []uint64, body []byte) {
	p.pages = append(p.pages, reusedPage{col: col, row: row, n: len(vh), size: len(body), sum: maphash.Bytes(hashSeed, body)})
	c := p.coef[col]
	for len(vh) > 0 {
		i := int((row - p.base) % shareBlock)
		dst := p.shares(row)[i:min(int(shareBlock), i+len(vh))]
		for k, x := range vh[:len(dst)] {
			dst[k] += x * c
		}
		vh, row = vh[len(dst):], row+int64(len(dst))
	}
}

// settle says that the shares of the rows before done are final: the
// blocks wholly before it go to the temporary file.
func (p *reuseProof) settle(done int64) error {
	if len(p.blocks) == 0 {
		// No shares yet: none for the rows before done either.
		p.base = max(p.base, done-done%shareBlock)
		return nil
	}
	for len(p.blocks) > 0 && p.base+shareBlock <= done {
		if p.spill == nil {
			f, err := os.CreateTemp("", "sluice-shares-*")
			if err != nil {
				return fmt.Errorf("reused pages' shares: %w", err)
			}
			p.spill = f
		}
		b := p.blocks[0]
		p.buf = p.buf[:0]
		for _, x := range b {
			p.buf = binary.LittleEndian.AppendUint64(p.buf, x)
		}
		if _, err := p.spill.WriteAt(p.buf, p.base*8); err != nil {
			return fmt.Errorf("reused pages' shares: %w", err)
		}
		clear(b)
		p.spare = append(p.spare, b)
		p.blocks = p.blocks[1:]
		p.base += shareBlock
		p.spilled = p.base
	}
	return nil
}

// addShares adds to rows, the hashes of the file's rows from start on,
// their proven values' terms.
func (p *reuseProof) addShares(rows []uint64, start int64) error {
	for len(rows) > 0 {
		first := start - start%shareBlock
		i := int(start - first)
		n := min(int(shareBlock)-i, len(rows))
		var block []uint64 // nil: these rows have no shares
		switch {
		case start >= p.base:
			k := int((start - p.base) / shareBlock)
			if k >= len(p.blocks) {
				return nil // no proven page from here on
			}
			block = p.blocks[k]
		case first < p.spilled:
			if p.readAt != first {
				if err := p.readBlock(first); err != nil {
					return err
				}
			}
			block = p.read
		}
		if block != nil {
			for t, x := range block[i : i+n] {
				rows[t] += x
			}
		}
		rows, start = rows[n:], start+int64(n)
	}
	return nil
}

// readBlock reads the spilled block of rows from first on into p.read.
func (p *reuseProof) readBlock(first int64) error {
	p.buf = slices.Grow(p.buf[:0], int(shareBlock)*8)[:shareBlock*8]
	if _, err := p.spill.ReadAt(p.buf, first*8); err != nil {
		return fmt.Errorf("reading reused pages' shares: %w", err)
	}
	if len(p.read) != int(shareBlock) {
		p.read = make([]uint64, shareBlock)
	}
	for i := range p.read {
		p.read[i] = binary.LittleEndian.Uint64(p.buf[i*8:])
	}
	p.readAt = first
	return nil
}

// fileProof hands out the proofs of a file's column chunks as the
// read-back reaches them (fileChecksum). A nil *fileProof proves nothing.
type fileProof struct {
	proof   *reuseProof
	byCol   [][]reusedPage // each column's pages not handed out yet, in row order
	offsets []format.OffsetIndex
	r       io.ReaderAt
	buf     []byte
}

// proves reports whether p holds reused pages to prove: the file must
// then be opened with its page index (forFile).
func (p *reuseProof) proves() bool { return p != nil && len(p.pages) > 0 }

// forFile starts the proof of f, opened with its page index and read
// through r, whose rows have the given number of columns; nil, which
// proves nothing, when p has no page to prove.
func (p *reuseProof) forFile(f *parquet.File, columns int, r io.ReaderAt) *fileProof {
	if !p.proves() {
		return nil
	}
	fp := &fileProof{proof: p, byCol: make([][]reusedPage, columns), offsets: f.OffsetIndexes(), r: r}
	for _, pg := range p.pages {
		if pg.col < columns {
			fp.byCol[pg.col] = append(fp.byCol[pg.col], pg)
		}
	}
	for _, pages := range fp.byCol {
		slices.SortFunc(pages, func(a, b reusedPage) int { return cmp.Compare(a.row, b.row) })
	}
	return fp
}

// chunk returns the proof of column j's chunk in row group g, of n rows
// from the file's row start on; nil when it has no proven page.
func (fp *fileProof) chunk(g, j int, start int64, n int) (*chunkProof, error) {
	if fp == nil {
		return nil, nil
	}
	pages := fp.byCol[j]
	k := 0
	for k < len(pages) && pages[k].row < start+int64(n) {
		k++
	}
	if k == 0 {
		return nil, nil
	}
	i := g*len(fp.byCol) + j
	if i >= len(fp.offsets) {
		return nil, fmt.Errorf("%w: column %d has reused pages but no offset index", ErrVerify, j)
	}
	cp := &chunkProof{locs: fp.offsets[i].PageLocations, r: fp.r, buf: &fp.buf}
	for _, pg := range pages[:k] {
		pg.row -= start
		cp.pages = append(cp.pages, pg)
	}
	fp.byCol[j] = pages[k:]
	return cp, nil
}

// addShares adds to rows, the hashes of the row group whose first row is
// the file's row start, their proven values' terms (see reuseProof).
func (fp *fileProof) addShares(rows []uint64, start int64) error {
	if fp == nil {
		return nil
	}
	return fp.proof.addShares(rows, start)
}

// done checks, once the file's rows were all read, that no proven page
// was left over.
func (fp *fileProof) done(rows int64) error {
	if fp == nil {
		return nil
	}
	for j, pages := range fp.byCol {
		if len(pages) > 0 {
			return fmt.Errorf("%w: column %d: a reused page at row %d is past the file's %d rows", ErrVerify, j, pages[0].row, rows)
		}
	}
	return nil
}

// chunkProof proves the reused pages of one column chunk of the file read
// back: pages (rows counted in the row group) and the chunk's page
// locations from the offset index, read through r.
type chunkProof struct {
	pages []reusedPage
	locs  []format.PageLocation
	r     io.ReaderAt
	buf   *[]byte // scratch for a page's bytes
}

// at reports whether the next proven page starts at row off of the chunk.
func (cp *chunkProof) at(off int) bool {
	return cp != nil && len(cp.pages) > 0 && cp.pages[0].row == int64(off)
}

// crosses reports whether a page read at row off, of n rows, reaches into
// the next proven page: the pages are not where they were written.
func (cp *chunkProof) crosses(off, n int) bool {
	return cp != nil && len(cp.pages) > 0 && int64(off+n) > cp.pages[0].row
}

// skip proves the next page (see at) by its bytes, and reports whether it
// is the chunk's last.
func (cp *chunkProof) skip() (reusedPage, bool, error) {
	pg := cp.pages[0]
	cp.pages = cp.pages[1:]
	i := sort.Search(len(cp.locs), func(i int) bool { return cp.locs[i].FirstRowIndex >= pg.row })
	if i == len(cp.locs) || cp.locs[i].FirstRowIndex != pg.row {
		return pg, false, fmt.Errorf("%w: no page starts at row %d, where a reused page was written", ErrVerify, pg.row)
	}
	last := i == len(cp.locs)-1
	if !last && cp.locs[i+1].FirstRowIndex != pg.row+int64(pg.n) {
		return pg, false, fmt.Errorf("%w: the reused page at row %d holds %d rows, not %d", ErrVerify, pg.row, cp.locs[i+1].FirstRowIndex-pg.row, pg.n)
	}
	loc := cp.locs[i]
	if loc.CompressedPageSize <= 0 || int(loc.CompressedPageSize) > pg.size+maxPageHeader {
		return pg, false, fmt.Errorf("%w: the reused page at row %d takes %d bytes, its body %d", ErrVerify, pg.row, loc.CompressedPageSize, pg.size)
	}
	b := slices.Grow((*cp.buf)[:0], int(loc.CompressedPageSize))[:loc.CompressedPageSize]
	*cp.buf = b
	if _, err := cp.r.ReadAt(b, loc.Offset); err != nil {
		return pg, false, fmt.Errorf("reading the reused page at row %d: %w", pg.row, err)
	}
	h, hn, err := readPageHeader(b)
	if err != nil {
		return pg, false, fmt.Errorf("%w: the reused page at row %d: %v", ErrVerify, pg.row, err)
	}
	body := b[hn:]
	if h.Type != format.DataPage || !h.DataPageHeader.Valid || int(h.DataPageHeader.V.NumValues) != pg.n ||
		int(h.CompressedPageSize) != pg.size || len(body) != pg.size || maphash.Bytes(hashSeed, body) != pg.sum {
		return pg, false, fmt.Errorf("%w: the page at row %d is not the reused page written there", ErrVerify, pg.row)
	}
	return pg, last, nil
}

// maxPageHeader bounds a data page header's bytes (its thrift encoding,
// without statistics, which sluice does not write in page headers).
const maxPageHeader = 1 << 10
