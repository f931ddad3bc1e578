package wire

import (
	"math"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hamba/avro/v2"
	"github.com/sluice-data/sluice/internal/pqio"
)

// The library's decoding, kept as the reference the direct decoder
// (avro_direct.go) is checked against: hamba/avro decodes a payload into
// generic Go values, which are converted here into pqio's, after a walk
// of the payload that checks every length and count first (the library
// trusts an array's block count, and a count of -2^63 faults the
// process).

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

// avroLibraryDecode decodes a payload as Decode did before the direct
// decoder: the bounds walk, the library's generic decoder, the
// conversion of its values.
func avroLibraryDecode(s *avroSchema, payload []byte) (map[string]any, error) {
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

// TestAvroDirectMatchesLibrary: the direct decoder and the library's
// decoder (with the conversion of its values) give the same values for
// good payloads and refuse the same corrupted ones, over the full test
// schema's payloads and 5,000 cuts, flips and random bytes.
func TestAvroDirectMatchesLibrary(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs).(*avroSchema)
	full, _ := avroTestFull()
	nulls, _ := avroTestNulls()
	var payloads [][]byte
	for _, in := range []map[string]any{full, nulls} {
		payloads = append(payloads, avroEncode(t, avroTestOrder, avroTestRefs, in))
	}
	payloads = append(payloads, avroCorrupted(7, 5000, 120, 3, payloads...)...)
	decoded := 0
	for _, b := range payloads {
		got, gotErr := s.Decode(b)
		want, wantErr := avroLibraryDecode(s, b)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("payload %x: direct %v, library %v", b, gotErr, wantErr)
		}
		if gotErr == nil {
			decoded++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("payload %x:\ndirect  %#v\nlibrary %#v", b, got, want)
			}
		}
	}
	if decoded < 100 {
		t.Fatalf("only %d payloads decoded: the comparison saw too few values", decoded)
	}
}

// avroScanPayload walks the record at the start of a payload of n bytes
// (reset into r) and returns an ErrBadRecord for one that is truncated,
// malformed, or followed by more bytes.
func avroScanPayload(r *avro.Reader, root *avroNode, n int) error {
	sc := &avroScan{r: r, n: int64(n)}
	sc.node(root, "")
	return sc.finish()
}

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

// blocks walks an array's or a map's blocks.
func (sc *avroScan) blocks(n *avroNode, path string) {
	for count := sc.blockCount(path); count > 0; count = sc.blockCount(path) {
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
