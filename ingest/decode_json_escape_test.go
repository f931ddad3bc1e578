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
