package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// emitFunc receives one record: its position (line, or row for Parquet,
// from 1), its raw bytes (valid only during the call), and either its row
// in the table's column order or why it is quarantined. An error it
// returns stops the file.
type emitFunc func(pos int64, raw []byte, row []any, bad error) error

// decoder reads one landing file's records against a schema.
type decoder struct {
	schema   catalog.Schema
	conv     []converter
	maxBytes int
	parser   fastjson.Parser
	num      []byte      // scratch for a number's text
	names    flatNames   // the columns' names, for scanFlat
	flat     []flatField // scanFlat's fields, one per column
	// index is a column's index by name, the _extra column's aside;
	// vals are treeRow's fields, one per column.
	index  map[string]int
	vals   []*fastjson.Value
	rows   []any // the rest of the chunk newRow cuts rows from
	extras       // the _extra column, when the table has one
	// twin decodes blocks of a JSON lines file beside d, on another
	// goroutine (decodeJSONL). Nil in a twin.
	twin *decoder
	// zstdWindow bounds a zstd landing file's window (see zstdWindow).
	zstdWindow uint64
}

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
// into one buffer are decoded together. Decoding is the larger half of an
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

func newDecoder(schema catalog.Schema, o Options) *decoder {
	d := newSoloDecoder(schema, o)
	d.twin = newSoloDecoder(schema, o)
	return d
}

func newSoloDecoder(schema catalog.Schema, o Options) *decoder {
	d := &decoder{schema: schema, maxBytes: o.MaxRecordBytes, zstdWindow: zstdWindow(o.MemoryBudget)}
	slab, box := &strSlab{}, &boxes{}
	var names []string
	for _, c := range schema.Columns {
		d.conv = append(d.conv, converter{col: c, unit: o.EpochUnit, slab: slab, box: box})
		names = append(names, c.Name)
	}
	d.names = newFlatNames(names)
	d.flat = make([]flatField, len(d.conv))
	d.extras = newExtras(schema)
	d.index = map[string]int{}
	for i, n := range names {
		if i != d.extra {
			d.index[n] = i
		}
	}
	d.vals = make([]*fastjson.Value, len(d.conv))
	return d
}

// newRow returns a row for the next record, cut from a shared chunk of
// rowChunk rows: one allocation per chunk rather than per record. A chunk
// lives while any row in it does; rows are dropped once written.
func (d *decoder) newRow() []any {
	n := len(d.conv)
	if len(d.rows) < n {
		d.rows = make([]any, n*rowChunk)
	}
	r := d.rows[:n:n]
	d.rows = d.rows[n:]
	return r
}

const rowChunk = 1024

// formatOf returns a file's format and compression ("", "gz" or "zst") by
// its name; forced, when set, overrides the extension's format.
func formatOf(name string, forced Format) (Format, string, error) {
	base := strings.ToLower(path.Base(name))
	comp := ""
	switch {
	case strings.HasSuffix(base, ".gz"):
		comp, base = "gz", strings.TrimSuffix(base, ".gz")
	case strings.HasSuffix(base, ".zst"):
		comp, base = "zst", strings.TrimSuffix(base, ".zst")
	}
	if forced != FormatAuto {
		return forced, comp, nil
	}
	switch path.Ext(base) {
	case ".jsonl", ".json", ".ndjson":
		return FormatJSONL, comp, nil
	case ".csv":
		return FormatCSV, comp, nil
	case ".parquet":
		return FormatParquet, comp, nil
	}
	return "", "", fmt.Errorf("unknown format (want .jsonl, .json, .ndjson, .csv or .parquet, optionally .gz or .zst, or --format)")
}

// decodeFile reads the landing file key of st (size bytes) and calls emit
// per record. An error returned is a whole-file failure.
func (d *decoder) decodeFile(ctx context.Context, st cloud.Store, key string, size int64, forced Format, emit emitFunc) error {
	format, comp, err := formatOf(key, forced)
	if err != nil {
		return err
	}
	if format == FormatParquet {
		if comp != "" {
			return fmt.Errorf("compressed Parquet (.%s) is not supported: Parquet compresses its own pages", comp)
		}
		return d.decodeParquet(ctx, st, key, size, emit)
	}
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	r, closeR, err := decompress(rc, comp, d.zstdWindow)
	if err != nil {
		return err
	}
	defer closeR()
	if format == FormatCSV {
		return d.decodeCSV(ctx, r, emit)
	}
	return d.decodeJSONL(ctx, r, emit)
}

// zstdWindow is the largest window a zstd frame of a landing file may ask
// for under a memory budget: the decoder keeps that much history (twice
// that, decoding two blocks at once), outside the rows the budget counts.
// An eighth of the budget, but at least the 8 MiB every zstd decoder is
// advised to support (RFC 8878), which the zstd tool's levels 1 to 19
// stay within; --long and --ultra files ask for more (up to 2 GiB) and
// need a larger --memory. gzip needs no such bound: deflate's window is
// 32 KiB.
func zstdWindow(budget int64) uint64 {
	return uint64(max(8<<20, budget/8))
}

// decompress returns the decompressed bytes of r for a compression ("",
// "gz" or "zst", see formatOf) and the function that frees the
// decompressor. A zstd frame that asks for a window larger than
// maxWindow fails the file with an error saying so.
func decompress(r io.Reader, comp string, maxWindow uint64) (io.Reader, func(), error) {
	switch comp {
	case "gz":
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, 256<<10))
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return &labelled{r: zr, label: "gzip (truncated or corrupt)"}, func() { zr.Close() }, nil
	case "zst":
		zr, err := zstd.NewReader(bufio.NewReaderSize(r, 256<<10), zstd.WithDecoderConcurrency(2),
			zstd.WithDecoderMaxWindow(maxWindow))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return &zstdErrors{labelled{r: zr, label: "zstd (truncated or corrupt)"}, maxWindow}, zr.Close, nil
	}
	return r, func() {}, nil
}

// zstdErrors says what an exceeded window means: the file is fine, the
// memory allowed is not enough for it.
type zstdErrors struct {
	labelled
	maxWindow uint64
}

func (z *zstdErrors) Read(p []byte) (int, error) {
	n, err := z.labelled.r.Read(p)
	switch {
	case errors.Is(err, zstd.ErrWindowSizeExceeded):
		err = fmt.Errorf("zstd: a frame asks for a window over the %d MiB that --memory allows (an eighth of it, 8 MiB at least; written with zstd --long or --ultra?): %w",
			z.maxWindow>>20, err)
	case err != nil && err != io.EOF:
		err = fmt.Errorf("%s: %w", z.label, err)
	}
	return n, err
}

// labelled names the decompressor in its read errors: "unexpected EOF"
// alone does not say that the gzip stream was cut short.
type labelled struct {
	r     io.Reader
	label string
}

func (l *labelled) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", l.label, err)
	}
	return n, err
}

// checkRaw applies the checks every text record gets before decoding.
func (d *decoder) checkRaw(raw []byte, total int) error {
	if total > d.maxBytes {
		return badRecord("record of %d bytes exceeds the limit of %d bytes (--max-record-bytes)", total, d.maxBytes)
	}
	if !utf8.Valid(raw) {
		i := 0
		for i < len(raw) {
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return badRecord("invalid UTF-8 at byte %d", i)
	}
	return nil
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
	err   error // what ended the reading after these records, if anything
	done  chan struct{}
}

func (b *lineBlock) reset() {
	b.lines, b.recs, b.err = b.lines[:0], b.recs[:0], nil
	b.done = make(chan struct{})
}

// decodeJSONL reads a JSON lines file. Decoding is the larger half of an
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
				for j, rec := range b.recs {
					b.out[j] = dec.decodeJSON(rec)
				}
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
			for i, o := range b.out[:len(b.recs)] {
				if e := emit(b.lines[i], b.recs[i].b, o.row, o.bad); e != nil {
					return e
				}
				b.out[i] = decoded{}
			}
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
// one slice by append allocated five times the line's size before the
// collector could free any (each growth copies the whole), and held 2.25
// times it at the last growth; pieces allocate twice the line and hold
// as much at most, at the join.
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

// jsonRow decodes one JSON record into row: a flat one as scanFlat reads
// it, any other through fastjson's tree (treeRow).
func (d *decoder) jsonRow(rec []byte, row []any) error {
	if d.extra >= 0 || !scanFlat(rec, d.names, d.flat) {
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
		x, err := d.conv[i].fromJSON(vals[i], &d.num)
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
	return nil
}

// trimEOL cuts a line's ending: the \r and \n bytes at its end. (As
// bytes.TrimRight(line, "\r\n"), which spends more on its cutset than on
// a line's two last bytes.)
func trimEOL(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}

// recorder keeps the bytes a csv.Reader consumed, so each record's raw
// text can be quarantined as it was.
type recorder struct {
	r    io.Reader
	buf  []byte
	base int64 // input offset of buf[0]
	eof  bool  // r has returned io.EOF
}

func (rc *recorder) Read(p []byte) (int, error) {
	n, err := rc.r.Read(p)
	rc.buf = append(rc.buf, p[:n]...)
	if err == io.EOF {
		rc.eof = true
	}
	return n, err
}

// atEOF tells whether the bytes last taken ran to the end of the input.
func (rc *recorder) atEOF() bool { return rc.eof && len(rc.buf) == 0 }

// take returns the bytes from the start of the buffer to offset end, and
// forgets them on the next call.
func (rc *recorder) take(end int64) []byte {
	n := int(end - rc.base)
	out := rc.buf[:n]
	rest := copy(rc.buf, rc.buf[n:])
	rc.buf = rc.buf[:rest]
	rc.base = end
	return out
}

func (d *decoder) decodeCSV(ctx context.Context, r io.Reader, emit emitFunc) error {
	rec := &recorder{r: r}
	cr := csv.NewReader(rec)
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("CSV header: %w", err)
	}
	if err := unclosedQuote(cr, rec.take(cr.InputOffset()), rec.atEOF(), len(header)); err != nil {
		return fmt.Errorf("CSV header: %w", err)
	}
	where, extraFields, err := d.csvColumns(header)
	if err != nil {
		return err
	}
	var n int64
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		n++
		if n%4096 == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
		}
		raw := rec.take(cr.InputOffset())
		if err == nil || errors.Is(err, csv.ErrFieldCount) {
			if err := unclosedQuote(cr, raw, rec.atEOF(), len(fields)); err != nil {
				return err
			}
		}
		raw = trimEOL(raw)
		var line int64
		var bad error
		var pe *csv.ParseError
		switch {
		case err == nil:
			l, _ := cr.FieldPos(0)
			line = int64(l)
		case errors.As(err, &pe) && errors.Is(err, csv.ErrFieldCount):
			line = int64(pe.StartLine)
			bad = badRecord("CSV row has %d fields, the header %d", len(fields), len(header))
		case errors.As(err, &pe) && pe.Err != nil && (errors.Is(pe.Err, csv.ErrQuote) || errors.Is(pe.Err, csv.ErrBareQuote)):
			line = int64(pe.StartLine)
			bad = badRecord("malformed CSV: %s", pe.Err)
		default:
			return err
		}
		size := len(raw)
		if size > d.maxBytes {
			raw = raw[:d.maxBytes]
		}
		if bad == nil {
			bad = d.checkRaw(raw, size)
		}
		var row []any
		if bad == nil {
			row = d.newRow()
			for i := range d.conv {
				c := &d.conv[i]
				s := ""
				if where[i] >= 0 {
					s = fields[where[i]]
				}
				switch {
				case s == "" && c.col.Nullable:
					row[i] = nil
				case s == "" && c.col.Type.Kind != catalog.KindString:
					bad = badValue(&c.col, "empty but the column is not nullable")
				default:
					row[i], bad = c.fromText(s)
				}
				if bad != nil {
					row = nil
					break
				}
			}
			if row != nil && d.extra >= 0 {
				row[d.extra] = d.fromFields(extraFields, fields)
			}
		}
		if e := emit(line, raw, row, bad); e != nil {
			return e
		}
	}
}

// csvColumns maps a CSV header onto the table: where[i] is the field of
// table column i, -1 when absent, and extra the fields _extra keeps.
func (d *decoder) csvColumns(header []string) (where []int, extra []csvExtra, err error) {
	where = make([]int, len(d.conv))
	var missing []string
	for i, c := range d.conv {
		where[i] = -1
		if i == d.extra {
			continue // never read from a field of its own: see extras
		}
		for j, h := range header {
			if strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) != c.col.Name {
				continue
			}
			if where[i] >= 0 {
				// Every row would be ambiguous, as a JSON record
				// naming a column twice is (see dupName).
				return nil, nil, fmt.Errorf("CSV header names column %q twice (fields %d and %d): the file is ambiguous", c.col.Name, where[i]+1, j+1)
			}
			where[i] = j
		}
		if where[i] < 0 && !c.col.Nullable {
			missing = append(missing, c.col.Name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("CSV header lacks required column(s) %s", strings.Join(missing, ", "))
	}
	extra, err = d.extraFields(header, where)
	return where, extra, err
}

// unclosedQuote fails a file whose last record, raw, ends inside a quoted
// field: read with LazyQuotes, such a field runs from its opening quote to
// the end of the file, swallowing every line after it into one value. The
// file was most likely cut short, as a truncated gzip stream is, so it
// fails whole and is retried by the next run rather than taken with its
// records lost. atEOF tells whether raw ran to the end of the file; only
// then can a field be left open (elsewhere a quote closes before a comma or
// a line ending). cr has just returned raw's record, of n fields.
func unclosedQuote(cr *csv.Reader, raw []byte, atEOF bool, n int) error {
	if !atEOF {
		return nil
	}
	if !endsInQuote(raw) {
		return nil
	}
	line, col := cr.FieldPos(n - 1) // the open field runs to the end: the last
	return fmt.Errorf("CSV line %d, column %d: the quoted field opened there is never closed: it runs to the end of the file, which may be cut short", line, col)
}

// endsInQuote reads raw, the bytes of one CSV record that run to the end
// of the file, as encoding/csv does with LazyQuotes, and reports whether
// its last field is a quoted one left open. Lazily, a quote inside a
// quoted field that is not followed by a comma, a line ending or the end
// is kept as text, and the field goes on.
func endsInQuote(raw []byte) bool {
	i := 0
	for i < len(raw) && (raw[i] == '\n' || raw[i] == '\r') {
		i++ // empty lines before the record, which the reader skips
	}
	for i < len(raw) {
		if raw[i] != '"' {
			j := bytes.IndexAny(raw[i:], ",\n")
			if j < 0 || raw[i+j] == '\n' {
				return false
			}
			i += j + 1
			continue
		}
		end, closed := closingQuote(raw, i+1)
		if !closed {
			return true
		}
		if end >= len(raw) || raw[end] != ',' {
			return false // the record's end
		}
		i = end + 1
	}
	return false
}

// closingQuote returns the index after the quote that closes the quoted
// field whose text starts at raw[i], read as encoding/csv does with
// LazyQuotes; closed is false when no quote does.
func closingQuote(raw []byte, i int) (end int, closed bool) {
	for {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return 0, false
		}
		i += j + 1
		switch rest := raw[i:]; {
		case len(rest) > 0 && rest[0] == '"':
			i++ // an escaped quote
		case len(rest) == 0, rest[0] == ',', rest[0] == '\n', string(rest) == "\r", rest[0] == '\r' && rest[1] == '\n':
			return i, true
		}
	}
}

func (d *decoder) decodeParquet(ctx context.Context, st cloud.Store, key string, size int64, emit emitFunc) error {
	var n int64
	var raw []byte
	var extra []parquetExtra
	scanAs := func(file catalog.Schema) catalog.Schema {
		if d.extra < 0 {
			return d.schema
		}
		var scan catalog.Schema
		scan, extra = d.parquetExtras(file)
		return scan
	}
	return pqio.ScanParquetAs(ctx, st, key, size, scanAs, func(row []any) error {
		n++
		var bad error
		if d.extra >= 0 {
			row[d.extra] = d.fromColumns(extra, row)
			row = row[:len(d.conv):len(d.conv)]
		}
		for i := range d.conv {
			var v any
			if v, bad = d.conv[i].checkValue(row[i]); bad != nil {
				break
			}
			row[i] = v
		}
		raw = raw[:0]
		if bad != nil {
			raw = d.renderRow(raw, row)
			row = nil
		}
		return emit(n, raw, row, bad)
	})
}

// renderRow renders a Parquet row as a JSON object of canonical texts, the
// raw form a quarantined Parquet record keeps.
func (d *decoder) renderRow(dst []byte, row []any) []byte {
	m := make(map[string]any, len(row))
	for i, c := range d.schema.Columns {
		if row[i] == nil {
			m[c.Name] = nil
			continue
		}
		m[c.Name] = pqio.FormatValue(c.Type, row[i])
	}
	b, _ := json.Marshal(m)
	return append(dst, b...)
}
