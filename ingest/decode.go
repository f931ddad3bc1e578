package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
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
	scan     *flatScan   // the one-pass scanner, and the columns' names
	flat     []flatField // scan's fields, one per column
	// index is a column's index by name, the _extra column's aside;
	// vals are treeRow's fields, one per column.
	index map[string]int
	vals  []*fastjson.Value
	// slab, box and rows are what the converters cut strings, boxed
	// values and rows from: the decoder's own, or while it decodes a
	// block, the block's arena (see enter).
	slab *strSlab
	box  *boxes
	rows *chunks[any]
	// arenas are the arenas of the JSON lines blocks d and its twin
	// decode; emitting is the arena of the rows being emitted, nil when
	// they are cut from the decoder's own chunks (see arena).
	arenas   *arenaPool
	emitting *arena
	own      struct { // the decoder's own, while an arena's are in use
		slab strSlab
		box  boxes
		rows chunks[any]
	}
	extras // the _extra column, when the table has one
	// twin decodes blocks of a JSON lines file beside d, on another
	// goroutine (decodeJSONL). Nil in a twin.
	twin *decoder
	// zstdWindow bounds a zstd landing file's window (see zstdWindow).
	zstdWindow uint64
}

func newDecoder(schema catalog.Schema, o Options) *decoder {
	d := newSoloDecoder(schema, o)
	d.twin = newSoloDecoder(schema, o)
	d.arenas = &arenaPool{poison: poisonArenas}
	d.twin.arenas = d.arenas
	return d
}

func newSoloDecoder(schema catalog.Schema, o Options) *decoder {
	d := &decoder{schema: schema, maxBytes: o.MaxRecordBytes, zstdWindow: zstdWindow(o.MemoryBudget)}
	slab, box := &strSlab{}, &boxes{}
	d.slab, d.box, d.rows = slab, box, &chunks[any]{}
	var names []string
	for _, c := range schema.Columns {
		d.conv = append(d.conv, converter{col: c, unit: o.EpochUnit, slab: slab, box: box})
		names = append(names, c.Name)
	}
	d.scan = newFlatScan(names)
	d.flat = make([]flatField, len(d.conv))
	d.extras = newExtras(schema)
	for i := range d.conv {
		if c := &d.conv[i]; c.col.Type.Nested() {
			c.nest = newNestedConv(c.col, *c, d.extra >= 0)
		}
	}
	d.index = map[string]int{}
	for i, n := range names {
		if i != d.extra {
			d.index[n] = i
		}
	}
	d.vals = make([]*fastjson.Value, len(d.conv))
	return d
}

// newRow returns a row for the next record, cut from a shared chunk: one
// allocation per chunk rather than per record. A chunk lives while any
// row in it does; rows are dropped once written.
func (d *decoder) newRow() []any { return d.rows.take(len(d.conv)) }

// enter makes the decoder cut what it decodes from a's chunks, until
// leave.
func (d *decoder) enter(a *arena) {
	d.own.slab, d.own.box, d.own.rows = *d.slab, *d.box, *d.rows
	*d.slab, *d.box, *d.rows = a.slab, a.box, a.rows
}

// leave gives a back its chunks, as the decoder used them, and makes the
// decoder cut from its own again.
func (d *decoder) leave(a *arena) {
	a.slab, a.box, a.rows = *d.slab, *d.box, *d.rows
	*d.slab, *d.box, *d.rows = d.own.slab, d.own.box, d.own.rows
}

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

// trimEOL cuts a line's ending: the \r and \n bytes at its end. (As
// bytes.TrimRight(line, "\r\n"), which spends more on its cutset than on
// a line's two last bytes.)
func trimEOL(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}
