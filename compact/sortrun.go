package compact

import (
	"bufio"
	"bytes"
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

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// sortFanIn is the most runs merged at once: each open run holds a read
// buffer of runReadBuffer bytes. More runs than that are merged in passes,
// each merging sortFanIn runs into one, until few enough are left. A
// variable so that a test can make the passes happen with few runs.
var sortFanIn = 64

// runReadBuffer is the read buffer of one run being merged.
const runReadBuffer = 64 << 10

// sortRow is one row of the sort, its values in the table's column order,
// its key (sortKeyFunc, zorderKeyFunc) and the key's first 8 bytes as a
// number, which settle most comparisons without reading the key.
type sortRow struct {
	row parquet.Row
	key []byte
	pre uint64
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

// keyArenaSize is the size of the blocks that keys are carved from, so
// that a row's key is not an allocation of its own.
const keyArenaSize = 64 << 10

// sorter is an external merge sort of a rewrite's rows: they are buffered
// up to limit bytes (as the Go heap holds them, estimated), then sorted
// and spilled as a run to a file of dir; finish merges the runs.
type sorter struct {
	ctx   context.Context
	kinds []parquet.Kind // the physical type of each column
	keyOf func(dst []byte, row parquet.Row) []byte
	limit int64
	arena []byte // the block keys are appended to

	rows  []sortRow
	bytes int64
	dir   string   // made at the first spill
	runs  []string // sorted runs spilled, in dir
	made  int      // runs made, to name the next one
	// spilled counts the runs written, merge passes' included.
	spilled int
	buf     []byte
	// lo and hi are the lowest and highest key added (z-order).
	lo, hi []byte
}

// newSorter returns a sorter of rows of the given column types that
// spills when it holds limit bytes.
func newSorter(ctx context.Context, kinds []parquet.Kind, keyOf func(dst []byte, row parquet.Row) []byte, limit int64) *sorter {
	return &sorter{ctx: ctx, kinds: kinds, keyOf: keyOf, limit: limit}
}

// sortRowOf is row with its key.
func (s *sorter) sortRowOf(row parquet.Row) sortRow {
	if cap(s.arena)-len(s.arena) < 512 {
		s.arena = make([]byte, 0, keyArenaSize)
	}
	start := len(s.arena)
	s.arena = s.keyOf(s.arena, row)
	key := s.arena[start:len(s.arena):len(s.arena)]
	var b [8]byte
	copy(b[:], key)
	return sortRow{row: row, key: key, pre: binary.BigEndian.Uint64(b[:])}
}

// rowHeapBytes estimates the heap a buffered row takes: its sortRow, its
// values and their bytes, its key.
func rowHeapBytes(r *sortRow) int64 {
	n := int64(56 + 24*len(r.row) + len(r.key))
	for i := range r.row {
		if v := &r.row[i]; !v.IsNull() && (v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray) {
			n += int64(len(v.ByteArray()))
		}
	}
	return n
}

// add buffers row, which the sorter keeps (its values must not alias a
// buffer that is reused), and spills the buffer when it is full.
func (s *sorter) add(row parquet.Row) error {
	r := s.sortRowOf(row)
	if s.lo == nil || bytes.Compare(r.key, s.lo) < 0 {
		s.lo = r.key
	}
	if s.hi == nil || bytes.Compare(r.key, s.hi) > 0 {
		s.hi = r.key
	}
	s.rows = append(s.rows, r)
	s.bytes += rowHeapBytes(&r)
	if s.bytes >= s.limit {
		return s.spill()
	}
	return nil
}

// spill sorts the buffered rows and writes them as a run.
func (s *sorter) spill() error {
	if len(s.rows) == 0 {
		return nil
	}
	slices.SortFunc(s.rows, func(a, b sortRow) int { return compareRows(&a, &b) })
	rows := s.rows
	err := s.writeRun(func(emit func(*sortRow) error) error {
		for i := range rows {
			if err := emit(&rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	clear(s.rows)
	s.rows, s.bytes = s.rows[:0], 0
	return err
}

// writeRun writes the rows that fill emits, in order, as a new run.
func (s *sorter) writeRun(fill func(emit func(*sortRow) error) error) (err error) {
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
	n := 0
	err = fill(func(r *sortRow) error {
		if n++; n%4096 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		s.buf = appendRow(s.buf[:0], r.row, s.kinds)
		_, err := w.Write(s.buf)
		return err
	})
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
	slices.SortFunc(s.rows, func(a, b sortRow) int { return compareRows(&a, &b) })
	for len(s.runs) > sortFanIn {
		batch := slices.Clone(s.runs[:sortFanIn])
		s.runs = slices.Clone(s.runs[sortFanIn:])
		if err := s.writeRun(func(e func(*sortRow) error) error { return s.merge(batch, nil, e) }); err != nil {
			return err
		}
		for _, name := range batch {
			_ = os.Remove(name)
		}
	}
	runs, mem := s.runs, s.rows
	s.runs = nil
	err := s.merge(runs, mem, emit)
	clear(s.rows)
	s.rows, s.bytes = s.rows[:0], 0
	return err
}

// close removes the spill folder and whatever is in it.
func (s *sorter) close() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
		s.dir = ""
	}
	s.rows = nil
}

// cursor is the next row of one sorted source of a merge.
type cursor struct {
	row sortRow
	mem []sortRow // an in-memory source: the rows after row
	r   *bufio.Reader
	f   *os.File
	// vals and bytes are blocks that the rows read are carved from.
	vals  []parquet.Value
	bytes []byte
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

// merge emits the rows of the runs named and of mem, sorted, in order.
func (s *sorter) merge(runs []string, mem []sortRow, emit func(*sortRow) error) (err error) {
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
		c := &cursor{r: bufio.NewReaderSize(f, runReadBuffer), f: f}
		if ok, err := s.advance(c); err != nil {
			return err
		} else if ok {
			h.cs = append(h.cs, c)
		}
	}
	if len(mem) > 0 {
		h.cs = append(h.cs, &cursor{row: mem[0], mem: mem[1:]})
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
	if c.r == nil {
		if len(c.mem) == 0 {
			c.row = sortRow{}
			return false, nil
		}
		c.row, c.mem[0] = c.mem[0], sortRow{}
		c.mem = c.mem[1:]
		return true, nil
	}
	row, err := c.readRow(s.kinds)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sort: read run %s: %w", filepath.Base(c.f.Name()), err)
	}
	c.row = s.sortRowOf(row)
	return true, nil
}

// A run is rows one after the other, each its values in column order:
// a byte of the definition level shifted left once, its low bit set for a
// NULL; then, but for a NULL, the value: little-endian fixed-width
// numbers, a byte for a boolean, a byte array's length as a uvarint and
// its bytes.

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

// readRow reads one row that appendRow wrote; io.EOF at the end of the
// run, before a row.
func (c *cursor) readRow(kinds []parquet.Kind) (parquet.Row, error) {
	r := c.r
	if len(c.vals) < len(kinds) {
		c.vals = make([]parquet.Value, 256*len(kinds))
	}
	row := parquet.Row(c.vals[:len(kinds):len(kinds)])
	c.vals = c.vals[len(kinds):]
	var fixed [12]byte
	for j, k := range kinds {
		flag, err := r.ReadByte()
		if err != nil {
			if j > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		def := int(flag >> 1)
		if flag&1 != 0 {
			row[j] = parquet.NullValue().Level(0, def, j)
			continue
		}
		var v parquet.Value
		switch k {
		case parquet.Boolean:
			b, err := r.ReadByte()
			if err != nil {
				return nil, noEOF(err)
			}
			v = parquet.BooleanValue(b != 0)
		case parquet.Int32, parquet.Float:
			if _, err := io.ReadFull(r, fixed[:4]); err != nil {
				return nil, noEOF(err)
			}
			x := binary.LittleEndian.Uint32(fixed[:4])
			if v = parquet.Int32Value(int32(x)); k == parquet.Float {
				v = parquet.FloatValue(math.Float32frombits(x))
			}
		case parquet.Int64, parquet.Double:
			if _, err := io.ReadFull(r, fixed[:8]); err != nil {
				return nil, noEOF(err)
			}
			x := binary.LittleEndian.Uint64(fixed[:8])
			if v = parquet.Int64Value(int64(x)); k == parquet.Double {
				v = parquet.DoubleValue(math.Float64frombits(x))
			}
		case parquet.Int96:
			if _, err := io.ReadFull(r, fixed[:12]); err != nil {
				return nil, noEOF(err)
			}
			v = parquet.Int96Value(deprecated.Int96{binary.LittleEndian.Uint32(fixed[0:]), binary.LittleEndian.Uint32(fixed[4:]), binary.LittleEndian.Uint32(fixed[8:])})
		default:
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return nil, noEOF(err)
			}
			if n > 1<<31 {
				return nil, fmt.Errorf("a value of %d bytes: the run is corrupt", n)
			}
			if uint64(cap(c.bytes)-len(c.bytes)) < n {
				c.bytes = make([]byte, 0, max(n, keyArenaSize))
			}
			start := len(c.bytes)
			c.bytes = c.bytes[:start+int(n)]
			b := c.bytes[start : start+int(n) : start+int(n)]
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, noEOF(err)
			}
			if v = parquet.ByteArrayValue(b); k == parquet.FixedLenByteArray {
				v = parquet.FixedLenByteArrayValue(b)
			}
		}
		row[j] = v.Level(0, def, j)
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
