package ingest

import (
	"encoding/json"
	"fmt"
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

// A record that names a field twice is quarantined as ambiguous, naming
// the key, wherever the row stored depends on which one is read: on the
// fast path and the tree path alike, and with an _extra column, which
// keeps every other field, for any name at any depth (issue 13, item 7).
// Fastjson and the fast path kept the first silently.
func TestDuplicateKeysQuarantineTheRecord(t *testing.T) {
	var wide strings.Builder
	wide.WriteString(`{"id":1`)
	for i := range 20 {
		fmt.Fprintf(&wide, `,"k%d":%d`, i, i)
	}
	wide.WriteString(`,"k7":0}`)
	cases := []struct {
		name, schema, rec string
		dup               string // the key named; "" when the record is taken
		extra             string // the _extra value of a record taken
	}{
		{"a column twice, flat", "id:int64,s:string?", `{"id":1,"id":2}`, "id", ""},
		{"a column twice, apart", "id:int64,s:string?", `{"id":1,"s":"a","n":2,"s":"b"}`, "s", ""},
		{"a column twice beside a nested field", "id:int64,s:string?", `{"id":1,"s":"a","x":[1],"s":"b"}`, "s", ""},
		{"a column twice, once escaped", "id:int64,s:string?", `{"id":1,"\u0069d":2}`, "id", ""},
		{"a column twice, once null", "id:int64,s:string?", `{"id":1,"s":null,"s":"b"}`, "s", ""},
		{"a field the table does not keep, twice", "id:int64,s:string?", `{"id":1,"x":1,"x":2}`, "", ""},
		{"an unkept field twice beside a nested one", "id:int64,s:string?", `{"id":1,"x":1,"y":{},"x":2}`, "", ""},
		{"an extra field twice", "id:int64,_extra:string?", `{"id":1,"x":1,"x":2}`, "x", ""},
		{"a column twice with _extra", "id:int64,_extra:string?", `{"id":1,"id":2}`, "id", ""},
		{"a field named _extra twice", "id:int64,_extra:string?", `{"id":1,"_extra":"a","_extra":"b"}`, "_extra", ""},
		{"a nested key twice in an extra field", "id:int64,_extra:string?", `{"id":1,"meta":{"a":1,"a":2}}`, "a", ""},
		{"a key twice in an object in an array", "id:int64,_extra:string?", `{"id":1,"l":[{"a":1},{"a":1,"b":2,"a":3}]}`, "a", ""},
		{"one key twice among many", "id:int64,_extra:string?", wide.String(), "k7", ""},
		{"the same key in different objects", "id:int64,_extra:string?", `{"id":1,"a":0,"m":{"a":1,"b":{"a":2}}}`, "", `{"a":0,"m":{"a":1,"b":{"a":2}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := catalog.ParseSchema(c.schema)
			if err != nil {
				t.Fatal(err)
			}
			d := newSoloDecoder(s, DefaultOptions())
			fast, tree := make([]any, len(s.Columns)), make([]any, len(s.Columns))
			ferr, terr := d.jsonRow([]byte(c.rec), fast), d.treeRow([]byte(c.rec), tree)
			if fmt.Sprint(ferr) != fmt.Sprint(terr) {
				t.Fatalf("the paths disagree: jsonRow %v, treeRow %v", ferr, terr)
			}
			want := fmt.Sprintf("duplicate key %q: the record is ambiguous", c.dup)
			switch {
			case c.dup != "" && (ferr == nil || ferr.Error() != want):
				t.Fatalf("%v (row %v), want %q", ferr, fast, want)
			case c.dup == "" && ferr != nil:
				t.Fatalf("quarantined: %v", ferr)
			case c.dup == "" && c.extra != "" && fast[1] != c.extra:
				t.Fatalf("_extra %q, want %q", fast[1], c.extra)
			}
		})
	}
}

// A number outside RFC 8259's grammar, which fastjson's parser takes
// (as 0, 1, 0.5, ...) and encoding/json refuses, quarantines the record
// on both paths, in a column, in a field the table does not keep, and in
// _extra; a valid number of any form is taken.
func TestInvalidNumbersQuarantineTheRecord(t *testing.T) {
	bad := []string{".", "1.", ".5", "01", "-01", "+1", "1e", "1e+", "-", "1.e3", "inf", "nan", "0x1", "1_0"}
	for _, schema := range []string{"id:int64,f:float64?", "id:int64,_extra:string?"} {
		s, err := catalog.ParseSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		d := newSoloDecoder(s, DefaultOptions())
		for _, n := range bad {
			for _, rec := range []string{`{"id":1,"f":` + n + `}`, `{"id":1,"x":` + n + `}`, `{"id":1,"x":[{"y":` + n + `}]}`} {
				if json.Valid([]byte(rec)) {
					continue // not a bad number after all (e.g. the tokenizer splits it)
				}
				fast, tree := make([]any, len(s.Columns)), make([]any, len(s.Columns))
				ferr, terr := d.jsonRow([]byte(rec), fast), d.treeRow([]byte(rec), tree)
				if ferr == nil || terr == nil {
					t.Errorf("%s: %s taken (jsonRow %v %v, treeRow %v %v); encoding/json refuses it", schema, rec, fast, ferr, tree, terr)
				}
			}
		}
		for _, n := range []string{"0", "-0", "1", "-12", "0.5", "-0.25e-3", "1E9", "12e+2"} {
			rec := `{"id":1,"f":` + n + `,"x":[` + n + `]}`
			row := make([]any, len(s.Columns))
			if err := d.treeRow([]byte(rec), row); err != nil {
				t.Errorf("%s: %s quarantined: %v", schema, rec, err)
			}
		}
	}
}

// validNumber agrees with encoding/json on every short string of number
// characters.
func TestValidNumberAgreesWithEncodingJSON(t *testing.T) {
	alphabet := []byte("-+.eE019")
	var walk func(b []byte)
	walk = func(b []byte) {
		if len(b) > 0 {
			if got, want := validNumber(b), json.Valid(b); got != want {
				t.Errorf("validNumber(%q) = %v, encoding/json says %v", b, got, want)
			}
		}
		if len(b) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(b, c))
		}
	}
	walk(nil)
}
