package ingest

import (
	"bytes"
	"context"
	"errors"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/valyala/fastjson"
)

// rawRecord is one text record to decode: its bytes (cut at the size
// limit) and its whole size.
type rawRecord struct {
	b    []byte
	size int
}

// decoded is a decoded record: its row, or why it is quarantined.
type decoded struct {
	row []any
	bad error
}

// jsonBlockBytes is the size of a block of JSON lines: the lines read
// into one buffer are decoded together. Decoding takes most of an
// ingest's CPU, so blocks are decoded on two goroutines at once, while
// records are still handed on one at a time, in order; a block of about a
// thousand records keeps both busy on a small file too.
const jsonBlockBytes = 256 << 10

// decodeJSON checks and decodes one JSON record.
func (d *decoder) decodeJSON(r rawRecord) decoded {
	if bad := d.checkRaw(r.b, r.size); bad != nil {
		return decoded{bad: bad}
	}
	row := d.newRow()
	if bad := d.jsonRow(r.b, row); bad != nil {
		return decoded{bad: bad}
	}
	return decoded{row: row}
}

// jsonInFlight is how many blocks of a JSON lines file are read ahead of
// the one being handed on.
const jsonInFlight = 4

// lineBlock is one block of a JSON lines file on its way: read on the
// reading goroutine, decoded on one of two decoding goroutines, handed on
// by the caller's, in order.
type lineBlock struct {
	buf   []byte // the buffer the block's records were read into, whole
	lines []int64
	recs  []rawRecord
	out   []decoded
	arena *arena // what the block's rows are cut from (see arena)
	err   error  // what ended the reading after these records, if anything
	done  chan struct{}
}

func (b *lineBlock) reset() {
	b.lines, b.recs, b.err = b.lines[:0], b.recs[:0], nil
	b.done = make(chan struct{})
}

// decodeJSONL reads a JSON lines file. Decoding takes most of an
// ingest's CPU, so three goroutines share the work besides the caller's:
// one reads lines into blocks, two decode whichever block comes next
// (each with its own decoder, d and its twin), and the caller hands the
// records on in order. Every goroutine has returned when it returns.
func (d *decoder) decodeJSONL(parent context.Context, r io.Reader, emit emitFunc) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	ordered := make(chan *lineBlock, jsonInFlight)
	work := make(chan *lineBlock, jsonInFlight)
	free := make(chan *lineBlock, jsonInFlight+2)
	g.Go(func() error {
		defer close(ordered)
		defer close(work)
		return d.readJSONL(gctx, r, ordered, work, free)
	})
	for _, dec := range []*decoder{d, d.twin} {
		g.Go(func() error {
			for b := range work {
				b.arena = d.arenas.get()
				dec.enter(b.arena)
				for j, rec := range b.recs {
					b.out[j] = dec.decodeJSON(rec)
				}
				dec.leave(b.arena)
				close(b.done)
			}
			return nil
		})
	}
	err := func() error {
		for b := range ordered {
			// A select with both ready picks either: a block decoded
			// before the cancel must not be handed on after it.
			if err := gctx.Err(); err != nil {
				return err
			}
			select {
			case <-b.done:
			case <-gctx.Done():
				return gctx.Err()
			}
			// The emitted rows are cut from the block's arena: a sink
			// that keeps one holds the arena (see emitting).
			d.emitting = b.arena
			for i, o := range b.out[:len(b.recs)] {
				if e := emit(b.lines[i], b.recs[i].b, o.row, o.bad); e != nil {
					d.emitting = nil
					return e
				}
				b.out[i] = decoded{}
			}
			d.emitting = nil
			b.arena.release()
			b.arena = nil
			if b.err != nil {
				return b.err
			}
			select {
			case free <- b:
			default:
			}
		}
		// The reader stops at a cancel, and the blocks may end before
		// the file: the caller's cancel is an error, never an end.
		return parent.Err()
	}()
	cancel()
	for range ordered { // let the reader see the cancel and close
	}
	if gerr := g.Wait(); err == nil && gerr != nil && !errors.Is(gerr, context.Canceled) {
		err = gerr
	}
	return err
}

// readJSONL cuts r into blocks of lines and sends each to ordered and to
// work. A read error ends the last block.
//
// Each block reads its bytes straight into its own buffer, and its records
// are the lines found there: no copy but the start of the line a read
// ended in, which opens the next block's buffer. A line longer than a
// buffer is put together apart, cut at the size limit.
func (d *decoder) readJSONL(ctx context.Context, r io.Reader, ordered, work chan<- *lineBlock, free <-chan *lineBlock) error {
	var lineNo int64
	var carry []byte // the start of a line, at the end of the last block's buffer
	next := func() *lineBlock {
		var b *lineBlock
		select {
		case b = <-free:
		default:
			b = &lineBlock{buf: make([]byte, jsonBlockBytes)}
		}
		b.reset()
		return b
	}
	send := func(b *lineBlock) error {
		if len(b.recs) == 0 && b.err == nil {
			return nil
		}
		if len(b.out) < len(b.recs) {
			b.out = make([]decoded, len(b.recs))
		}
		for _, ch := range []chan<- *lineBlock{ordered, work} {
			select {
			case ch <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	// add records one line (its bytes, cut at the limit, and its whole
	// size with the line ending) unless it is blank.
	add := func(b *lineBlock, line []byte, total int) {
		lineNo++
		rec := trimEOL(line)
		if len(bytes.TrimSpace(rec)) == 0 && total <= d.maxBytes {
			return // blank lines are not records
		}
		size := total - (len(line) - len(rec)) // without the line ending
		if total > d.maxBytes {
			rec, size = line[:min(len(line), d.maxBytes)], total
		}
		b.recs = append(b.recs, rawRecord{b: rec[:len(rec):len(rec)], size: size})
		b.lines = append(b.lines, lineNo)
	}
	for {
		b := next()
		// The carried start of a line first (copy handles the overlap when
		// b is the block it came from), then as much as fits.
		buf := b.buf
		n := copy(buf, carry)
		m, err := io.ReadFull(r, buf[n:])
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		data := buf[:n+m]
		start := 0
		for {
			i := bytes.IndexByte(data[start:], '\n')
			if i < 0 {
				break
			}
			add(b, data[start:start+i+1], i+1)
			start += i + 1
		}
		carry = data[start:]
		switch {
		case err == io.EOF:
			if len(carry) > 0 {
				add(b, carry, len(carry)) // the last line, without its ending
			}
			return send(b)
		case err != nil:
			// The records before the failure are handed on first, as
			// they were read.
			b.err = err
			return send(b)
		case start == 0:
			// A full buffer without a line ending: a line longer than
			// the buffer, put together apart.
			var long []byte
			var total int
			long, total, carry, err = d.longLine(r, data)
			if err != nil && err != io.EOF {
				b.err = err
				return send(b)
			}
			add(b, long, total)
			if err == io.EOF {
				return send(b)
			}
		}
		if err := send(b); err != nil {
			return err
		}
	}
}

// longLine reads the rest of a line that began with the whole of buf (no
// line ending in it), reading on through buf. It returns the line's first
// bytes up to the size limit, its whole size, and what followed it in the
// last read: the start of the next line. err is io.EOF when the line ended
// the file.
//
// The line is kept in pieces and joined once its size is known: growing
// one slice by append allocates several times the line's size before the
// collector can free any (each growth copies the whole), and holds more
// than twice it at the last growth; pieces allocate twice the line and
// hold as much at most, at the join.
func (d *decoder) longLine(r io.Reader, buf []byte) (long []byte, total int, rest []byte, err error) {
	limit := d.maxBytes + 1
	var pieces [][]byte
	kept := 0
	keep := func(chunk []byte) {
		if n := min(len(chunk), limit-kept); n > 0 {
			pieces = append(pieces, bytes.Clone(chunk[:n]))
			kept += n
		}
	}
	keep(buf)
	total = len(buf)
	for {
		var m int
		m, err = io.ReadFull(r, buf)
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		chunk := buf[:m]
		end := bytes.IndexByte(chunk, '\n')
		if end >= 0 {
			chunk, rest, err = chunk[:end+1], chunk[end+1:], nil
		}
		total += len(chunk)
		keep(chunk)
		if end >= 0 || err != nil {
			long = make([]byte, 0, kept)
			for i, p := range pieces {
				long = append(long, p...)
				pieces[i] = nil // each piece freed as soon as it is copied
			}
			return long, total, rest, err
		}
	}
}

// jsonRow decodes one JSON record into row: as flatScan reads it, or when
// it cannot, or the table keeps an _extra column, through fastjson's tree
// (treeRow).
func (d *decoder) jsonRow(rec []byte, row []any) error {
	if d.extra >= 0 || !d.scan.scan(rec, d.flat) {
		return d.treeRow(rec, row)
	}
	for i, f := range d.flat {
		x, err := d.conv[i].fromToken(f.t, f.b)
		if err != nil {
			return err
		}
		row[i] = x
	}
	return nil
}

// treeRow decodes one JSON record into row through fastjson's tree.
func (d *decoder) treeRow(rec []byte, row []any) error {
	v, err := d.parser.ParseBytes(rec)
	if err != nil {
		return badRecord("malformed JSON: %s", err)
	}
	if err := checkEscapes(rec); err != nil {
		return err
	}
	obj, err := v.Object()
	if err != nil {
		return badRecord("want a JSON object, got %s", jsonKind(typeOfJSON(v)))
	}
	// A name given twice makes the record ambiguous where its row
	// depends on which one is read: a column's name, or with an _extra
	// column, which keeps every other name, any name (see dupName).
	if d.extra >= 0 {
		if k := dupName(obj, &d.keys); k != nil {
			return duplicateKey(k)
		}
	}
	vals := d.vals
	clear(vals)
	var dup []byte
	obj.Visit(func(k []byte, v *fastjson.Value) {
		i, ok := d.index[string(k)]
		switch {
		case !ok:
		case vals[i] == nil:
			vals[i] = v
		case dup == nil:
			dup = k
		}
	})
	if dup != nil {
		return duplicateKey(dup)
	}
	for i := range d.conv {
		if i == d.extra {
			continue
		}
		x, err := d.conv[i].fromJSON(vals[i], &d.num, &d.keys)
		if err != nil {
			return err
		}
		row[i] = x
	}
	if d.extra >= 0 {
		x, err := d.fromObject(obj)
		if err != nil {
			return err
		}
		row[d.extra] = x
	}
	// Last: walking the tree makes fastjson unescape the names and
	// strings it visits, and the text kept of a nested value (above)
	// must be as written.
	return checkNumbers(v, &d.num)
}

// decodeValue decodes one record that is a whole JSON object, as
// decodeJSONL does a line: it returns the row, or the (possibly
// truncated) raw bytes to quarantine and why.
func (d *decoder) decodeValue(raw []byte) (row []any, rec []byte, bad error) {
	rec = raw[:min(len(raw), d.maxBytes)]
	r := d.decodeJSON(rawRecord{b: rec, size: len(raw)})
	return r.row, rec, r.bad
}
