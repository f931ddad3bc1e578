package ingest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice-data/sluice/catalog"
)

// escapeRunes are the characters the generated strings are made of: ASCII,
// the characters JSON must escape, control characters, two- three- and
// four-byte UTF-8, and the line separators JavaScript treats apart.
var escapeRunes = []rune{'a', 'Z', '0', ' ', '{', '}', ':', ',', '"', '\\', '/', '\b', '\f', '\n', '\r', '\t', 0, 0x1f, 0x7f,
	'é', 'ß', '€', '東', '\u2028', '\ufeff', '\uffff', '😀', '\U0010ffff', '\U00010000'}

// escapedText writes s as the inside of a JSON string, each character
// raw where JSON allows it or escaped at random: a short escape where
// there is one, \uXXXX in either case, a surrogate pair past U+FFFF.
func escapedText(rnd *rand.Rand, s string) string {
	var b strings.Builder
	for _, r := range s {
		short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r]
		mustEscape := r == '"' || r == '\\' || r < 0x20
		hexFmt := `\u%04x`
		if rnd.IntN(2) == 0 {
			hexFmt = `\u%04X`
		}
		switch k := rnd.IntN(3); {
		case !mustEscape && k == 0:
			b.WriteRune(r)
		case short != "" && k == 1:
			b.WriteString(short)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, hexFmt+hexFmt, hi, lo)
		case mustEscape || k == 2:
			fmt.Fprintf(&b, hexFmt, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Strings with escapes decode on the fast path to what encoding/json
// decodes them to, and a record holding them decodes to the same row
// whichever path reads it.
func TestFlatScanUnescapesAsEncodingJSON(t *testing.T) {
	schema, err := catalog.ParseSchema("s:string,n:int64")
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	sc := newFlatScan([]string{"s"})
	fields := make([]flatField, 1)
	rnd := rand.New(rand.NewPCG(7, 8))
	for range 50000 {
		var raw strings.Builder
		for range rnd.IntN(24) {
			raw.WriteRune(escapeRunes[rnd.IntN(len(escapeRunes))])
		}
		text := escapedText(rnd, raw.String())
		rec := []byte(`{"s":"` + text + `","n":1}`)
		var want struct{ S string }
		if err := json.Unmarshal(rec, &want); err != nil {
			t.Fatalf("%q: encoding/json: %v", rec, err)
		}
		if !sc.scan(rec, fields) {
			t.Fatalf("%q: the fast path left it to the tree", rec)
		}
		if got := string(fields[0].b); got != want.S || got != raw.String() {
			t.Fatalf("%q: fast path %q, encoding/json %q, written %q", rec, got, want.S, raw.String())
		}
		got, tree := d.newRow(), d.newRow()
		if err := d.jsonRow(rec, got); err != nil {
			t.Fatalf("%q: %v", rec, err)
		}
		if err := d.treeRow(rec, tree); err != nil {
			t.Fatalf("%q: tree path: %v", rec, err)
		}
		if !reflect.DeepEqual(got, tree) || got[0] != want.S {
			t.Fatalf("%q: fast path row %q, tree path row %q, encoding/json %q", rec, got, tree, want.S)
		}
	}
}

// A lone surrogate, or an escape RFC 8259 does not have, keeps today's
// behaviour whichever path meets it: the record is quarantined, for the
// same reason.
func TestFlatScanLeavesBadEscapesToTree(t *testing.T) {
	schema, err := catalog.ParseSchema("s:string")
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	for _, text := range []string{`\ud800`, `a\udbff b`, `\udc00`, `\ud83d\u0041`, `\ud83d\ud83d`, `\ud83d\`, `\u12`, `\u12g4`, `\x41`, `\a`, `\`,
		`ok\ud83d\ude00 then \ud800`} {
		rec := []byte(`{"s":"` + text + `"}`)
		if !utf8.Valid(rec) {
			t.Fatalf("%q is not UTF-8", rec)
		}
		if d.scan.scan(rec, d.flat) {
			t.Errorf("%q: the fast path took it", rec)
		}
		gerr, werr := d.jsonRow(rec, d.newRow()), d.treeRow(rec, d.newRow())
		if gerr == nil || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%q: jsonRow %v, treeRow %v: want both to quarantine it alike", rec, gerr, werr)
		}
	}
}

// quoteOrBackslash finds what bytes.IndexAny finds, at every length and
// offset of the eight-byte words it reads.
func TestQuoteOrBackslash(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	alphabet := []byte{'a', '"', '\\', 0, 0x80, 0xff, '!', ']', '#', 0x5b, 0x5d, 0x21, 0x23}
	for range 200000 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = 'x'
			if rnd.IntN(12) == 0 {
				b[i] = alphabet[rnd.IntN(len(alphabet))]
			}
		}
		if got, want := quoteOrBackslash(b), strings.IndexAny(string(b), "\"\\"); got != want {
			t.Fatalf("%q: %d, want %d", b, got, want)
		}
	}
}

// A nested object or array in a string column is kept as its JSON text,
// compact (whitespace between tokens dropped, strings and numbers as
// written), whichever path reads the record; one holding a name twice, or
// what RFC 8259 does not allow, is quarantined.
func TestNestedValueKeptAsText(t *testing.T) {
	schema, err := catalog.ParseSchema("id:int64,ctx:string?,tags:string?")
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	for _, c := range []struct{ rec, ctx, tags, bad string }{
		{rec: `{"id":1,"ctx":{"a":1,"b":{"c":[true,null]}},"tags":["x","y"]}`, ctx: `{"a":1,"b":{"c":[true,null]}}`, tags: `["x","y"]`},
		{rec: `{"id":1,"ctx": { "a" : [ 1.50 , "x y" ] } ,"tags":[ ]}`, ctx: `{"a":[1.50,"x y"]}`, tags: `[]`},
		{rec: `{"id":1,"ctx":{"s":"caf\u00e9 \"q\" \\ \/"},"tags":["\ud83d\ude00"]}`, ctx: `{"s":"caf\u00e9 \"q\" \\ \/"}`, tags: `["\ud83d\ude00"]`},
		{rec: "{\"id\":1,\"ctx\":{\n\t\"a\": 1e3\r\n}}", ctx: `{"a":1e3}`},
		{rec: `{"id":1,"ctx":{"a":1,"a":2}}`, bad: `duplicate key "a": the record is ambiguous`},
		{rec: `{"id":1,"tags":[{"k":1,"k":1}]}`, bad: `duplicate key "k": the record is ambiguous`},
		{rec: `{"id":1,"ctx":{"a":NaN}}`, bad: `column "ctx" (string): holds a nested value that is not valid JSON`},
		{rec: "{\"id\":1,\"ctx\":[\"raw\ttab\"]}", bad: `column "ctx" (string): holds a nested value that is not valid JSON`},
		{rec: `{"id":{"a":1}}`, bad: `column "id" (int64): want an integer, got an object`},
	} {
		for _, path := range []string{"fast", "tree"} {
			row := d.newRow()
			var err error
			if path == "fast" {
				err = d.jsonRow([]byte(c.rec), row)
			} else {
				err = d.treeRow([]byte(c.rec), row)
			}
			if c.bad != "" {
				if fmt.Sprint(err) != c.bad {
					t.Errorf("%s path: %s: got %v, want %s", path, c.rec, err, c.bad)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s path: %s: %v", path, c.rec, err)
				continue
			}
			want := []any{int64(1), any(nil), any(nil)}
			if c.ctx != "" {
				want[1] = c.ctx
			}
			if c.tags != "" {
				want[2] = c.tags
			}
			if !reflect.DeepEqual(row, want) {
				t.Errorf("%s path: %s: row %q, want %q", path, c.rec, row, want)
			}
		}
	}
	// The fast path reads these records itself.
	if !d.scan.scan([]byte(`{"id":1,"ctx": { "a" : [ 1.50 , "x y" ] } ,"tags":[ ]}`), d.flat) {
		t.Error("the fast path left a nested value with whitespace to the tree")
	}
}
