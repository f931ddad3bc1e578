package pqio

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncatedStringBoundsStillBoundTheValue(t *testing.T) {
	long := func(prefix string, r rune, n int) string { return prefix + strings.Repeat(string(r), n) }
	cases := map[string]struct {
		in           string
		min, max     string
		maxUnbounded bool
	}{
		"a short string is its own bound": {in: "abc", min: "abc", max: "abc"},
		"ascii: a prefix, and a prefix with its last byte rounded up": {
			in: long("", 'a', 100), min: long("", 'a', 64), max: long("", 'a', 63) + "b"},
		"a cut never splits a character": {
			in: long("x", 'é', 50), min: long("x", 'é', 31), max: long("x", 'é', 30) + "ê"},
		"rounding up that lengthens a character rounds up the one before instead": {
			in: long("", 0x7F, 100), min: long("", 0x7F, 64), max: long("", 0x7F, 62) + "\u0080"},
		"the last code point is rounded up past it": {
			in: long("ab", utf8.MaxRune, 30), min: long("ab", utf8.MaxRune, 15), max: "ac"},
		"surrogates are skipped": {
			in: long(strings.Repeat("a", 61), 0xD7FF, 10), min: strings.Repeat("a", 61) + "\uD7FF", max: strings.Repeat("a", 61) + "\uE000"},
		"no prefix can be rounded up": {
			in: long("", utf8.MaxRune, 30), min: long("", utf8.MaxRune, 16), maxUnbounded: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			lo, _ := truncateMinString(c.in, StatsTruncateBytes)
			hi, _, ok := truncateMaxString(c.in, StatsTruncateBytes)
			if lo != c.min {
				t.Errorf("min %q, want %q", lo, c.min)
			}
			if ok == c.maxUnbounded || (ok && hi != c.max) {
				t.Errorf("max %q (bounded %v), want %q (bounded %v)", hi, ok, c.max, !c.maxUnbounded)
			}
			for _, b := range []string{lo, hi} {
				if len(b) > StatsTruncateBytes || !utf8.ValidString(b) {
					t.Errorf("bound %q: %d bytes, valid UTF-8 %v", b, len(b), utf8.ValidString(b))
				}
			}
			if lo > c.in || (ok && hi < c.in) {
				t.Errorf("[%q, %q] does not bound the value", lo, hi)
			}
		})
	}
	if b, ok := truncateMaxBytes(bytes.Repeat([]byte{0xFF}, 100), 64); ok {
		t.Errorf("100 0xFF bytes: max %x, want none", b)
	}
	if b, ok := truncateMaxBytes(append([]byte{1, 0xFF}, bytes.Repeat([]byte{0xFF}, 100)...), 64); !ok || !bytes.Equal(b, []byte{2}) {
		t.Errorf("01 FF FF...: max %x, want 02", b)
	}
}
