package ingest

import (
	"bytes"
)

// fastjson parses what RFC 8259 allows, but reads string escapes on a
// best effort: an escape the RFC does not have (\x, \u12) is kept as its
// text, a lone surrogate (\ud800, a UTF-16 half that encodes no
// character) as its six characters, and a high surrogate followed by
// another escape (\ud800\u0041) as U+FFFD, eating the character after it.
// checkEscapes refuses those records instead, as checkRaw refuses bytes
// that are not UTF-8: a value is never stored other than as written.
// scanFlat takes no record with an escape, so this is the tree path's
// alone, and a record without a backslash pays one IndexByte.

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
