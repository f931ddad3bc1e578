package ingest

import (
	"bytes"
	"strings"
)

// Nearly every event record is a flat JSON object: names and strings
// without escapes, integers, true, false and null. fastjson builds a tree
// of such a record and then looks each column up in it, a large share of
// an ingest's CPU. scanFlat reads that shape in one pass
// straight into the columns' fields, and gives up on anything else — an
// escape, a fraction, a nested value, bad syntax — which fastjson then
// reads as before. It accepts only text that is valid JSON and that
// fastjson reads to the same values, so which of the two read a record
// never changes what the record becomes (TestFlatScanAgreesWithFastjson).
// (encoding/json/v2's jsontext, json-iterator and simdjson-go were all
// measured slower than fastjson on these records.)

// flatField is one field of a flat record as scanFlat found it: its type,
// and a string's bytes or a number's text. b points into the record.
type flatField struct {
	t jsonType
	b []byte
}

// flatNames are the column names scanFlat looks for.
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

// scanFlat reads rec as a flat JSON object and sets fields[i] to the field
// named names[i] (jsonAbsent when there is none). Fields of other names
// are skipped. It returns false, with fields undefined, when rec is not
// such an object, or names a column twice: the tree path then quarantines
// it as ambiguous (see dupName).
func scanFlat(rec []byte, fn flatNames, fields []flatField) bool {
	names := fn.names
	clear(fields)
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
		if next < len(names) && fn.plain[next] && hasName(rec, i+1, names[next]) {
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
		f, e, ok := scanScalar(rec, skipWS(rec, i+1))
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

// scanScalar reads the value at b[i]: a string without escapes, an integer
// (-?(0|[1-9][0-9]*): what follows it is the caller's to check), true,
// false or null. It returns the field and the index after it; ok is false
// for any other value.
func scanScalar(b []byte, i int) (f flatField, end int, ok bool) {
	if i >= len(b) {
		return f, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		s, j, isPlain := plainString(b, i+1)
		return flatField{t: jsonString, b: s}, j, isPlain
	case c == '-' || (c >= '0' && c <= '9'):
		j := i
		if c == '-' {
			j++
		}
		d := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == d || (b[d] == '0' && j-d > 1) {
			return f, 0, false // no digit, or a leading zero
		}
		return flatField{t: jsonNumber, b: b[i:j]}, j, true
	case bytes.HasPrefix(b[i:], []byte("true")):
		return flatField{t: jsonTrue}, i + 4, true
	case bytes.HasPrefix(b[i:], []byte("false")):
		return flatField{t: jsonFalse}, i + 5, true
	case bytes.HasPrefix(b[i:], []byte("null")):
		return flatField{t: jsonNull}, i + 4, true
	}
	return f, 0, false
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
