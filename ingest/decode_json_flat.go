package ingest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Nearly every event record is one JSON object whose fields are strings
// (with or without escapes), numbers, true, false, null, or a nested
// object or array a string column keeps as text. fastjson builds a tree
// of such a record and then looks each column up in it, a large share of
// an ingest's CPU. flatScan reads it in one pass straight into the
// columns' fields, and gives up on anything else — an escaped name, an
// escape RFC 8259 does not have, a lone surrogate, a name twice, deep
// nesting, bad syntax — which fastjson then reads as before. It accepts
// only text that is valid JSON and that fastjson reads to the same
// values, so which of the two read a record never changes what the record
// becomes (TestFlatScanAgreesWithFastjson, TestFlatRowsMatchTreeRows,
// FuzzFlatScan). (encoding/json/v2's jsontext, json-iterator and
// simdjson-go were all measured slower than fastjson on these records.)

// flatField is one field of a record as flatScan found it: its type, and
// a string's unescaped bytes, a number's text, or a nested value's compact
// JSON text (see compact). b points into the record or into the
// scan's scratch buffer, and is valid until the next scan.
type flatField struct {
	t jsonType
	b []byte
}

// flatNames are the column names flatScan looks for.
type flatNames struct {
	names []string
	// plain[i]: names[i] holds no quote or backslash, so that a name
	// in a record is names[i] exactly when its bytes are.
	plain []bool
}

func newFlatNames(names []string) flatNames {
	fn := flatNames{names: names, plain: make([]bool, len(names))}
	for i, n := range names {
		fn.plain[i] = !strings.ContainsAny(n, "\"\\")
	}
	return fn
}

// flatScan is the one-pass scanner of a record, with its scratch space.
type flatScan struct {
	flatNames
	buf  []byte   // unescaped strings and compacted nested values
	keys [][]byte // the names of the nested objects being read, for dupName's check
}

func newFlatScan(names []string) *flatScan {
	return &flatScan{flatNames: newFlatNames(names)}
}

// The limits past which flatScan leaves a nested value to fastjson: a
// deeper one, or an object with more names, is rare, and fastjson's tree
// reads it as well.
const (
	flatMaxDepth = 64
	flatMaxNames = 64
)

// scan reads rec as one JSON object and sets fields[i] to the field named
// names[i] (jsonAbsent when there is none). Fields of other names are
// skipped. It returns false, with fields undefined, when rec is not such
// an object as flatScan reads, or names a column twice: the tree path
// then reads it, and quarantines it as ambiguous (see dupName).
func (s *flatScan) scan(rec []byte, fields []flatField) bool {
	names := s.names
	clear(fields)
	s.buf, s.keys = s.buf[:0], s.keys[:0]
	i := skipWS(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return false
	}
	i = skipWS(rec, i+1)
	if i < len(rec) && rec[i] == '}' {
		return skipWS(rec, i+1) == len(rec)
	}
	next := 0 // the column the next name most likely is
	for {
		if i >= len(rec) || rec[i] != '"' {
			return false
		}
		// Records mostly list the columns in order: the expected name is
		// compared in place, without searching for the name's end.
		var col, end int
		if next < len(names) && s.plain[next] && hasName(rec, i+1, names[next]) {
			col, end = next, i+1+len(names[next])+1
		} else {
			name, e, ok := plainString(rec, i+1)
			if !ok {
				return false
			}
			col, end = findName(names, name), e
		}
		i = skipWS(rec, end)
		if i >= len(rec) || rec[i] != ':' {
			return false
		}
		f, e, ok := s.value(rec, skipWS(rec, i+1), col >= 0)
		if !ok {
			return false
		}
		i = e
		if col >= 0 {
			if fields[col].t != jsonAbsent {
				return false // a column named twice
			}
			fields[col] = f
			next = col + 1
		}
		i = skipWS(rec, i)
		if i >= len(rec) {
			return false
		}
		switch rec[i] {
		case ',':
			i = skipWS(rec, i+1)
		case '}':
			return skipWS(rec, i+1) == len(rec)
		default:
			return false
		}
	}
}

// value reads the value at b[i]: a string (unescaped), a number (its
// text: what follows it is the caller's to check), true, false, null, or
// a nested object or array. keep says the field is a column's: a nested
// value is then checked for a name given twice and its compact text
// returned; one that is skipped is only checked to be valid. It returns
// the field and the index after it; ok is false for anything flatScan
// leaves to fastjson.
func (s *flatScan) value(b []byte, i int, keep bool) (f flatField, end int, ok bool) {
	if i >= len(b) {
		return f, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		str, j, isStr := s.str(b, i+1)
		return flatField{t: jsonString, b: str}, j, isStr
	case c == '-' || (c >= '0' && c <= '9'):
		j, isNum := number(b, i)
		if !isNum {
			return f, 0, false
		}
		return flatField{t: jsonNumber, b: b[i:j]}, j, true
	case c == '{' || c == '[':
		t := jsonObject
		if c == '[' {
			t = jsonArray
		}
		j, spaced, isValid := s.nested(b, i, 0, keep)
		if !isValid {
			return f, 0, false
		}
		text := b[i:j]
		if keep && spaced {
			text = s.compact(text)
		}
		return flatField{t: t, b: text}, j, true
	case bytes.HasPrefix(b[i:], []byte("true")):
		return flatField{t: jsonTrue}, i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return flatField{t: jsonFalse}, i + 5, true
	case bytes.HasPrefix(b[i:], []byte("null")):
		return flatField{t: jsonNull}, i + 4, true
	}
	return f, 0, false
}

// number returns the index after the number at b[i], as RFC 8259 writes
// one: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. ok is false when
// there is none. (fastjson takes any run of digits, signs, points and
// exponents; past a number of this form comes a byte outside that set, or
// the record is not valid JSON: so both read the same text.)
func number(b []byte, i int) (end int, ok bool) {
	if b[i] == '-' {
		i++
	}
	d := i
	i = skipDigits(b, i)
	if i == d || (b[d] == '0' && i-d > 1) {
		return 0, false // no digit, or a leading zero
	}
	if i < len(b) && b[i] == '.' {
		f := i + 1
		if i = skipDigits(b, f); i == f {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		e := i
		if i = skipDigits(b, e); i == e {
			return 0, false
		}
	}
	return i, true
}

// skipDigits returns the index of the first byte at or after i that is not
// a decimal digit.
func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	// Any byte above the space ends it at once: records mostly hold no
	// whitespace at all.
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the string whose text starts at b[start], just after
// its opening quote: its bytes and the index after its closing quote. ok
// is false for a string with an escape, or without its closing quote.
// (Raw control characters pass: fastjson passes them too.)
func plainString(b []byte, start int) (s []byte, end int, ok bool) {
	n := bytes.IndexByte(b[start:], '"')
	if n < 0 {
		return nil, 0, false
	}
	s = b[start : start+n]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	return s, start + n + 1, true
}

// str reads the string whose text starts at b[start], just after its
// opening quote: its bytes unescaped, and the index after its closing
// quote. A string without escapes is returned in place; one with escapes
// is unescaped into s.buf. ok is false for a string without its closing
// quote, or with an escape RFC 8259 does not have, or a lone surrogate
// (the tree path quarantines those, see checkEscapes).
func (s *flatScan) str(b []byte, start int) (out []byte, end int, ok bool) {
	k := quoteOrBackslash(b[start:])
	if k < 0 {
		return nil, 0, false
	}
	if b[start+k] == '"' {
		return b[start : start+k], start + k + 1, true
	}
	// Unescaped, the string is no longer than the rest of the record:
	// with that much room, it is written byte by byte, without appends.
	// (Escaped strings hold a backslash every few bytes: copying each
	// stretch between two costs more than the stretch.) The bytes before
	// s.buf's length are never written again, so a larger buffer leaves
	// the fields already scanned where they are.
	mark := len(s.buf)
	if cap(s.buf)-mark < len(b)-start {
		s.buf = slices.Grow(s.buf, len(b)-start)
	}
	dst := s.buf[:cap(s.buf)]
	n := mark + copy(dst[mark:], b[start:start+k])
	for i := start + k; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			s.buf = dst[:n]
			return dst[mark:n:n], i + 1, true
		case c != '\\':
			dst[n] = c
			n, i = n+1, i+1
		case i+1 < len(b) && shortEscape[b[i+1]] != 0:
			dst[n] = shortEscape[b[i+1]]
			n, i = n+1, i+2
		default:
			u, l, isValid := unescape(dst[n:n], b[i:]) // within dst: at most as long as the escape
			if !isValid {
				return nil, 0, false
			}
			n, i = n+len(u), i+l
		}
	}
	return nil, 0, false
}

// shortEscape is the character of a two-byte escape by its second byte,
// or 0.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// quoteOrBackslash returns the index of the first quote or backslash in
// b, or -1. It reads eight bytes at a time: the strings of a record are
// mostly short, and escaped ones hold a backslash every few bytes, where
// two calls of bytes.IndexByte a segment cost more than the segment.
func quoteOrBackslash(b []byte) int {
	const ones = 0x0101010101010101
	const highs = 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := w^(ones*'"'), w^(ones*'\\')
		// A byte of q or bs is zero where w holds a quote or a
		// backslash; (x-ones)&^x&highs flags the lowest zero byte of x
		// exactly (a borrow only flags bytes above it).
		if m := ((q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' {
			return i
		}
	}
	return -1
}

// unescape appends the character of the escape at the start of e (a
// backslash) to dst, and returns the escape's length. ok is false for an
// escape RFC 8259 does not have and for a lone surrogate.
func unescape(dst, e []byte) (out []byte, n int, ok bool) {
	if len(e) < 2 {
		return dst, 0, false
	}
	switch e[1] {
	case '"', '\\', '/':
		return append(dst, e[1]), 2, true
	case 'b':
		return append(dst, '\b'), 2, true
	case 'f':
		return append(dst, '\f'), 2, true
	case 'n':
		return append(dst, '\n'), 2, true
	case 'r':
		return append(dst, '\r'), 2, true
	case 't':
		return append(dst, '\t'), 2, true
	case 'u':
	default:
		return dst, 0, false
	}
	r, ok := hex4(e[2:])
	switch {
	case !ok || (r >= 0xdc00 && r <= 0xdfff):
		return dst, 0, false
	case r < 0xd800 || r > 0xdfff:
		return utf8.AppendRune(dst, r), 6, true
	}
	if len(e) < 12 || e[6] != '\\' || e[7] != 'u' {
		return dst, 0, false
	}
	r2, ok := hex4(e[8:])
	if !ok || r2 < 0xdc00 || r2 > 0xdfff {
		return dst, 0, false
	}
	return utf8.AppendRune(dst, utf16.DecodeRune(r, r2)), 12, true
}

// nested checks the object or array at b[i] and returns the index after
// it, and whether whitespace stands between its tokens. Its strings are
// checked, not unescaped. keep: a name given twice in an object makes ok
// false (the tree path quarantines the record as ambiguous).
func (s *flatScan) nested(b []byte, i, depth int, keep bool) (end int, spaced, ok bool) {
	if depth >= flatMaxDepth {
		return 0, false, false
	}
	obj := b[i] == '{'
	closing := byte(']')
	if obj {
		closing = '}'
	}
	keys := len(s.keys) // this object's names follow; dropped when it ends
	j := skipWS(b, i+1)
	spaced = j > i+1
	if j < len(b) && b[j] == closing {
		return j + 1, spaced, true
	}
	for {
		if obj {
			if j >= len(b) || b[j] != '"' {
				return 0, false, false
			}
			// Names are short: found eight bytes at a time.
			n := quoteOrBackslash(b[j+1:])
			if n < 0 || b[j+1+n] != '"' {
				return 0, false, false // an escaped name: the tree path compares names unescaped
			}
			name, e := b[j+1:j+1+n], j+1+n+1
			if keep && hasControl(name) {
				return 0, false, false
			}
			if keep {
				if len(s.keys)-keys >= flatMaxNames {
					return 0, false, false
				}
				for _, k := range s.keys[keys:] {
					if bytes.Equal(k, name) {
						return 0, false, false
					}
				}
				s.keys = append(s.keys, name)
			}
			k := skipWS(b, e)
			if k >= len(b) || b[k] != ':' {
				return 0, false, false
			}
			j = skipWS(b, k+1)
			spaced = spaced || k > e || j > k+1
		}
		if j >= len(b) {
			return 0, false, false
		}
		var e int
		switch c := b[j]; {
		case c == '"':
			n, isStr := stringEnd(b, j+1)
			if !isStr || (keep && hasControl(b[j+1:n-1])) {
				return 0, false, false
			}
			e = n
		case c == '{' || c == '[':
			var sp, isValid bool
			if e, sp, isValid = s.nested(b, j, depth+1, keep); !isValid {
				return 0, false, false
			}
			spaced = spaced || sp
		default:
			f, n, isScalar := s.value(b, j, false)
			if !isScalar || f.t == jsonString {
				return 0, false, false
			}
			e = n
		}
		j = skipWS(b, e)
		spaced = spaced || j > e
		if j >= len(b) {
			return 0, false, false
		}
		switch b[j] {
		case ',':
			k := j
			j = skipWS(b, j+1)
			spaced = spaced || j > k+1
		case closing:
			s.keys = s.keys[:keys]
			return j + 1, spaced, true
		default:
			return 0, false, false
		}
	}
}

// stringEnd returns the index after the closing quote of the string whose
// text starts at b[start]. ok is false when it has none, or holds an
// escape RFC 8259 does not have or a lone surrogate.
func stringEnd(b []byte, start int) (end int, ok bool) {
	i := start
	for {
		k := quoteOrBackslash(b[i:])
		if k < 0 {
			return 0, false
		}
		i += k
		if b[i] == '"' {
			return i + 1, true
		}
		l, err := escapeLen(b[i:])
		if err != nil {
			return 0, false
		}
		i += l
	}
}

// hasControl reports whether s holds a raw control character, which RFC
// 8259 does not allow in a string. fastjson takes it, and a string field
// keeps it; a nested value kept as JSON text must not hold it, and the
// tree path refuses it there too.
func hasControl(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// compact returns the JSON text v (valid, as nested checked it) without
// the whitespace between its tokens, copied into s.buf: strings and
// numbers as written.
func (s *flatScan) compact(v []byte) []byte {
	mark := len(s.buf)
	in := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case in && c == '\\':
			s.buf = append(s.buf, c, v[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			continue
		}
		s.buf = append(s.buf, c)
	}
	return s.buf[mark:len(s.buf):len(s.buf)]
}

// hasName reports whether the string whose text starts at b[start] is
// name, a name without quotes or backslashes.
func hasName(b []byte, start int, name string) bool {
	end := start + len(name)
	return end < len(b) && b[end] == '"' && string(b[start:end]) == name
}

// findName returns the index of name in names, or -1. (The name expected
// next was already compared in place: a name with a quote or backslash
// never reaches here, as plainString refuses escapes.)
func findName(names []string, name []byte) int {
	for k, n := range names {
		if n == string(name) {
			return k
		}
	}
	return -1
}
