package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/sluice-data/sluice/catalog"
)

// flatSchema has a column of every kind, required and nullable.
const flatSchema = "s:string,u:uuid?,i:int32?,l:int64,f:float64?,b:bool?,d:date?,ts:timestamp?,dec:decimal(10,2)?,bin:binary?"

// flatValues are JSON values of every kind a field may hold: the flat
// scalars scanFlat takes, and the escapes, fractions, nested values and
// broken syntax it must leave to fastjson.
var flatValues = []string{
	`"38b2df75-1089-4edd-90a9-1e4fb85fa15e"`, `"38B2DF75-1089-4EDD-90A9-1E4FB85FA15E"`, `"not a uuid"`,
	`"2024-01-01T00:00:15.446116Z"`, `"2024-02-30T00:00:00Z"`, `"2024-01-01"`, `1704067215`,
	`0`, `-0`, `7`, `-42`, `2147483647`, `2147483648`, `9223372036854775807`, `99999999999999999999`,
	`01`, `1.5`, `1.`, `1e3`, `-`, `12.34`, `"12.34"`, `"12.345"`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`,
	`""`, `"plain text"`, `"caf\u00e9"`, `"tab\there"`, "\"raw\ttab\"", "\"caf\xc3\xa9\"", "\"bad \xff utf8\"",
	`"esc\"aped"`, `"back\\slash"`, `"aGVsbG8="`, `"!!"`,
	`[1,2]`, `{"x":1}`, `[]`, `{}`, `"unterminated`,
}

// flatGood are values each column of flatSchema takes.
var flatGood = [][]string{
	{`"plain text"`, `""`, `"caf\u00e9"`, "\"caf\xc3\xa9\"", `"esc\"aped"`},
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

// Whatever scanFlat accepts, fastjson parses as an object whose first
// field of each name has the same type and the same bytes.
func TestFlatScanAgreesWithFastjson(t *testing.T) {
	// Names with a quote or a backslash too: such a name is never
	// compared in place.
	names := []string{"s", "u", "i", "l", "f", "b", "d", "ts", "dec", "bin", `q"uote`, `back\slash`}
	fn := newFlatNames(names)
	fields := make([]flatField, len(names))
	var p fastjson.Parser
	rnd := rand.New(rand.NewPCG(3, 4))
	accepted, rejected := 0, 0
	for range 200000 {
		rec := flatRecord(rnd, names)
		if !scanFlat(rec, fn, fields) {
			rejected++
			continue
		}
		accepted++
		v, err := p.ParseBytes(rec)
		if err != nil {
			t.Fatalf("%q: scanFlat took it, fastjson: %v", rec, err)
		}
		obj, err := v.Object()
		if err != nil {
			t.Fatalf("%q: scanFlat took it, fastjson: %v", rec, err)
		}
		for i, name := range names {
			x := obj.Get(name)
			var want []byte
			switch typeOfJSON(x) {
			case jsonString:
				want, _ = x.StringBytes()
			case jsonNumber:
				want = x.MarshalTo(nil)
			}
			if got := fields[i]; got.t != typeOfJSON(x) || !bytes.Equal(got.b, want) {
				t.Fatalf("%q: field %q: scanFlat %d %q, fastjson %d %q", rec, name, got.t, got.b, typeOfJSON(x), want)
			}
		}
	}
	if accepted < 20000 || rejected < 20000 {
		t.Fatalf("%d records scanned flat, %d not: the corpus misses one side", accepted, rejected)
	}
}

// A record decodes to the same row, or is quarantined for the same
// reason, whether scanFlat or fastjson's tree reads it.
func TestFlatRowsMatchTreeRows(t *testing.T) {
	schema, err := catalog.ParseSchema(flatSchema)
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions())
	rnd := rand.New(rand.NewPCG(5, 6))
	flat, flatRows, rows, bad := 0, 0, 0, 0
	for range 100000 {
		rec := flatRecord(rnd, d.names.names)
		isFlat := scanFlat(rec, d.names, d.flat)
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
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: jsonRow %v, treeRow %v", rec, got, want)
		}
	}
	if flat < 10000 || flatRows < 5000 || rows < 10000 || bad < 10000 {
		t.Fatalf("%d records scanned flat (%d of them decoded), %d decoded, %d quarantined: the corpus misses a case", flat, flatRows, rows, bad)
	}
}
