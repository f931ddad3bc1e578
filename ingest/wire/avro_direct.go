package wire

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/google/uuid"
	"github.com/hamba/avro/v2"

	"github.com/sluice-data/sluice/internal/pqio"
)

// avroDecodePayload decodes the record at the start of a payload of n
// bytes (reset into r) straight into pqio's values, reading the encoding
// with the library's reader: the walk avroScan makes, building the values
// as it goes. It takes the place of the library's generic decoder plus a
// conversion of its maps, which cost three times as much per record (the
// generic decoder builds a map per record and per union, then this
// package another): avro_reference_test.go keeps that path and checks the
// two agree on every value and every refusal.
func avroDecodePayload(r *avro.Reader, root *avroNode, n int) ([]any, error) {
	sc := &avroScan{r: r, n: int64(n)}
	vals := make([]any, len(root.fields))
	for i := range root.fields {
		if vals[i] = sc.slotValue(&root.fields[i]); sc.stopped() {
			break
		}
	}
	if err := sc.finish(); err != nil {
		return nil, err
	}
	return vals, nil
}

// fail records the walk's first problem.
func (sc *avroScan) fail(err error) {
	if sc.err == nil {
		sc.err = err
	}
}

// slotValue reads the value of sl: its union branch index, then the
// value; nil for null.
func (sc *avroScan) slotValue(sl *avroSlot) any {
	defer func() {
		if sc.r.Error != nil && sc.at == "" {
			sc.at = sl.path
		}
	}()
	if sl.union > 0 {
		i := sc.r.ReadInt()
		if sc.stopped() {
			return nil
		}
		if i < 0 || int(i) >= sl.union {
			sc.fail(avroBadValue(sl.path, "union branch %d does not exist (the union has %d)", i, sl.union))
			return nil
		}
		if int(i) == sl.null {
			return nil
		}
	}
	return sc.nodeValue(sl.node, sl.path)
}

// nodeValue reads one value of n, at path.
func (sc *avroScan) nodeValue(n *avroNode, path string) any {
	r := sc.r
	switch n.op {
	case avroBoolOp:
		return r.ReadBool()
	case avroIntOp:
		return r.ReadInt()
	case avroDateOp:
		return time.Unix(int64(r.ReadInt())*86400, 0).UTC()
	case avroTimeMillisOp:
		return int64(r.ReadInt()) * 1000
	case avroLongOp, avroTimeMicrosOp:
		return r.ReadLong()
	case avroTimestampOp, avroLocalMillisOp, avroLocalMicrosOp:
		return sc.timestamp(n, path)
	case avroFloatOp:
		return float64(r.ReadFloat())
	case avroDoubleOp:
		return r.ReadDouble()
	case avroStringOp, avroUUIDOp:
		return sc.text(n, path)
	case avroBytesOp:
		return sc.bytes(path, "")
	case avroFixedOp:
		b := make([]byte, n.size)
		r.Read(b)
		return b
	case avroEnumOp:
		i := r.ReadInt()
		if r.Error == nil && (i < 0 || int(i) >= n.symbols) {
			sc.fail(avroBadValue(path, "enum symbol %d does not exist (the enum has %d)", i, n.symbols))
			return nil
		}
		if r.Error != nil {
			return nil
		}
		return n.names[i]
	case avroDecimalOp:
		return sc.decimal(n, path)
	case avroRecordOp:
		m := make(map[string]any, len(n.fields))
		for i := range n.fields {
			f := &n.fields[i]
			v := sc.slotValue(f)
			if sc.stopped() {
				return nil
			}
			m[f.name] = v
		}
		return m
	case avroArrayOp:
		return sc.array(n, path)
	case avroMapOp:
		return sc.mapValue(n, path)
	}
	return nil
}

// timestamp reads a timestamp (UTC) or local timestamp (its wall clock
// read as UTC) in milliseconds or microseconds.
func (sc *avroScan) timestamp(n *avroNode, path string) any {
	v := sc.r.ReadLong()
	if sc.stopped() {
		return nil
	}
	if n.op == avroLocalMicrosOp || (n.op == avroTimestampOp && !n.millis) {
		return time.UnixMicro(v).UTC()
	}
	if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
		what := "timestamp-millis"
		if n.op == avroLocalMillisOp {
			what = "local-timestamp-millis"
		}
		sc.fail(avroBadValue(path, "%s %d is out of range (microseconds overflow 64 bits)", what, v))
		return nil
	}
	return time.UnixMilli(v).UTC()
}

// bytes reads a string's or bytes' length, checked against the payload,
// and its bytes, into a slice of their own.
func (sc *avroScan) bytes(path, suffix string) []byte {
	l := sc.r.ReadLong()
	if sc.stopped() {
		return nil
	}
	if l < 0 || l > sc.n {
		sc.fail(avroBadValue(path+suffix, "a length of %d bytes in a %d-byte payload", l, sc.n))
		return nil
	}
	b := make([]byte, l)
	sc.r.Read(b)
	return b
}

// text reads a string, valid UTF-8, or a uuid in its canonical form.
func (sc *avroScan) text(n *avroNode, path string) any {
	b := sc.bytes(path, "")
	if sc.stopped() {
		return nil
	}
	if n.op == avroUUIDOp {
		u, err := uuid.ParseBytes(b)
		if err != nil {
			sc.fail(avroBadValue(path, "not a UUID: %s", avroQuote(string(b))))
			return nil
		}
		return u.String()
	}
	if !utf8.Valid(b) {
		sc.fail(avroBadValue(path, "string %s is not valid UTF-8", avroQuote(string(b))))
		return nil
	}
	return avroString(b)
}

// avroString is b as a string without a copy: b was allocated for it
// and nothing else holds it.
func avroString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// decimal reads a decimal's unscaled two's-complement integer (bytes, or
// a fixed of n.size) and renders it with exactly n.scale digits after the
// point, refusing one with more digits than n.prec.
func (sc *avroScan) decimal(n *avroNode, path string) any {
	var b []byte
	if n.size > 0 {
		b = make([]byte, n.size)
		sc.r.Read(b)
	} else {
		b = sc.bytes(path, "")
	}
	if sc.stopped() {
		return nil
	}
	var digits string
	if len(b) <= 8 {
		var u int64
		for _, c := range b {
			u = u<<8 | int64(c)
		}
		if len(b) > 0 && len(b) < 8 && b[0]&0x80 != 0 {
			u -= 1 << (8 * len(b)) // the sign bit of a shorter integer
		}
		digits = strconv.FormatInt(u, 10)
	} else {
		x := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		digits = x.String()
	}
	if len(strings.TrimPrefix(digits, "-")) > n.prec {
		sc.fail(avroBadValue(path, "decimal %s does not fit decimal(%d,%d)", pqio.PlacePoint(digits, n.scale), n.prec, n.scale))
		return nil
	}
	return pqio.PlacePoint(digits, n.scale)
}

// blockCount reads the count of an array's or a map's next block (a
// negative count is followed by the block's size in bytes), checked
// against the payload; 0 ends the value.
func (sc *avroScan) blockCount(path string) int64 {
	count := sc.r.ReadLong()
	if sc.stopped() || count == 0 {
		return 0
	}
	if count < 0 {
		size := sc.r.ReadLong()
		if sc.stopped() {
			return 0
		}
		if count == math.MinInt64 || size < 0 || size > sc.n {
			sc.fail(avroBadValue(path, "a block of %d items and %d bytes in a %d-byte payload", count, size, sc.n))
			return 0
		}
		count = -count
	}
	if count > sc.n {
		sc.fail(avroBadValue(path, "a block of %d items in a %d-byte payload", count, sc.n))
		return 0
	}
	return count
}

// array reads an array's blocks.
func (sc *avroScan) array(n *avroNode, path string) any {
	out := []any{}
	for count := sc.blockCount(path); count > 0; count = sc.blockCount(path) {
		for range count {
			v := sc.slotValue(n.elem)
			if sc.stopped() {
				return nil
			}
			out = append(out, v)
		}
	}
	return out
}

// mapValue reads a map's blocks into its entries, sorted by key; of a key
// written twice, the last value is the one kept.
func (sc *avroScan) mapValue(n *avroNode, path string) any {
	out := []pqio.MapEntry{}
	for count := sc.blockCount(path); count > 0; count = sc.blockCount(path) {
		for range count {
			k := sc.bytes(path, ".key")
			if sc.stopped() {
				return nil
			}
			if !utf8.Valid(k) {
				sc.fail(avroBadValue(path, "map key %s is not valid UTF-8", avroQuote(string(k))))
				return nil
			}
			v := sc.slotValue(n.elem)
			if sc.stopped() {
				return nil
			}
			out = append(out, pqio.MapEntry{Key: avroString(k), Value: v})
		}
	}
	slices.SortStableFunc(out, func(a, b pqio.MapEntry) int { return strings.Compare(a.Key.(string), b.Key.(string)) })
	last := out[:0]
	for i, e := range out {
		if i+1 < len(out) && out[i+1].Key == e.Key {
			continue
		}
		last = append(last, e)
	}
	return last
}
