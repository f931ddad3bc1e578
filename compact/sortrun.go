package compact

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// sortFanIn is the most runs merged at once: each open run holds a read
// buffer of runReadBuffer bytes. More runs than that are merged in passes,
// each merging sortFanIn runs into one, until few enough are left. A
// variable so that a test can make the passes happen with few runs.
var sortFanIn = 64

// sortBufferCap is the most a sorter buffers before it spills, whatever
// its share of the memory budget. A variable so that a test can make a
// small sort spill.
var sortBufferCap int64 = math.MaxInt64

// runReadBuffer is the read buffer of one run being merged.
const runReadBuffer = 64 << 10

// sortRow is one row of the sort, its values in the table's column order
// (none in a merge pass), its key (sortKeyFunc, zorderKeyFunc) and the
// key's first 8 bytes as a number, which settle most comparisons without
// reading the key.
type sortRow struct {
	row parquet.Row
	key []byte
	pre uint64
	// enc is the row's encoding (appendRow), which a merge pass writes
	// as it is.
	enc []byte
}

// compareRows orders rows by their keys.
func compareRows(a, b *sortRow) int {
	if a.pre != b.pre {
		if a.pre < b.pre {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.key, b.key)
}

// keyPrefix is the first 8 bytes of key as a big-endian number.
func keyPrefix(key []byte) uint64 {
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// keyArenaSize is the size of the blocks that the values of rows read
// back from a run are carved from.
const keyArenaSize = 64 << 10

// recordBlockSize is the size of the blocks the sorter's buffered rows are
// encoded into.
const recordBlockSize = 1 << 20

// A buffered row is kept encoded, not as a parquet.Row: a record of its
// key's length (uvarint), its key, its encoding's length (uvarint) and
// its encoding as a run holds it (appendRow), in a block of bytes. A
// parquet.Row is 24 bytes a value plus its byte arrays, each a pointer
// the garbage collector follows; a record is about the size of the
// values, the blocks hold no pointer, and a spill writes the records'
// encodings as they are. The rows are sorted as sortEntry values, which
// hold no pointer either.

// sortEntry is one buffered row: its key's first 16 bytes as two
// numbers (zero-padded), which settle nearly every comparison, its key's
// length, and where its record is.
type sortEntry struct {
	k0, k1   uint64
	blk, off uint32
	klen     uint32
}

// sortEntryBytes is what a sortEntry takes in the sorter's slice.
const sortEntryBytes = 32

// sorter is an external merge sort of a rewrite's rows: they are buffered,
// encoded, up to limit bytes, then sorted and spilled as a run to a file
// of dir; finish merges the runs.
type sorter struct {
	ctx   context.Context
	kinds []parquet.Kind // the physical type of each column
	keyOf func(dst []byte, row parquet.Row) []byte
	limit int64

	entries []sortEntry
	blocks  [][]byte // the records of entries; kept for reuse after a spill
	used    int      // blocks[:used] hold records
	bytes   int64
	dir     string   // made at the first spill
	runs    []string // sorted runs spilled, in dir
	made    int      // runs made, to name the next one
	// spilled counts the runs written, merge passes' included.
	spilled int
	keyBuf  []byte
	rowBuf  []byte
	// lo and hi are the lowest and highest key added (z-order).
	lo, hi []byte
}

// newSorter returns a sorter of rows of the given column types that
// spills when it holds limit bytes.
func newSorter(ctx context.Context, kinds []parquet.Kind, keyOf func(dst []byte, row parquet.Row) []byte, limit int64) *sorter {
	// Room for the entries of rows of 96 bytes encoded, so that the
	// slice seldom grows.
	n := min(limit/(96+sortEntryBytes), 1<<20)
	return &sorter{ctx: ctx, kinds: kinds, keyOf: keyOf, limit: limit, entries: make([]sortEntry, 0, n)}
}

// record is the key and the row encoding of entry e.
func (s *sorter) record(e sortEntry) (key, row []byte) {
	key, row, _ = s.rawRecord(e)
	return key, row
}

// rawRecord is record, and the whole record as a run holds it: its
// key's length, key, row's length and row.
func (s *sorter) rawRecord(e sortEntry) (key, row, raw []byte) {
	b := s.blocks[e.blk][e.off:]
	n, w := binary.Uvarint(b)
	key, rest := b[w:w+int(n)], b[w+int(n):]
	n2, w2 := binary.Uvarint(rest)
	end := w + int(n) + w2 + int(n2)
	return key, b[w+int(n)+w2 : end], b[:end:end]
}

// compareEntries orders entries by their keys, as bytes.Compare orders
// the keys: by their first 16 bytes, then, where those are equal and one
// key is no longer, by length (the shorter, zero-padded, is a prefix of
// the other), and else by the rest, read from the records.
func (s *sorter) compareEntries(a, b sortEntry) int {
	if a.k0 != b.k0 {
		return cmp.Compare(a.k0, b.k0)
	}
	if a.k1 != b.k1 {
		return cmp.Compare(a.k1, b.k1)
	}
	if a.klen <= 16 || b.klen <= 16 {
		return cmp.Compare(a.klen, b.klen)
	}
	ka, _ := s.record(a)
	kb, _ := s.record(b)
	return bytes.Compare(ka[16:], kb[16:])
}

// add buffers row, encoded (row's values may alias a buffer that is
// reused once add returns), and spills the buffer when it is full.
func (s *sorter) add(row parquet.Row) error {
	s.keyBuf = s.keyOf(s.keyBuf[:0], row)
	key := s.keyBuf
	if s.lo == nil || bytes.Compare(key, s.lo) < 0 {
		s.lo = append(s.lo[:0], key...)
	}
	if s.hi == nil || bytes.Compare(key, s.hi) > 0 {
		s.hi = append(s.hi[:0], key...)
	}
	s.rowBuf = appendRow(s.rowBuf[:0], row, s.kinds)
	n := 2*binary.MaxVarintLen64 + len(key) + len(s.rowBuf)
	if s.used == 0 || cap(s.blocks[s.used-1])-len(s.blocks[s.used-1]) < n {
		s.nextBlock(n)
	}
	blk := s.used - 1
	off := len(s.blocks[blk])
	b := appendRecord(s.blocks[blk], key, s.rowBuf)
	s.blocks[blk] = b
	var k16 [16]byte
	copy(k16[:], key)
	s.entries = append(s.entries, sortEntry{
		k0: binary.BigEndian.Uint64(k16[:8]), k1: binary.BigEndian.Uint64(k16[8:]),
		blk: uint32(blk), off: uint32(off), klen: uint32(len(key)),
	})
	s.bytes += int64(len(b)-off) + sortEntryBytes
	if s.bytes >= s.limit {
		return s.spill()
	}
	return nil
}

// recordBlocks are record blocks of recordBlockSize that sorters closed,
// for the next partition's sorter: a compaction sorts its partitions one
// after another, and each would otherwise make its buffer anew while the
// last one's waits for the collector.
var recordBlocks = sync.Pool{New: func() any { b := make([]byte, 0, recordBlockSize); return &b }}

// nextBlock makes the next block, one of at least n bytes, the one
// records are appended to: a block kept from before a spill, or another.
func (s *sorter) nextBlock(n int) {
	if s.used < len(s.blocks) && cap(s.blocks[s.used]) >= n {
		s.blocks[s.used] = s.blocks[s.used][:0]
	} else {
		var b []byte
		if n <= recordBlockSize {
			b = (*recordBlocks.Get().(*[]byte))[:0]
		} else {
			b = make([]byte, 0, n)
		}
		if s.used < len(s.blocks) {
			s.blocks[s.used] = b
		} else {
			s.blocks = append(s.blocks, b)
		}
	}
	s.used++
}

// sortEntries sorts the buffered rows by their keys.
func (s *sorter) sortEntries() {
	slices.SortFunc(s.entries, s.compareEntries)
}

// reset empties the buffer, keeping its blocks for the rows to come.
func (s *sorter) reset() {
	s.entries, s.used, s.bytes = s.entries[:0], 0, 0
}

// spill sorts the buffered rows and writes them as a run.
func (s *sorter) spill() error {
	if len(s.entries) == 0 {
		return nil
	}
	s.sortEntries()
	err := s.writeRun(func(w *bufio.Writer) error {
		for i, e := range s.entries {
			if i%4096 == 4095 {
				if err := s.ctx.Err(); err != nil {
					return err
				}
			}
			_, _, raw := s.rawRecord(e)
			if _, err := w.Write(raw); err != nil {
				return err
			}
		}
		return nil
	})
	s.reset()
	return err
}

// writeRun writes the rows that fill writes to w, in order, as a new run.
func (s *sorter) writeRun(fill func(w *bufio.Writer) error) (err error) {
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "sluice-sort-*"); err != nil {
			return fmt.Errorf("sort: spill: %w", err)
		}
	}
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", s.made))
	s.made++
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("sort: spill: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("sort: spill: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(name)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return fmt.Errorf("sort: spill: %w", err)
	}
	s.runs = append(s.runs, name)
	s.spilled++
	return nil
}

// finish sorts what is buffered and emits every row added, in order:
// merged with the spilled runs, in passes of at most sortFanIn runs.
func (s *sorter) finish(emit func(*sortRow) error) error {
	s.sortEntries()
	for len(s.runs) > sortFanIn {
		batch := slices.Clone(s.runs[:sortFanIn])
		s.runs = slices.Clone(s.runs[sortFanIn:])
		err := s.writeRun(func(w *bufio.Writer) error {
			return s.merge(batch, false, func(r *sortRow) error {
				s.rowBuf = appendRecord(s.rowBuf[:0], r.key, r.enc)
				_, err := w.Write(s.rowBuf)
				return err
			})
		})
		if err != nil {
			return err
		}
		for _, name := range batch {
			_ = os.Remove(name)
		}
	}
	runs := s.runs
	s.runs = nil
	err := s.merge(runs, true, emit)
	s.reset()
	return err
}

// close removes the spill folder and whatever is in it.
func (s *sorter) close() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
	for _, b := range s.blocks {
		if cap(b) == recordBlockSize {
			b = b[:0]
			recordBlocks.Put(&b)
		}
	}
	s.entries, s.blocks, s.used = nil, nil, 0
}

// cursor is the next row of one sorted source of a merge.
type cursor struct {
	row sortRow
	// mem are the buffered rows after row, for the in-memory source.
	mem []sortEntry
	r   *bufio.Reader
	f   *os.File
	// decode makes the cursor decode each row's values (the last merge,
	// which emits them); a merge pass moves records as they are.
	decode bool
	// ring holds the values of the last sortRowRing rows read, each
	// row's slots taken again sortRowRing rows later.
	ring []parquet.Value
	next int
	// bytes is the block that the records read from a run are copied
	// to; a full one is left to the rows that point into it.
	bytes []byte
}

// sortRowRing is the number of rows whose values a cursor keeps. A row's
// values are overwritten when its cursor reads its sortRowRing-th next
// row, and a cursor reads a row only once the one before has been
// emitted: a row emitted stays valid while sortRowRing-1 more rows are
// emitted, which writeSorted's batches of sortBatch rows need.
const sortRowRing = 2 * sortBatch

// slots is the next row's values, from the ring.
func (c *cursor) slots(cols int) parquet.Row {
	if c.ring == nil {
		c.ring = make([]parquet.Value, sortRowRing*cols)
	}
	row := parquet.Row(c.ring[c.next*cols : (c.next+1)*cols : (c.next+1)*cols])
	c.next = (c.next + 1) % sortRowRing
	return row
}

// mergeHeap orders the cursors by their rows.
type mergeHeap struct {
	cs []*cursor
}

func (h *mergeHeap) Len() int           { return len(h.cs) }
func (h *mergeHeap) Less(i, j int) bool { return compareRows(&h.cs[i].row, &h.cs[j].row) < 0 }
func (h *mergeHeap) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *mergeHeap) Push(x any)         { h.cs = append(h.cs, x.(*cursor)) }
func (h *mergeHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// merge emits the rows of the runs named, sorted, in order. The final
// merge adds the buffered rows and decodes each row's values; a merge
// pass gives emit only the rows' keys and encodings.
func (s *sorter) merge(runs []string, final bool, emit func(*sortRow) error) (err error) {
	h := &mergeHeap{}
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for _, name := range runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("sort: merge: %w", err)
		}
		files = append(files, f)
		c := &cursor{r: bufio.NewReaderSize(f, runReadBuffer), f: f, decode: final}
		if ok, err := s.advance(c); err != nil {
			return err
		} else if ok {
			h.cs = append(h.cs, c)
		}
	}
	if final && len(s.entries) > 0 {
		c := &cursor{mem: s.entries, decode: true}
		if _, err := s.advance(c); err != nil {
			return err
		}
		h.cs = append(h.cs, c)
	}
	heap.Init(h)
	for n := 1; h.Len() > 0; n++ {
		if n%4096 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		c := h.cs[0]
		if err := emit(&c.row); err != nil {
			return err
		}
		ok, err := s.advance(c)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

// advance moves c to its source's next row; false at its end.
func (s *sorter) advance(c *cursor) (bool, error) {
	if c.f == nil {
		if len(c.mem) == 0 {
			c.row = sortRow{}
			return false, nil
		}
		e := c.mem[0]
		c.mem = c.mem[1:]
		key, enc := s.record(e)
		row, err := decodeRow(c.slots(len(s.kinds)), enc, s.kinds)
		if err != nil {
			return false, fmt.Errorf("sort: read a buffered row: %w", err)
		}
		c.row = sortRow{row: row, key: key, pre: e.k0, enc: enc}
		return true, nil
	}
	key, enc, err := c.readRecord()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	var row parquet.Row
	if err == nil && c.decode {
		row, err = decodeRow(c.slots(len(s.kinds)), enc, s.kinds)
	}
	if err != nil {
		return false, fmt.Errorf("sort: read run %s: %w", filepath.Base(c.f.Name()), err)
	}
	c.row = sortRow{row: row, key: key, pre: keyPrefix(key), enc: enc}
	return true, nil
}

// A run is records one after the other, each as the sorter buffers it: a
// key's length (uvarint), the key, a row encoding's length (uvarint) and
// the row's encoding (appendRow).

// appendRecord appends the record of a row's key and encoding to b.
func appendRecord(b, key, enc []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(enc)))
	return append(b, enc...)
}

// readRecord reads the next record of c's run, copied to c's block;
// io.EOF at the end of the run, before a record.
func (c *cursor) readRecord() (key, enc []byte, err error) {
	if key, err = c.readPart(); err != nil {
		return nil, nil, err
	}
	if enc, err = c.readPart(); err != nil {
		return nil, nil, noEOF(err)
	}
	return key, enc, nil
}

// readPart reads a length (uvarint) and as many bytes, copied to c's
// block.
func (c *cursor) readPart() ([]byte, error) {
	n, err := binary.ReadUvarint(c.r)
	if err != nil {
		return nil, err
	}
	if n > 1<<31 {
		return nil, fmt.Errorf("a record part of %d bytes: the run is corrupt", n)
	}
	if uint64(cap(c.bytes)-len(c.bytes)) < n {
		c.bytes = make([]byte, 0, max(n, keyArenaSize))
	}
	start := len(c.bytes)
	c.bytes = c.bytes[:start+int(n)]
	b := c.bytes[start : start+int(n) : start+int(n)]
	if _, err := io.ReadFull(c.r, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

// A row's encoding is its values in column order: a byte of the
// definition level shifted left once, its low bit set for a NULL; then,
// but for a NULL, the value: little-endian fixed-width numbers, a byte
// for a boolean, a byte array's length as a uvarint and its bytes.

// appendRow appends the encoding of row to buf.
func appendRow(buf []byte, row parquet.Row, kinds []parquet.Kind) []byte {
	for j := range row {
		v := &row[j]
		def := byte(v.DefinitionLevel()) << 1
		if v.IsNull() {
			buf = append(buf, def|1)
			continue
		}
		buf = append(buf, def)
		switch kinds[j] {
		case parquet.Boolean:
			b := byte(0)
			if v.Boolean() {
				b = 1
			}
			buf = append(buf, b)
		case parquet.Int32:
			buf = binary.LittleEndian.AppendUint32(buf, uint32(v.Int32()))
		case parquet.Int64:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v.Int64()))
		case parquet.Int96:
			for _, x := range v.Int96() {
				buf = binary.LittleEndian.AppendUint32(buf, x)
			}
		case parquet.Float:
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v.Float()))
		case parquet.Double:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v.Double()))
		default:
			b := v.ByteArray()
			buf = binary.AppendUvarint(buf, uint64(len(b)))
			buf = append(buf, b...)
		}
	}
	return buf
}

// errShortRow is a buffered row's encoding that ends inside a value.
var errShortRow = errors.New("a buffered row ends inside a value")

// decodeRow decodes into row one row that appendRow wrote, the whole of
// enc: its byte arrays point into enc, which must outlive the row.
func decodeRow(row parquet.Row, enc []byte, kinds []parquet.Kind) (parquet.Row, error) {
	b := enc
	for j, k := range kinds {
		if len(b) == 0 {
			return nil, errShortRow
		}
		flag := b[0]
		b = b[1:]
		def := int(flag >> 1)
		if flag&1 != 0 {
			row[j] = parquet.NullValue().Level(0, def, j)
			continue
		}
		var v parquet.Value
		switch k {
		case parquet.Boolean:
			if len(b) < 1 {
				return nil, errShortRow
			}
			v, b = parquet.BooleanValue(b[0] != 0), b[1:]
		case parquet.Int32, parquet.Float:
			if len(b) < 4 {
				return nil, errShortRow
			}
			x := binary.LittleEndian.Uint32(b)
			if v = parquet.Int32Value(int32(x)); k == parquet.Float {
				v = parquet.FloatValue(math.Float32frombits(x))
			}
			b = b[4:]
		case parquet.Int64, parquet.Double:
			if len(b) < 8 {
				return nil, errShortRow
			}
			x := binary.LittleEndian.Uint64(b)
			if v = parquet.Int64Value(int64(x)); k == parquet.Double {
				v = parquet.DoubleValue(math.Float64frombits(x))
			}
			b = b[8:]
		case parquet.Int96:
			if len(b) < 12 {
				return nil, errShortRow
			}
			v = parquet.Int96Value(deprecated.Int96{binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])})
			b = b[12:]
		default:
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return nil, errShortRow
			}
			a := b[w : w+int(n) : w+int(n)]
			if v = parquet.ByteArrayValue(a); k == parquet.FixedLenByteArray {
				v = parquet.FixedLenByteArrayValue(a)
			}
			b = b[w+int(n):]
		}
		row[j] = v.Level(0, def, j)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("a row of %d bytes holds %d more after its values", len(enc), len(b))
	}
	return row, nil
}

// noEOF turns an end of file inside a row into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
