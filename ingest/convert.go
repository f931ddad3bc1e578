package ingest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/google/uuid"
	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// recordError is why one record is quarantined. Its text is the reason
// stored in the quarantine table.
type recordError struct{ reason string }

func (e *recordError) Error() string { return e.reason }

func badRecord(format string, args ...any) error {
	return &recordError{reason: fmt.Sprintf(format, args...)}
}

// ErrNestedColumn is returned, wrapped, for a landing file whose format
// has no nested values (CSV) when the table declares a nested column
// (struct, list, map): the file fails whole, naming the column.
var ErrNestedColumn = errors.New("nested column")

// checkColumnTypes refuses a schema with a column of a type the
// converters do not know.
func checkColumnTypes(s catalog.Schema) error {
	for _, c := range s.Columns {
		switch c.Type.Kind {
		case catalog.KindString, catalog.KindUUID, catalog.KindInt32, catalog.KindInt64, catalog.KindFloat64,
			catalog.KindBool, catalog.KindDate, catalog.KindTimestamp, catalog.KindDecimal, catalog.KindBinary:
		case catalog.KindStruct, catalog.KindList, catalog.KindMap:
			if err := checkColumnTypes(catalog.Schema{Columns: c.Type.Fields}); err != nil {
				return fmt.Errorf("column %s: %w", c.Name, err)
			}
		default:
			return fmt.Errorf("column %s: type %s is not supported by ingest", c.Name, c.Type)
		}
	}
	return nil
}

// converter turns one field of a record into a column's Go value (see
// catalog's values.go), or says why it cannot.
type converter struct {
	col  catalog.Column
	unit EpochUnit
	slab *strSlab    // the decoder's, for the text fields kept
	box  *boxes      // the decoder's, for the values it returns
	nest *nestedConv // a struct, list or map column's (decode_json_nested.go)
}

func badValue(c *catalog.Column, why string, args ...any) error {
	return badRecord("column %q (%s): %s", c.Name, c.Type, fmt.Sprintf(why, args...))
}

// quote renders a bad value for a reason: quoted, and cut short, so a
// reason stays one readable line.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}

// jsonType is the type of a JSON field as the converters read it.
type jsonType uint8

const (
	jsonAbsent jsonType = iota // the record has no such field
	jsonNull
	jsonString
	jsonNumber
	jsonTrue
	jsonFalse
	jsonArray
	jsonObject
)

// typeOfJSON maps fastjson's types onto ours.
func typeOfJSON(v *fastjson.Value) jsonType {
	if v == nil {
		return jsonAbsent
	}
	switch v.Type() {
	case fastjson.TypeString:
		return jsonString
	case fastjson.TypeNumber:
		return jsonNumber
	case fastjson.TypeTrue:
		return jsonTrue
	case fastjson.TypeFalse:
		return jsonFalse
	case fastjson.TypeArray:
		return jsonArray
	case fastjson.TypeObject:
		return jsonObject
	}
	return jsonNull
}

// fromJSON converts a JSON value parsed by fastjson; v nil means the field
// is absent. num is scratch space for a number's text or a nested value's,
// keys dupName's.
func (c *converter) fromJSON(v *fastjson.Value, num *[]byte, keys *[][]byte) (any, error) {
	if c.nest != nil {
		return c.nest.value(v)
	}
	t := typeOfJSON(v)
	var b []byte
	switch t {
	case jsonString:
		b, _ = v.StringBytes()
	case jsonNumber:
		*num = v.MarshalTo((*num)[:0])
		b = *num
	case jsonObject, jsonArray:
		if c.col.Type.Kind != catalog.KindString {
			break
		}
		// Before anything reads v's strings or names: until then
		// fastjson keeps them as written, and MarshalTo writes them so.
		*num = v.MarshalTo((*num)[:0])
		b = *num
		// fastjson takes what RFC 8259 does not (NaN, 1.2.3, a raw
		// control character in a string); the text kept must be JSON.
		if !json.Valid(b) {
			return nil, badValue(&c.col, "holds a nested value that is not valid JSON")
		}
		if k := nestedDup(v, keys); k != nil {
			return nil, duplicateKey(k)
		}
	}
	return c.fromToken(t, b)
}

// nestedDup returns a name that an object in v holds twice, or nil.
func nestedDup(v *fastjson.Value, keys *[][]byte) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		if k := dupName(o, keys); k != nil {
			return k
		}
		var dup []byte
		o.Visit(func(_ []byte, x *fastjson.Value) {
			if dup == nil {
				dup = nestedDup(x, keys)
			}
		})
		return dup
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, x := range a {
			if k := nestedDup(x, keys); k != nil {
				return k
			}
		}
	}
	return nil
}

// fromToken converts a JSON field of type t; b is a string's unescaped
// bytes or a number's text, and is not kept.
func (c *converter) fromToken(t jsonType, b []byte) (any, error) {
	col := &c.col
	switch t {
	case jsonAbsent:
		if col.Nullable {
			return nil, nil
		}
		return nil, badValue(col, "required but missing")
	case jsonNull:
		if col.Nullable {
			return nil, nil
		}
		return nil, badValue(col, "null but the column is not nullable")
	}
	if c.nest != nil {
		return c.nest.token(t, b)
	}
	switch col.Type.Kind {
	case catalog.KindInt32, catalog.KindInt64:
		if t != jsonNumber {
			return nil, badValue(col, "want an integer, got %s", jsonKind(t))
		}
		// The common case without a new string; anything fastfloat (the
		// parser of fastjson's numbers) refuses (a fraction, an exponent,
		// out of range) takes the text path, which names the problem.
		if n, err := fastfloat.ParseInt64(view(b)); err == nil {
			if col.Type.Kind == catalog.KindInt64 {
				return c.box.i64(n), nil
			}
			if n == int64(int32(n)) {
				return c.box.i32(int32(n)), nil
			}
		}
		return c.fromText(string(b))
	case catalog.KindFloat64:
		if t != jsonNumber {
			return nil, badValue(col, "want a number, got %s", jsonKind(t))
		}
		f, err := fastfloat.Parse(view(b))
		if err != nil || math.IsInf(f, 0) {
			return nil, badValue(col, "number %s out of range", b)
		}
		return f, nil
	case catalog.KindBool:
		switch t {
		case jsonTrue:
			return true, nil
		case jsonFalse:
			return false, nil
		}
		return nil, badValue(col, "want true or false, got %s", jsonKind(t))
	case catalog.KindTimestamp:
		if t == jsonNumber {
			return c.epoch(string(b))
		}
	case catalog.KindDecimal:
		if t == jsonNumber {
			return c.fromText(string(b))
		}
	}
	if (t == jsonObject || t == jsonArray) && col.Type.Kind == catalog.KindString {
		// A nested value in a string column is kept as its JSON text,
		// compact: whitespace between tokens dropped, strings and
		// numbers as written; UTF-8, as the record is.
		return c.box.str(c.slab.str(b)), nil
	}
	if t != jsonString {
		return nil, badValue(col, "want a string, got %s", jsonKind(t))
	}
	switch col.Type.Kind {
	case catalog.KindTimestamp, catalog.KindDate, catalog.KindBinary:
		// Parsed (or base64-decoded) into a new value: the text need not
		// be kept.
		return c.fromText(view(b))
	case catalog.KindString:
		// A JSON record is checked to be UTF-8 before it is decoded
		// (checkRaw), and a string of it is too: a slice between quotes,
		// or unescaped, characters and valid escapes (checkEscapes).
		return c.box.str(c.slab.str(b)), nil
	}
	return c.fromText(c.slab.str(b))
}

// jsonKind names a JSON type in a reason.
func jsonKind(t jsonType) string {
	switch t {
	case jsonString:
		return "a string"
	case jsonNumber:
		return "a number"
	case jsonTrue, jsonFalse:
		return "a boolean"
	case jsonArray:
		return "an array"
	case jsonObject:
		return "an object"
	}
	return "null"
}

// fromText converts the text of a field (a CSV field, a JSON string).
func (c *converter) fromText(s string) (any, error) {
	col := &c.col
	switch col.Type.Kind {
	case catalog.KindString:
		if !utf8.ValidString(s) {
			return nil, badValue(col, "invalid UTF-8")
		}
		return c.box.str(s), nil
	case catalog.KindUUID:
		if isCanonicalUUID(s) {
			return c.box.str(s), nil // already as stored: no parse, no new string
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, badValue(col, "not a UUID: %s", quote(s))
		}
		return u.String(), nil
	case catalog.KindInt32, catalog.KindInt64:
		bits := 64
		if col.Type.Kind == catalog.KindInt32 {
			bits = 32
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return nil, badValue(col, "%s out of range", quote(s))
			}
			return nil, badValue(col, "not an integer: %s", quote(s))
		}
		if bits == 32 {
			return c.box.i32(int32(n)), nil
		}
		return c.box.i64(n), nil
	case catalog.KindTimestamp:
		// The common form first: no text is both it and a number.
		if ts, ok := parseUTCTimestamp(s); ok {
			return c.box.time(ts), nil
		}
		if isNumber(s) {
			return c.epoch(s)
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, badValue(col, "not an RFC 3339 timestamp nor an epoch number: %s", quote(s))
		}
		// An offset can carry the last day of year 9999 into year
		// 10000, or 0001-01-01 back into year 0; and year 0000 parses.
		if ts = ts.UTC().Truncate(time.Microsecond); !inRange(ts) {
			return nil, badValue(col, "%s is %s", quote(s), outOfRange)
		}
		return ts, nil
	case catalog.KindDate:
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, badValue(col, "not a date (YYYY-MM-DD): %s", quote(s))
		}
		if !inRange(d) { // year 0000 parses
			return nil, badValue(col, "%s is %s", quote(s), outOfRange)
		}
		return d, nil
	case catalog.KindBinary:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, badValue(col, "not standard base64")
		}
		return b, nil
	}
	v, err := pqio.ParseValue(col.Type, s)
	if err != nil {
		return nil, badValue(col, "%s", strings.TrimPrefix(err.Error(), "parse "+col.Type.String()+" "))
	}
	return v, nil
}

// The range of the timestamps and dates a table takes, whatever a field
// is written as: 0001-01-01 through 9999-12-31, UTC. It is the range of
// RFC 3339's four-digit years, of the date=YYYY-MM-DD partition names, and
// of what Spark, Hive and DuckDB read back; an epoch number or an offset
// may reach past it, and is quarantined rather than making a partition no
// other path would.
var (
	minTime   = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime   = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	minMicros = minTime.UnixMicro()
	maxMicros = maxTime.UnixMicro()
)

// outOfRange is the reason for a timestamp or date outside minTime..maxTime.
const outOfRange = "outside 0001-01-01 through 9999-12-31 (UTC)"

// inRange reports whether t lies in minTime..maxTime.
func inRange(t time.Time) bool { return !t.Before(minTime) && !t.After(maxTime) }

// epoch converts a number of Options.EpochUnit since 1970-01-01 UTC.
func (c *converter) epoch(s string) (any, error) {
	var per int64 = 1e6
	switch c.unit {
	case EpochMilliseconds:
		per = 1e3
	case EpochMicroseconds:
		per = 1
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		// Compared before multiplying, which could overflow. The lower
		// bound is whole seconds, so its quotient is exact; the upper
		// one's rounds toward zero, as it must.
		if n > maxMicros/per || n < minMicros/per {
			return nil, badValue(&c.col, "epoch %s (%s) %s", s, c.unit, outOfRange)
		}
		return time.UnixMicro(n * per).UTC(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return nil, badValue(&c.col, "not an epoch number (%s): %s", c.unit, quote(s))
	}
	m := math.Round(f * float64(per))
	if m < float64(minMicros) || m > float64(maxMicros) {
		return nil, badValue(&c.col, "epoch %s (%s) %s", s, c.unit, outOfRange)
	}
	return time.UnixMicro(int64(m)).UTC(), nil
}

// checkValue validates a value read from a Parquet landing file, already
// in the column's Go representation: what the file's types cannot promise.
func (c *converter) checkValue(v any) (any, error) {
	if c.nest != nil {
		return c.nest.check(v)
	}
	switch x := v.(type) {
	case nil:
		if !c.col.Nullable {
			return nil, badValue(&c.col, "null but the column is not nullable")
		}
	case string:
		if !utf8.ValidString(x) {
			return nil, badValue(&c.col, "invalid UTF-8")
		}
		if c.col.Type.Kind == catalog.KindUUID {
			return c.fromText(x)
		}
	case time.Time:
		// A Parquet timestamp or date is any int64 or int32.
		if !inRange(x) {
			return nil, badValue(&c.col, "%s %s", x.UTC().Format(time.RFC3339Nano), outOfRange)
		}
	}
	return v, nil
}

// isNumber tells whether s is written as a decimal number: an epoch
// rather than a date-time.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	digits := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch >= '0' && ch <= '9':
			digits = true
		case ch == '-' || ch == '+':
			if i > 0 && s[i-1] != 'e' && s[i-1] != 'E' {
				return false
			}
		case ch == '.' || ch == 'e' || ch == 'E':
		default:
			return false
		}
	}
	return digits
}

// isCanonicalUUID reports whether s is a UUID in the form it is stored
// in: 8-4-4-4-12 lowercase hex digits. Other forms uuid.Parse accepts
// (upper case, braces, urn:uuid:) are parsed and rewritten.
//
// It runs on every uuid field ingested, so it checks eight bytes at a
// time: the four hyphens are checked and turned into '0', and then five
// overlapping 8-byte words must hold only 0-9 and a-f.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	b := unsafe.Slice(unsafe.StringData(s), 36)
	const dash = uint64('-' ^ '0')
	w0 := binary.LittleEndian.Uint64(b[0:])
	w1 := binary.LittleEndian.Uint64(b[8:]) ^ (dash | dash<<40)      // hyphens at 8 and 13
	w2 := binary.LittleEndian.Uint64(b[16:]) ^ (dash<<16 | dash<<56) // at 18 and 23
	w3 := binary.LittleEndian.Uint64(b[24:])
	w4 := binary.LittleEndian.Uint64(b[28:])
	return lowerHex8(w0) && lowerHex8(w1) && lowerHex8(w2) && lowerHex8(w3) && lowerHex8(w4)
}

// lowerHex8 reports whether each byte of w is 0-9 or a-f.
func lowerHex8(w uint64) bool {
	const hi = 0x8080808080808080
	const ones = 0x0101010101010101
	if w&hi != 0 {
		return false // a byte >= 0x80
	}
	// With every byte below 0x80, adding 0x80-lo sets a byte's high bit
	// iff it is >= lo, and adding 0x7f-hi iff it is > hi; no carry
	// crosses into the next byte.
	in := func(lo, hi8 uint64) uint64 { return (w + (0x80-lo)*ones) &^ (w + (0x7f-hi8)*ones) & hi }
	return in('0', '9')|in('a', 'f') == hi
}
