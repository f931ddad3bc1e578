package ingest

import (
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// decodeOne decodes one JSON record against schema: its row, or why it is
// quarantined.
func decodeOne(t *testing.T, schema, rec string) decoded {
	t.Helper()
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(s, DefaultOptions())
	return d.decodeJSON(rawRecord{b: []byte(rec), size: len(rec)})
}

// String escapes decode per RFC 8259: a surrogate pair to its one
// character, and a lone surrogate, which is no character, is quarantined
// rather than stored as its six characters (issue 13, item 7) — as a byte
// that is not UTF-8 is. So is an escape the RFC does not have, which was
// kept as its text. Anywhere in the record: a field the table does not
// keep, a name.
func TestJSONEscapesDecodePerRFC8259(t *testing.T) {
	cases := []struct {
		name, rec string
		want      string // the value of s, or the start of the reason
		bad       bool
	}{
		{"a surrogate pair", `{"s":"\ud83d\ude00"}`, "\U0001F600", false},
		{"a surrogate pair in capitals", `{"s":"x\uD83D\uDE00y"}`, "x\U0001F600y", false},
		{"the escapes RFC 8259 has", `{"s":"\u00e9\n\t\"\\\/\b\f\r"}`, "\u00e9\n\t\"\\/\b\f\r", false},
		{"an escaped backslash before u", `{"s":"\\ud800"}`, `\ud800`, false},
		{"a lone high surrogate", `{"s":"\ud800"}`, `string holds \ud800, the first half`, true},
		{"a lone high surrogate at the end", `{"s":"abc\udbff"}`, `string holds \udbff, the first half`, true},
		{"a lone low surrogate", `{"s":"\udc00"}`, `string holds \udc00, the second half`, true},
		{"two low surrogates", `{"s":"\udc00\udc00"}`, `string holds \udc00, the second half`, true},
		{"a high surrogate before another escape", `{"s":"\ud800\u0041"}`, `string holds \ud800, the first half`, true},
		{"a high surrogate before a character", `{"s":"\ud800A"}`, `string holds \ud800, the first half`, true},
		{"a lone surrogate in a field the table does not keep", `{"s":"ok","other":"\ud800"}`, `string holds \ud800`, true},
		{"a lone surrogate in a name", `{"s":"ok","\ud800":1}`, `string holds \ud800`, true},
		{"an escape RFC 8259 does not have", `{"s":"\x41"}`, `malformed JSON: invalid escape "\\x"`, true},
		{"a short \\u escape", `{"s":"\u12"}`, `malformed JSON: invalid escape "\\u12\"}"`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, schema := range []string{"s:string?", "s:string?,_extra:string?"} {
				got := decodeOne(t, schema, c.rec)
				switch {
				case c.bad && got.bad == nil:
					t.Fatalf("%s: stored %q, want it quarantined", schema, got.row[0])
				case c.bad && !strings.HasPrefix(got.bad.Error(), c.want):
					t.Fatalf("%s: reason %q, want %q", schema, got.bad, c.want)
				case !c.bad && got.bad != nil:
					t.Fatalf("%s: quarantined: %v", schema, got.bad)
				case !c.bad && got.row[0] != c.want:
					t.Fatalf("%s: stored %q, want %q", schema, got.row[0], c.want)
				}
			}
		})
	}
	// A pair kept in the _extra column is its character too.
	got := decodeOne(t, "s:string?,_extra:string?", `{"s":"x","e":"\ud83d\ude00"}`)
	if got.bad != nil || got.row[1] != `{"e":"`+"\U0001F600"+`"}` {
		t.Fatalf("_extra: %q, %v", got.row, got.bad)
	}
}
