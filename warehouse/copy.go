package warehouse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-data/sluice/catalog"
)

// Rows reach PostgreSQL as binary COPY data that this file encodes
// itself, straight from catalog's Go values into the wire format: pgx's
// CopyFrom would box every value in an interface, look up an encode plan
// per value and, for numeric, build a big.Int per decimal, which took
// more of a publish's CPU than reading the Parquet files did. Types
// without a case here are encoded by pgx's type map, as before. A flat
// table skips Go values altogether (copybatch.go); this file's encoders
// serve tables with a nested column and partition values.

// copyChunk is the size at which encoded rows are handed to the
// connection; with chunksInFlight, what a loader holds beyond its
// reader's row group.
const (
	copyChunk      = 256 << 10
	chunksInFlight = 4
)

// copyHeader starts binary COPY data: the signature, no flags, no header
// extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// fileQueue hands out a version's files, each once, to the loaders that
// share them: a loader takes the next file when it is done with one, so
// the shares even out however the files' sizes differ.
type fileQueue struct {
	files []catalog.DataFile
	next  atomic.Int64
}

func (q *fileQueue) take() (catalog.DataFile, bool) {
	i := q.next.Add(1) - 1
	if i >= int64(len(q.files)) {
		return catalog.DataFile{}, false
	}
	return q.files[i], true
}

// progress adds up the rows of every loader for Options.Progress.
type progress struct {
	mu    sync.Mutex
	done  int64
	total int64
	fn    func(done, total int64)
}

func (p *progress) add(n int64) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.fn(p.done, p.total)
}

// copyIn copies the rows of the files q hands out into the table into
// by binary COPY on pc, with FREEZE when freeze is set (into was created
// in pc's transaction); it returns the rows the server loaded.
func copyIn(ctx context.Context, pc *pgconn.PgConn, t catalog.Readable, schema catalog.Schema, into target, q *fileQueue,
	freeze bool, prog *progress) (int64, error) {
	cols := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		cols[i] = pgx.Identifier{c.Name}.Sanitize()
	}
	opts := "FORMAT binary"
	if freeze {
		opts += ", FREEZE"
	}
	s := newCopyStream(ctx, t, schema, q, prog)
	defer s.close()
	tag, err := pc.CopyFrom(ctx, s, "COPY "+into.sql()+" ("+strings.Join(cols, ", ")+") FROM STDIN ("+opts+")")
	if err != nil {
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			err = s.err // why the data stopped, rather than the server's echo of it
		}
		return 0, fmt.Errorf("copy into %s: %w", into, err)
	}
	return tag.RowsAffected(), nil
}

// copyStream is binary COPY data as an io.Reader for pgconn.CopyFrom: a
// goroutine reads the files q hands out, file by file and row group by
// row group, and encodes their rows in chunks a bounded channel ahead of
// the connection, so the table is never held in memory.
type copyStream struct {
	ch     <-chan []byte
	free   chan []byte
	errc   <-chan error
	cancel context.CancelFunc
	cur    []byte // what is left of the chunk being read
	chunk  []byte // that chunk, back to free once read
	err    error
}

func newCopyStream(ctx context.Context, t catalog.Readable, schema catalog.Schema, q *fileQueue, prog *progress) *copyStream {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan []byte, chunksInFlight)
	free := make(chan []byte, chunksInFlight+2)
	errc := make(chan error, 1)
	e := &encoder{ctx: ctx, schema: schema, enc: pgEncoders(schema), venc: valueEncoders(schema), ch: ch, free: free, prog: prog}
	go func() {
		defer close(ch)
		errc <- e.run(t, q)
	}()
	return &copyStream{ch: ch, free: free, errc: errc, cancel: cancel}
}

// Read implements io.Reader.
func (s *copyStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if s.chunk != nil {
			select {
			case s.free <- s.chunk[:0]:
			default:
			}
			s.chunk = nil
		}
		b, ok := <-s.ch
		if !ok {
			if s.err = <-s.errc; s.err != nil {
				return 0, s.err
			}
			return 0, io.EOF
		}
		s.chunk, s.cur = b, b
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// close stops the encoder and waits for it.
func (s *copyStream) close() {
	s.cancel()
	for range s.ch {
	}
}

// encoder turns rows into binary COPY data, chunk by chunk.
type encoder struct {
	ctx    context.Context
	schema catalog.Schema
	enc    []fieldEncoder
	venc   []valueEncoder // nil: the table is read row by row
	ch     chan<- []byte
	free   chan []byte
	prog   *progress
	buf    []byte
	rows   int64 // rows in buf, for progress
}

func (e *encoder) send() error {
	select {
	case e.ch <- e.buf:
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
	e.prog.add(e.rows)
	e.rows = 0
	select {
	case e.buf = <-e.free:
	default:
		e.buf = make([]byte, 0, copyChunk+copyChunk/8)
	}
	return nil
}

func (e *encoder) run(t catalog.Readable, q *fileQueue) error {
	e.buf = append(make([]byte, 0, copyChunk+copyChunk/8), copyHeader...)
	for {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		f, ok := q.take()
		if !ok {
			break
		}
		st, key, err := t.DataFileStore(e.ctx, f)
		if err != nil {
			return fmt.Errorf("open %s: %w", t.FileURL(f), err)
		}
		if e.venc != nil {
			err = e.copyFileBatches(st, key, f)
		} else {
			err = catalog.ScanDataFile(e.ctx, st, key, f, e.schema, e.row)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", t.FileURL(f), err)
		}
	}
	e.buf = binary.BigEndian.AppendUint16(e.buf, math.MaxUint16) // -1: the end
	return e.send()
}

// row encodes one row of Go values.
func (e *encoder) row(row []any) error {
	e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(e.schema.Columns)))
	for i, v := range row {
		if v == nil {
			if !e.schema.Columns[i].Nullable {
				return fmt.Errorf("column %q: NULL in a column that is not nullable", e.schema.Columns[i].Name)
			}
			e.buf = binary.BigEndian.AppendUint32(e.buf, math.MaxUint32) // -1: NULL
			continue
		}
		var err error
		if e.buf, err = e.enc[i](e.buf, v); err != nil {
			return fmt.Errorf("column %q: %w", e.schema.Columns[i].Name, err)
		}
	}
	e.rows++
	if len(e.buf) >= copyChunk {
		return e.send()
	}
	return nil
}

// fieldEncoder appends a value's length and binary form to buf.
type fieldEncoder func(buf []byte, v any) ([]byte, error)

// pgEncoders are the encoders of schema's columns as their PostgreSQL
// types (pgType), from catalog's Go representation; a value of another
// Go type goes to pgx's type map.
func pgEncoders(schema catalog.Schema) []fieldEncoder {
	out := make([]fieldEncoder, len(schema.Columns))
	for i, c := range schema.Columns {
		fast, oid := fastEncoder(c.Type.Kind)
		out[i] = func(buf []byte, v any) ([]byte, error) {
			if b, ok, err := fast(buf, v); ok || err != nil {
				return b, err
			}
			return encodeByMap(buf, oid, v)
		}
	}
	return out
}

// fastEncoder is the encoder of a kind's usual Go type (ok false for
// another) and the PostgreSQL type's oid.
func fastEncoder(k catalog.Kind) (func(buf []byte, v any) (out []byte, ok bool, err error), uint32) {
	be := binary.BigEndian
	switch k {
	case catalog.KindInt32:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(int32)
			if !ok {
				return buf, false, nil
			}
			return be.AppendUint32(be.AppendUint32(buf, 4), uint32(x)), true, nil
		}, pgtype.Int4OID
	case catalog.KindInt64:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(int64)
			if !ok {
				return buf, false, nil
			}
			return be.AppendUint64(be.AppendUint32(buf, 8), uint64(x)), true, nil
		}, pgtype.Int8OID
	case catalog.KindFloat64:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(float64)
			if !ok {
				return buf, false, nil
			}
			return be.AppendUint64(be.AppendUint32(buf, 8), math.Float64bits(x)), true, nil
		}, pgtype.Float8OID
	case catalog.KindBool:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(bool)
			if !ok {
				return buf, false, nil
			}
			b := byte(0)
			if x {
				b = 1
			}
			return append(be.AppendUint32(buf, 1), b), true, nil
		}, pgtype.BoolOID
	case catalog.KindDate:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(time.Time)
			if !ok {
				return buf, false, nil
			}
			// As pgx encodes a date: the calendar day of x, in days
			// since 2000-01-01.
			days := (time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC).Unix() - pgEpoch) / 86400
			return be.AppendUint32(be.AppendUint32(buf, 4), uint32(int32(days))), true, nil
		}, pgtype.DateOID
	case catalog.KindTimestamp:
		return func(buf []byte, v any) ([]byte, bool, error) {
			x, ok := v.(time.Time)
			if !ok {
				return buf, false, nil
			}
			us := x.Unix()*1_000_000 + int64(x.Nanosecond())/1000 - pgEpoch*1_000_000
			return be.AppendUint64(be.AppendUint32(buf, 8), uint64(us)), true, nil
		}, pgtype.TimestamptzOID
	case catalog.KindUUID:
		return func(buf []byte, v any) ([]byte, bool, error) {
			s, ok := v.(string)
			if !ok {
				return buf, false, nil
			}
			u, err := uuid.Parse(s)
			if err != nil {
				return buf, true, err
			}
			return append(be.AppendUint32(buf, 16), u[:]...), true, nil
		}, pgtype.UUIDOID
	case catalog.KindDecimal:
		return func(buf []byte, v any) ([]byte, bool, error) {
			s, ok := v.(string)
			if !ok {
				return buf, false, nil
			}
			b, err := appendNumeric(buf, s)
			return b, true, err
		}, pgtype.NumericOID
	case catalog.KindString:
		return func(buf []byte, v any) ([]byte, bool, error) {
			s, ok := v.(string)
			if !ok {
				return buf, false, nil
			}
			// PostgreSQL text holds neither NUL nor invalid UTF-8: say
			// so with the column's name rather than let COPY fail with
			// a byte offset.
			if strings.IndexByte(s, 0) >= 0 {
				return buf, true, errors.New("a NUL character, which PostgreSQL text cannot hold")
			}
			if !utf8.ValidString(s) {
				return buf, true, errors.New("invalid UTF-8, which PostgreSQL text cannot hold")
			}
			return append(be.AppendUint32(buf, uint32(len(s))), s...), true, nil
		}, pgtype.TextOID
	case catalog.KindBinary:
		return func(buf []byte, v any) ([]byte, bool, error) {
			b, ok := v.([]byte)
			if !ok {
				return buf, false, nil
			}
			return append(be.AppendUint32(buf, uint32(len(b))), b...), true, nil
		}, pgtype.ByteaOID
	}
	return func(buf []byte, _ any) ([]byte, bool, error) { return buf, false, nil }, 0
}

// pgEpoch is 2000-01-01 UTC in Unix seconds, where PostgreSQL counts
// dates and timestamps from.
const pgEpoch = 946684800

// typeMap encodes what the fast encoders do not take; pgtype.Map is
// safe for concurrent encoding once built.
var typeMap = pgtype.NewMap()

// encodeByMap appends v's length and binary form as the type oid, by
// pgx's type map.
func encodeByMap(buf []byte, oid uint32, v any) ([]byte, error) {
	if oid == 0 {
		return buf, fmt.Errorf("a value of type %T, which sluice cannot encode for PostgreSQL", v)
	}
	at := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	out, err := typeMap.Encode(oid, pgtype.BinaryFormatCode, v, buf)
	if err != nil {
		return buf[:at], err
	}
	if out == nil { // NULL
		return binary.BigEndian.AppendUint32(buf[:at], math.MaxUint32), nil
	}
	binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	return out, nil
}

// appendNumeric appends the binary numeric of a decimal in canonical form
// ("-123.45"): base-10000 digits aligned on the decimal point, the
// weight of the first, the sign, and the scale written (dscale).
func appendNumeric(buf []byte, s string) ([]byte, error) {
	bad := func() ([]byte, error) { return buf, fmt.Errorf("decimal %q: not a number", s) }
	neg := false
	num := s
	if len(num) > 0 && (num[0] == '-' || num[0] == '+') {
		neg = num[0] == '-'
		num = num[1:]
	}
	whole, frac, dot := strings.Cut(num, ".")
	if whole == "" && (!dot || frac == "") {
		return bad()
	}
	for i := 0; i < len(num); i++ {
		if (num[i] < '0' || num[i] > '9') && num[i] != '.' {
			return bad()
		}
	}
	whole = strings.TrimLeft(whole, "0")
	lead := (4 - len(whole)%4) % 4 // zeros that align whole on groups of 4
	nw, nf := (len(whole)+lead)/4, (len(frac)+3)/4
	var small [24]int16
	digits := small[:0]
	if nw+nf > len(small) {
		digits = make([]int16, 0, nw+nf)
	}
	at := func(str string, i int) int16 {
		if i < 0 || i >= len(str) {
			return 0
		}
		return int16(str[i] - '0')
	}
	for g := range nw {
		d := int16(0)
		for j := range 4 {
			d = d*10 + at(whole, g*4+j-lead)
		}
		digits = append(digits, d)
	}
	for g := range nf {
		d := int16(0)
		for j := range 4 {
			d = d*10 + at(frac, g*4+j)
		}
		digits = append(digits, d)
	}
	weight := nw - 1
	for len(digits) > 0 && digits[0] == 0 {
		digits, weight = digits[1:], weight-1
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	sign := uint16(0)
	if len(digits) == 0 {
		weight = 0
	} else if neg {
		sign = 0x4000
	}
	if len(frac) > math.MaxInt16 || weight > math.MaxInt16 || weight < math.MinInt16 {
		return bad()
	}
	be := binary.BigEndian
	buf = be.AppendUint32(buf, uint32(8+2*len(digits)))
	buf = be.AppendUint16(buf, uint16(len(digits)))
	buf = be.AppendUint16(buf, uint16(int16(weight)))
	buf = be.AppendUint16(buf, sign)
	buf = be.AppendUint16(buf, uint16(len(frac)))
	for _, d := range digits {
		buf = be.AppendUint16(buf, uint16(d))
	}
	return buf, nil
}
