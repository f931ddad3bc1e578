package ingest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
)

// flatSchema has a column of every kind, required and nullable.
const flatSchema = "s:string,u:uuid?,i:int32?,l:int64,f:float64?,b:bool?,d:date?,ts:timestamp?,dec:decimal(10,2)?,bin:binary?"

// flatValues are JSON values of every kind a field may hold: what
// flatScan takes (escapes, numbers, nested values), and what it must leave
// to fastjson (escapes RFC 8259 does not have, lone surrogates, names
// given twice in a nested object, numbers fastjson alone takes, broken
// syntax).
var flatValues = []string{
	`"38b2df75-1089-4edd-90a9-1e4fb85fa15e"`, `"38B2DF75-1089-4EDD-90A9-1E4FB85FA15E"`, `"not a uuid"`,
	`"2024-01-01T00:00:15.446116Z"`, `"2024-02-30T00:00:00Z"`, `"2024-01-01"`, `1704067215`,
	`0`, `-0`, `7`, `-42`, `2147483647`, `2147483648`, `9223372036854775807`, `99999999999999999999`,
	`01`, `1.5`, `1.`, `1e3`, `-`, `12.34`, `"12.34"`, `"12.345"`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`,
	`""`, `"plain text"`, `"caf\u00e9"`, `"tab\there"`, "\"raw\ttab\"", "\"caf\xc3\xa9\"", "\"bad \xff utf8\"",
	`"esc\"aped"`, `"back\\slash"`, `"aGVsbG8="`, `"!!"`,
	`[1,2]`, `{"x":1}`, `[]`, `{}`, `"unterminated`,
	`"\ud83d\ude00 pair"`, `"lone \ud83d here"`, `"lone \ude00"`, `"\ud83d\u0041"`, `"\u00"`, `"\x41"`, `"a\/b\b\f\n\r\t"`,
	`"{\"ip\":\"10.1.2.3\",\"ms\":12}"`, `"\u0000nul"`, `"\\"`, `"\"`,
	`1.25e-3`, `-0.0`, `1E+9`, `1.2.3`, `NaN`, `-inf`, `.5`, `1e`,
	`{"a":{"b":[1,"x",null,true,{"c":-1.5e3}]}}`, `{ "a" : [ 1 , 2 ] , "b":"s p" }`, "[\n1,\t2 ]", `[ ]`, `{ }`,
	`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"k":1},{"k":2}]`, `{"e\u0073c":1}`, `{"s":"esc\"q\u00e9"}`,
	`{"s":"lone \udc00"}`, "{\"s\":\"raw\ttab\"}", "[\"raw\x01\"]", `{"a":NaN}`, `[1.2.3]`, `[01]`, `{"a":1,}`, `[1,]`, `[1 2]`,
	`{"a":}`, `{"a"}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

// flatGood are values each column of flatSchema takes.
var flatGood = [][]string{
	{`"plain text"`, `""`, `"caf\u00e9"`, "\"caf\xc3\xa9\"", `"esc\"aped"`, `"\ud83d\ude00 \u00e9\n\\"`,
		`{"ip":"10.1.2.3","n":[1,2.5e1]}`, `[ "a" , {"b" : null} ]`, `{}`, `[]`},
	{`"38b2df75-1089-4edd-90a9-1e4fb85fa15e"`, `"38B2DF75-1089-4EDD-90A9-1E4FB85FA15E"`, `null`},
	{`0`, `-0`, `7`, `-42`, `2147483647`, `null`},
	{`0`, `9223372036854775807`, `-9223372036854775808`, `1704067215`},
	{`0`, `-42`, `1.5`, `1e3`, `123456789012345678901234567890`, `null`},
	{`true`, `false`, `null`},
	{`"2024-01-01"`, `"1999-12-31"`, `null`},
	{`"2024-01-01T00:00:15.446116Z"`, `"2024-01-01T01:02:03+02:00"`, `1704067215`, `null`},
	{`12.34`, `"12.34"`, `7`, `-0`, `null`},
	{`"aGVsbG8="`, `""`, `null`},
}

// flatRecord builds a random record of the columns' names and others, in
// random order, with random values and whitespace, sometimes damaged.
func flatRecord(rnd *rand.Rand, names []string) []byte {
	ws := func() string { return []string{"", "", "", " ", "\t", " \r\n "}[rnd.IntN(6)] }
	var b strings.Builder
	b.WriteString(ws() + "{")
	// Half the records hold each column of flatGood (the first names,
	// in flatSchema's order) once, with a value of its kind, in random
	// order; the others random names and values.
	good := rnd.IntN(2) == 0
	n := rnd.IntN(len(names) + 3)
	order := rnd.Perm(min(len(names), len(flatGood)))
	if good {
		n = len(order)
	}
	for k := range n {
		if k > 0 {
			b.WriteString(ws() + "," + ws())
		}
		name, value := "other", flatValues[rnd.IntN(len(flatValues))]
		switch {
		case good:
			c := order[k]
			name = names[c]
			if rnd.IntN(30) > 0 {
				value = flatGood[c][rnd.IntN(len(flatGood[c]))]
			}
		case rnd.IntN(20) == 0:
			name = "esc\\u0061ped" // an escaped name
		case rnd.IntN(8) > 0:
			name = names[rnd.IntN(len(names))]
		}
		quoted := `"` + name + `"` // raw, as a careless producer might
		if rnd.IntN(2) == 0 {
			quoted = strconv.Quote(name) // escaped
		}
		fmt.Fprintf(&b, `%s%s%s:%s%s`, ws(), quoted, ws(), ws(), value)
	}
	b.WriteString(ws() + "}" + ws())
	rec := []byte(b.String())
	switch rnd.IntN(10) {
	case 0: // cut short
		rec = rec[:rnd.IntN(len(rec))]
	case 1: // a byte dropped
		k := rnd.IntN(len(rec))
		rec = append(rec[:k:k], rec[k+1:]...)
	case 2: // a stray byte
		k := rnd.IntN(len(rec) + 1)
		rec = append(rec[:k:k], append([]byte{",:{}\"x0 "[rnd.IntN(8)]}, rec[k:]...)...)
	}
	return rec
}

// Whatever flatScan accepts, fastjson parses as an object whose first
// field of each name has the same type and the same bytes.
func TestFlatScanAgreesWithFastjson(t *testing.T) {
	// Names with a quote or a backslash too: such a name is never
	// compared in place.
	names := []string{"s", "u", "i", "l", "f", "b", "d", "ts", "dec", "bin", `q"uote`, `back\slash`}
	sc := newFlatScan(names)
	fields := make([]flatField, len(names))
	var p fastjson.Parser
	rnd := rand.New(rand.NewPCG(3, 4))
	accepted, rejected := 0, 0
	for range 200000 {
		rec := flatRecord(rnd, names)
		if !sc.scan(rec, fields) {
			rejected++
			continue
		}
		accepted++
		v, err := p.ParseBytes(rec)
		if err != nil {
			t.Fatalf("%q: flatScan took it, fastjson: %v", rec, err)
		}
		obj, err := v.Object()
		if err != nil {
			t.Fatalf("%q: flatScan took it, fastjson: %v", rec, err)
		}
		for i, name := range names {
			x := obj.Get(name)
			var want []byte
			switch typeOfJSON(x) {
			case jsonString:
				want, _ = x.StringBytes()
			case jsonNumber, jsonObject, jsonArray:
				// A nested value's text as written, compact.
				want = x.MarshalTo(nil)
			}
			if got := fields[i]; got.t != typeOfJSON(x) || !bytes.Equal(got.b, want) {
				t.Fatalf("%q: field %q: flatScan %d %q, fastjson %d %q", rec, name, got.t, got.b, typeOfJSON(x), want)
			}
		}
	}
	if accepted < 20000 || rejected < 20000 {
		t.Fatalf("%d records scanned flat, %d not: the corpus misses one side", accepted, rejected)
	}
}

// A record decodes to the same row, or is quarantined for the same
// reason, whether flatScan or fastjson's tree reads it.
func TestFlatRowsMatchTreeRows(t *testing.T) {
	schema, err := catalog.ParseSchema(flatSchema)
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	rnd := rand.New(rand.NewPCG(5, 6))
	flat, flatRows, rows, bad := 0, 0, 0, 0
	for range 100000 {
		rec := flatRecord(rnd, d.scan.names)
		isFlat := d.scan.scan(rec, d.flat)
		if isFlat {
			flat++
		}
		got, want := make([]any, len(d.conv)), make([]any, len(d.conv))
		gerr, werr := d.jsonRow(rec, got), d.treeRow(rec, want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: jsonRow: %v; treeRow: %v", rec, gerr, werr)
		}
		if werr != nil {
			bad++
			continue
		}
		rows++
		if isFlat {
			flatRows++
		}
		if !reflect.DeepEqual(nanless(got), nanless(want)) {
			t.Fatalf("%q: jsonRow %v, treeRow %v", rec, got, want)
		}
	}
	if flat < 10000 || flatRows < 5000 || rows < 10000 || bad < 10000 {
		t.Fatalf("%d records scanned flat (%d of them decoded), %d decoded, %d quarantined: the corpus misses a case", flat, flatRows, rows, bad)
	}
}

// nanless returns row with each NaN (which fastjson reads as a number, and
// which DeepEqual finds unequal to itself) replaced by the text "NaN".
func nanless(row []any) []any {
	out := slices.Clone(row)
	for i, v := range out {
		if f, ok := v.(float64); ok && math.IsNaN(f) {
			out[i] = "NaN"
		}
	}
	return out
}

// FuzzFlatScan: whatever the fast path takes, fastjson parses, and every
// record decodes to the same row, or is quarantined for the same reason,
// whichever path reads it. Under go test it runs its seeds (every value of
// flatValues in a record of flatSchema's columns); `go test -fuzz
// FuzzFlatScan ./ingest` searches further.
func FuzzFlatScan(f *testing.F) {
	for _, v := range flatValues {
		f.Add([]byte(`{"s":` + v + `,"l":1}`))
		f.Add([]byte(`{"l":1,"other":` + v + `,"s":"x"}`))
		f.Add([]byte(`{"s":"x","l":1,"ts":` + v + `}`))
	}
	schema, err := catalog.ParseSchema(flatSchema)
	if err != nil {
		f.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	var p fastjson.Parser
	f.Fuzz(func(t *testing.T, rec []byte) {
		if !utf8.Valid(rec) {
			return // checkRaw quarantines it before either path
		}
		if d.scan.scan(rec, d.flat) {
			if _, err := p.ParseBytes(rec); err != nil {
				t.Fatalf("%q: the fast path took it, fastjson: %v", rec, err)
			}
		}
		got, want := make([]any, len(d.conv)), make([]any, len(d.conv))
		gerr, werr := d.jsonRow(rec, got), d.treeRow(rec, want)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: jsonRow: %v; treeRow: %v", rec, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(nanless(got), nanless(want)) {
			t.Fatalf("%q: jsonRow %v, treeRow %v", rec, got, want)
		}
	})
}
