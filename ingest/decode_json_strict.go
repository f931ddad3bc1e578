package ingest

import (
	"bytes"
	"slices"

	"github.com/valyala/fastjson"
)

// fastjson's parser takes more than RFC 8259 allows: numbers such as
// `.`, `1.`, `.5`, `01`, `+1`, `1e`, `inf` and `nan` (as 0, 1, 0.5, 1,
// ...), where encoding/json and every other reader refuse the record;
// checkNumbers refuses them too. (One leniency is kept on both paths: a
// raw control character inside a string, which the RFC wants escaped, is
// taken and stored as written — nothing is lost or changed.) It reads
// string escapes on a best effort: an escape the RFC does not have (\x, \u12) is kept as its
// text, a lone surrogate (\ud800, a UTF-16 half that encodes no
// character) as its six characters, and a high surrogate followed by
// another escape (\ud800\u0041) as U+FFFD, eating the character after it.
// checkEscapes refuses those records instead, as checkRaw refuses bytes
// that are not UTF-8: a value is never stored other than as written.
// flatScan takes no record with such an escape (it leaves it to the
// tree path, which then quarantines it), and a record without a
// backslash pays one IndexByte here.

// checkEscapes returns why the escapes of rec, a JSON text fastjson has
// parsed, are not RFC 8259's, or nil.
func checkEscapes(rec []byte) error {
	i := bytes.IndexByte(rec, '\\')
	for i >= 0 {
		// A parsed text has backslashes only inside strings, so rec[i]
		// starts an escape.
		n, err := escapeLen(rec[i:])
		if err != nil {
			return err
		}
		i += n
		j := bytes.IndexByte(rec[i:], '\\')
		if j < 0 {
			break
		}
		i += j
	}
	return nil
}

// escapeLen returns the length of the escape at the start of b, or why it
// is not one.
func escapeLen(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, badRecord("malformed JSON: a backslash ends the text")
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		return 0, badRecord("malformed JSON: invalid escape %q", b[:2])
	}
	r, ok := hex4(b[2:])
	if !ok {
		return 0, badRecord("malformed JSON: invalid escape %q", b[:min(len(b), 6)])
	}
	switch {
	case r >= 0xdc00 && r <= 0xdfff:
		return 0, badRecord("string holds %s, the second half of a UTF-16 surrogate pair without its first: not a character", b[:6])
	case r >= 0xd800 && r < 0xdc00:
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if r2, ok := hex4(b[8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
				return 12, nil // a pair: one character
			}
		}
		return 0, badRecord("string holds %s, the first half of a UTF-16 surrogate pair without its second: not a character", b[:6])
	}
	return 6, nil
}

// hex4 is the value of the four hexadecimal digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// RFC 8259 says only that the names of an object SHOULD be unique, and
// readers differ on a name given twice: fastjson and flatScan read the
// first, Go's encoding/json the last, others refuse the text. Such a
// record is ambiguous, so it is quarantined, naming the name, wherever its
// stored row depends on which one is read: a column's name, or with an
// _extra column, which keeps the record's other fields as JSON, any name,
// in nested objects too. A name twice that the table never keeps changes
// nothing stored, and the record is taken.

// duplicateKey is the reason for a record holding name twice.
func duplicateKey(name []byte) error {
	return badRecord("duplicate key %s: the record is ambiguous", quote(string(name)))
}

// dupName returns a name that object o holds twice, or nil. keys is
// scratch space, reused from call to call.
func dupName(o *fastjson.Object, keys *[][]byte) []byte {
	if o.Len() < 2 {
		return nil
	}
	ks := (*keys)[:0]
	o.Visit(func(k []byte, _ *fastjson.Value) { ks = append(ks, k) })
	*keys = ks
	if len(ks) <= 16 {
		for i := 1; i < len(ks); i++ {
			for _, k := range ks[:i] {
				if bytes.Equal(ks[i], k) {
					return ks[i]
				}
			}
		}
		return nil
	}
	slices.SortFunc(ks, bytes.Compare)
	for i := 1; i < len(ks); i++ {
		if bytes.Equal(ks[i], ks[i-1]) {
			return ks[i]
		}
	}
	return nil
}

// checkNumbers returns why a number of v, a tree fastjson parsed, is not
// an RFC 8259 number, or nil. num is scratch room for a number's text.
func checkNumbers(v *fastjson.Value, num *[]byte) error {
	switch v.Type() {
	case fastjson.TypeNumber:
		*num = v.MarshalTo((*num)[:0])
		if !validNumber(*num) {
			return badRecord("malformed JSON: invalid number %q", *num)
		}
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, e := range a {
			if err := checkNumbers(e, num); err != nil {
				return err
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		var err error
		o.Visit(func(_ []byte, e *fastjson.Value) {
			if err == nil {
				err = checkNumbers(e, num)
			}
		})
		return err
	}
	return nil
}

// validNumber reports whether b is a number of RFC 8259's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(b)
}
