package wire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hamba/avro/v2"

	"github.com/sluice-data/sluice/internal/pqio"
)

// avroAPI is the library configuration every payload is decoded with. It
// does not cap byte and string lengths (the library's default cap is 1
// MiB): avroScanPayload has checked each against the payload's length
// first. It is not the library's DefaultConfig, so nothing else registers
// types with it, and its union decoding stays as avroSlot.value expects.
var avroAPI = avro.Config{MaxByteSliceSize: -1}.Freeze()

// avroSchema is a parsed Avro schema: its columns, the converter tree of
// its top-level record, and the schema the library decodes payloads with
// (the registered one rebuilt without references and without the logical
// types converted here). It is immutable, so Decode is safe for
// concurrent use.
type avroSchema struct {
	cols []pqio.Column
	root *avroNode
	dec  avro.Schema
}

// Columns returns the columns of the top-level record's fields.
func (s *avroSchema) Columns() []pqio.Column { return slices.Clone(s.cols) }

// Decode decodes one Avro payload (binary encoding, no container) into
// its top-level fields' values by column name. The payload is first
// walked to check that it holds exactly one record whose lengths and
// counts fit it, then decoded by the library, then converted.
func (s *avroSchema) Decode(payload []byte) (map[string]any, error) {
	r := avro.NewReader(nil, 0, avro.WithReaderConfig(avroAPI))
	r.Reset(payload)
	if err := avroScanPayload(r, s.root, len(payload)); err != nil {
		return nil, err
	}
	r.Reset(payload)
	r.Error = nil
	v, err := avroRead(r, s.dec)
	if err != nil {
		return nil, err
	}
	out, err := s.root.value("", v)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// avroRead decodes one value of schema s with the library, into the
// generic Go values it gives for an `any`.
func avroRead(r *avro.Reader, s avro.Schema) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, avroBad("the Avro decoder failed: %v", p)
		}
	}()
	r.ReadVal(s, &v)
	if r.Error != nil {
		return nil, avroBad("does not decode as Avro: %v", r.Error)
	}
	return v, nil
}

// avroBad is an ErrBadRecord saying why in one line.
func avroBad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRecord, avroOneLine(fmt.Sprintf(format, args...)))
}

// avroBadValue is an ErrBadRecord for the value of the field at path.
func avroBadValue(path, format string, args ...any) error {
	return avroBad("field %q: %s", path, fmt.Sprintf(format, args...))
}

// avroQuote quotes s, cut to a length an error line can hold.
func avroQuote(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// --- the bounds walk --------------------------------------------------------

// avroScan walks a payload's encoding with the library's reader without
// building values. The library's decoder trusts an array's block count:
// it grows the slice to it before reading an item, so a count of 2^62
// asks for exabytes, and a count of -2^63 (or counts whose sum overflows)
// makes it write outside the slice and crash the process. Every item
// takes at least one byte (Parse refuses the types that take none), so a
// count, like a length, larger than the payload is a bad record, and so
// is a payload the walk does not end exactly at.
type avroScan struct {
	r   *avro.Reader
	n   int64 // the payload's length
	err error // the first problem found, besides the reader's own
	// at is the path of the innermost field being read when the reader
	// failed.
	at string
}

// avroScanPayload walks the record at the start of a payload of n bytes
// (reset into r) and returns an ErrBadRecord for one that is truncated,
// malformed, or followed by more bytes.
func avroScanPayload(r *avro.Reader, root *avroNode, n int) error {
	sc := &avroScan{r: r, n: int64(n)}
	sc.node(root, "")
	if sc.err != nil {
		return sc.err
	}
	if err := r.Error; err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return avroBad("the %d-byte payload ends before its record does, in field %q (truncated, or not this schema's)", n, sc.at)
		}
		return avroBadValue(sc.at, "does not decode as Avro: %v", err)
	}
	extra := 0
	for r.Peek(); r.Error == nil; r.Peek() {
		r.SkipNBytes(1)
		extra++
	}
	if extra > 0 {
		return avroBad("%d trailing bytes after the record (the %d-byte payload is not one record of this schema)", extra, n)
	}
	return nil
}

// stopped tells whether the walk has failed.
func (sc *avroScan) stopped() bool { return sc.err != nil || sc.r.Error != nil }

// slot walks the value of sl: its union branch index, then the value.
func (sc *avroScan) slot(sl *avroSlot) {
	defer func() {
		if sc.r.Error != nil && sc.at == "" {
			sc.at = sl.path
		}
	}()
	if sl.union > 0 {
		i := sc.r.ReadInt()
		if sc.stopped() {
			return
		}
		if i < 0 || int(i) >= sl.union {
			sc.err = avroBadValue(sl.path, "union branch %d does not exist (the union has %d)", i, sl.union)
			return
		}
		if int(i) == sl.null {
			return
		}
	}
	sc.node(sl.node, sl.path)
}

// node walks one value of n.
func (sc *avroScan) node(n *avroNode, path string) {
	r := sc.r
	switch n.op {
	case avroBoolOp:
		r.ReadBool()
	case avroIntOp, avroDateOp, avroTimeMillisOp:
		r.ReadInt()
	case avroEnumOp:
		if i := r.ReadInt(); r.Error == nil && (i < 0 || int(i) >= n.symbols) {
			sc.err = avroBadValue(path, "enum symbol %d does not exist (the enum has %d)", i, n.symbols)
		}
	case avroLongOp, avroTimestampOp, avroLocalMillisOp, avroLocalMicrosOp, avroTimeMicrosOp:
		r.ReadLong()
	case avroFloatOp:
		r.SkipNBytes(4)
	case avroDoubleOp:
		r.SkipNBytes(8)
	case avroStringOp, avroUUIDOp, avroBytesOp:
		sc.length(path, "")
	case avroFixedOp:
		r.SkipNBytes(n.size)
	case avroDecimalOp:
		if n.size > 0 {
			r.SkipNBytes(n.size)
		} else {
			sc.length(path, "")
		}
	case avroRecordOp:
		for i := range n.fields {
			if sc.slot(&n.fields[i]); sc.stopped() {
				return
			}
		}
	case avroArrayOp, avroMapOp:
		sc.blocks(n, path)
	}
}

// length walks a string's or bytes' length and its bytes, of the field
// at path+suffix.
func (sc *avroScan) length(path, suffix string) {
	l := sc.r.ReadLong()
	if sc.stopped() {
		return
	}
	if l < 0 || l > sc.n {
		sc.err = avroBadValue(path+suffix, "a length of %d bytes in a %d-byte payload", l, sc.n)
		return
	}
	sc.r.SkipNBytes(int(l))
}

// blocks walks an array's or a map's blocks: a count (negative when a
// byte size follows it), that many items, until a count of 0.
func (sc *avroScan) blocks(n *avroNode, path string) {
	for {
		count := sc.r.ReadLong()
		if sc.stopped() || count == 0 {
			return
		}
		if count < 0 {
			size := sc.r.ReadLong()
			if sc.stopped() {
				return
			}
			if count == math.MinInt64 || size < 0 || size > sc.n {
				sc.err = avroBadValue(path, "a block of %d items and %d bytes in a %d-byte payload", count, size, sc.n)
				return
			}
			count = -count
		}
		if count > sc.n {
			sc.err = avroBadValue(path, "a block of %d items in a %d-byte payload", count, sc.n)
			return
		}
		for range count {
			if n.op == avroMapOp {
				sc.length(path, ".key")
			}
			if sc.slot(n.elem); sc.stopped() {
				return
			}
		}
	}
}

// --- conversion ---------------------------------------------------------------

// value converts the library's value v of sl into pqio's representation.
func (sl *avroSlot) value(v any) (any, error) {
	if sl.union > 0 && v != nil {
		m, ok := v.(map[string]any)
		switch {
		case ok && len(m) == 1 && !sl.wrapped:
			for _, x := range m {
				v = x
			}
		case sl.wrapped:
			x, found := m[sl.key]
			if !ok || len(m) != 1 || !found {
				return nil, avroBadValue(sl.path, "the Avro decoder gave a %T for a union of %s", v, sl.key)
			}
			v = x
		}
	}
	if v == nil {
		if sl.null >= 0 {
			return nil, nil
		}
		return nil, avroBadValue(sl.path, "null in a field that is not nullable")
	}
	return sl.node.value(sl.path, v)
}

// value converts v, the library's value of n at path.
func (n *avroNode) value(path string, v any) (any, error) {
	switch n.op {
	case avroRecordOp:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, avroWrongGo(path, v, "record")
		}
		out := make(map[string]any, len(n.fields))
		for i := range n.fields {
			f := &n.fields[i]
			x, err := f.value(m[f.name])
			if err != nil {
				return nil, err
			}
			out[f.name] = x
		}
		return out, nil
	case avroArrayOp:
		a, ok := v.([]any)
		if !ok {
			return nil, avroWrongGo(path, v, "array")
		}
		out := make([]any, len(a))
		for i, x := range a {
			y, err := n.elem.value(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case avroMapOp:
		return n.mapValue(path, v)
	}
	return n.scalar(path, v)
}

// mapValue converts a map's value: its entries, sorted by key (the
// library decodes a map into a Go map, which keeps no order).
func (n *avroNode) mapValue(path string, v any) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, avroWrongGo(path, v, "map")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !utf8.ValidString(k) {
			return nil, avroBadValue(path, "map key %s is not valid UTF-8", avroQuote(k))
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]pqio.MapEntry, len(keys))
	for i, k := range keys {
		x, err := n.elem.value(m[k])
		if err != nil {
			return nil, err
		}
		out[i] = pqio.MapEntry{Key: k, Value: x}
	}
	return out, nil
}

// avroWrongGo is the error for a library value of an unexpected Go type.
func avroWrongGo(path string, v any, want string) error {
	return avroBadValue(path, "the Avro decoder gave a %T for a %s", v, want)
}

// scalar converts a value of a primitive, enum or fixed type.
func (n *avroNode) scalar(path string, v any) (any, error) {
	switch n.op {
	case avroBoolOp:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case avroIntOp:
		if i, ok := avroInt64(v); ok && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int32(i), nil
		}
	case avroLongOp, avroTimeMicrosOp:
		if i, ok := avroInt64(v); ok {
			return i, nil
		}
	case avroTimeMillisOp:
		if i, ok := avroInt64(v); ok && i >= math.MinInt32 && i <= math.MaxInt32 {
			return i * 1000, nil
		}
	case avroFloatOp, avroDoubleOp:
		switch f := v.(type) {
		case float32:
			return float64(f), nil
		case float64:
			return f, nil
		}
	case avroStringOp, avroEnumOp:
		if s, ok := v.(string); ok {
			if !utf8.ValidString(s) {
				return nil, avroBadValue(path, "string %s is not valid UTF-8", avroQuote(s))
			}
			return s, nil
		}
	case avroUUIDOp:
		if s, ok := v.(string); ok {
			u, err := uuid.Parse(s)
			if err != nil {
				return nil, avroBadValue(path, "not a UUID: %s", avroQuote(s))
			}
			return u.String(), nil
		}
	case avroBytesOp, avroFixedOp:
		if b, ok := avroBytes(v); ok {
			return b, nil
		}
	case avroDecimalOp:
		if r, ok := v.(*big.Rat); ok && r != nil {
			return n.decimal(path, r)
		}
	default:
		return n.timeValue(path, v)
	}
	return nil, avroWrongGo(path, v, avroOpName(n.op))
}

// timeValue converts a date's or a timestamp's value.
func (n *avroNode) timeValue(path string, v any) (any, error) {
	switch n.op {
	case avroDateOp:
		if t, ok := v.(time.Time); ok {
			return t.UTC(), nil
		}
	case avroTimestampOp:
		if t, ok := v.(time.Time); ok {
			t = t.UTC().Truncate(time.Microsecond)
			if !time.UnixMicro(t.UnixMicro()).Equal(t) {
				return nil, avroBadValue(path, "timestamp %s is out of range (microseconds since 1970 overflow 64 bits)", t.Format(time.RFC3339))
			}
			return t, nil
		}
	case avroLocalMillisOp:
		if i, ok := avroInt64(v); ok {
			if i > math.MaxInt64/1000 || i < math.MinInt64/1000 {
				return nil, avroBadValue(path, "local-timestamp-millis %d is out of range (microseconds overflow 64 bits)", i)
			}
			return time.UnixMilli(i).UTC(), nil
		}
	case avroLocalMicrosOp:
		if i, ok := avroInt64(v); ok {
			return time.UnixMicro(i).UTC(), nil
		}
	}
	return nil, avroWrongGo(path, v, avroOpName(n.op))
}

// decimal renders a decimal's exact value with exactly n.scale digits
// after the point, refusing one with more digits than n.prec.
func (n *avroNode) decimal(path string, r *big.Rat) (any, error) {
	num := new(big.Int).Mul(r.Num(), n.pow)
	q, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		return nil, avroBadValue(path, "decimal %s has more than %d digits after the point", r.RatString(), n.scale)
	}
	digits := q.String()
	if len(strings.TrimPrefix(digits, "-")) > n.prec {
		return nil, avroBadValue(path, "decimal %s does not fit decimal(%d,%d)", pqio.PlacePoint(digits, n.scale), n.prec, n.scale)
	}
	return pqio.PlacePoint(digits, n.scale), nil
}

// avroInt64 is an integer value of the library's (an int for Avro's int, an
// int64 for its long) as an int64.
func avroInt64(v any) (int64, bool) {
	switch i := v.(type) {
	case int:
		return int64(i), true
	case int32:
		return int64(i), true
	case int64:
		return i, true
	}
	return 0, false
}

// avroBytes is a bytes or fixed value of the library's (a []byte, or a
// [size]byte array for a fixed) as a []byte. The library copies bytes out
// of the payload (into a buffer of the reader's, which Decode does not
// reuse), so the value does not alias the caller's payload.
func avroBytes(v any) ([]byte, bool) {
	if b, ok := v.([]byte); ok {
		return b, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, false
	}
	b := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(b), rv)
	return b, true
}
