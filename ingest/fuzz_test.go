package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-data/sluice/catalog"
)

// The fuzz targets of ingest's decoders. Their seeds, in
// testdata/fuzz/<target>, run in every `go test`; `make fuzz` runs each
// target for $(FUZZTIME).

// A Kafka checkpoint from a manifest either fails to parse or parses to
// partitions and offsets that are not negative, and writes back to one
// that parses the same.
func FuzzKafkaCheckpoint(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"partitions":{"0":1042,"1":988},"gaps":[{"partition":1,"from":700,"to":750,"at":"2024-01-31T10:00:00Z"}]}`,
		`{"v":2}`, `null`, ``, `{"v":1,"partitions":{"-1":3}}`, `{"v":1,"partitions":{"0":-3}}`,
		`{"v":1,"partitions":{"2147483648":1}}`, `{"v":1,"partitions":{" 1":1}}`, `{"v":1,"partitions":null}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseKafkaCheckpoint(json.RawMessage(b))
		if err != nil {
			return
		}
		if c.V != 1 || c.Partitions == nil {
			t.Fatalf("%q: parsed %+v", b, c)
		}
		for p, off := range c.Partitions {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil || n < 0 || off < 0 {
				t.Fatalf("%q: partition %q offset %d taken", b, p, off)
			}
			if got, ok := c.next(int32(n)); !ok || got != off {
				// A partition written "01" is not the one next(1) finds.
				if strconv.Itoa(int(n)) == p {
					t.Fatalf("%q: next(%d) = %d, %v", b, n, got, ok)
				}
			}
		}
		raw := c.raw()
		c2, err := parseKafkaCheckpoint(raw)
		if err != nil {
			if !json.Valid(raw) {
				return // a gap time past year 9999 does not write
			}
			t.Fatalf("%q: written back as %s, which does not parse: %v", b, raw, err)
		}
		if !bytes.Equal(c2.raw(), raw) {
			t.Fatalf("%q: round trip %s -> %s", b, raw, c2.raw())
		}
	})
}

// csvFuzzSchema: nullable strings, so that every field a CSV reader reads
// is a value the row holds as is (empty is NULL).
const csvFuzzSchema = "a:string?,b:string?,c:string?"

// A CSV file decodes, record by record, to the fields encoding/csv reads
// from it (with LazyQuotes, as decodeCSV reads): every record it reads
// whole is a row of the same fields, in the header's order; one with the
// wrong number of fields is quarantined; a file cut inside a quoted field
// fails whole.
func FuzzDecodeCSV(f *testing.F) {
	for _, s := range []string{
		"a,b,c\n1,2,3\n", "b,a\nx,y\n\"q,\"\"r\",s\n", "a,b\n1,\"x", "a,b\n1,2,3\n4\n", "\ufeffa, b ,c\r\n1,2,3\r\n",
		"a,a\n1,2\n", "a\n\"x\"y\"\n", "a,b\n\n\n1,2\n", "a,b\n1,\"x\ny\"\n", "a,b\n\xff,1\n", "a,b\n1,\"x\"\r", "",
		"a,b\n1,\"x\"\"\"\n", "x\n1\n", "a,b\n\"\n",
	} {
		f.Add([]byte(s))
	}
	schema, err := catalog.ParseSchema(csvFuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		o := DefaultOptions()
		o.MaxRecordBytes = 1 << 16
		d := newDecoder(schema, o)
		type rec struct {
			raw []byte
			row []any
			bad error
		}
		var got []rec
		derr := d.decodeCSV(context.Background(), bytes.NewReader(file), func(pos int64, raw []byte, row []any, bad error) error {
			if (row == nil) == (bad == nil) {
				t.Fatalf("%q: record %d: row %v and reason %v", file, pos, row, bad)
			}
			got = append(got, rec{bytes.Clone(raw), append([]any(nil), row...), bad})
			return nil
		})

		cr := csv.NewReader(bytes.NewReader(file))
		cr.LazyQuotes = true
		header, err := cr.Read()
		if err != nil {
			if err == io.EOF && (derr != nil || len(got) > 0) {
				t.Fatalf("%q: an empty file gave %d records, %v", file, len(got), derr)
			}
			return
		}
		if derr != nil && len(got) == 0 {
			return // a bad header, a repeated column, a quote left open: the file fails
		}
		where := make([]int, len(schema.Columns))
		for i, c := range schema.Columns {
			where[i] = -1
			for j, h := range header {
				if strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) == c.Name {
					where[i] = j
				}
			}
		}
		prev := cr.InputOffset()
		for n := 0; ; n++ {
			fields, err := cr.Read()
			raw := trimEOL(file[prev:cr.InputOffset()])
			prev = cr.InputOffset()
			if err == io.EOF {
				if derr == nil && n != len(got) {
					t.Fatalf("%q: encoding/csv reads %d records, decodeCSV %d", file, n, len(got))
				}
				return
			}
			if n >= len(got) {
				if derr == nil {
					t.Fatalf("%q: encoding/csv reads record %d, decodeCSV stops at %d without an error", file, n+1, len(got))
				}
				return // the file failed there (a quote left open at its end)
			}
			g := got[n]
			if err == nil || errors.Is(err, csv.ErrFieldCount) {
				if !bytes.Equal(g.raw, raw[:min(len(raw), o.MaxRecordBytes)]) {
					t.Fatalf("%q: record %d is %q, decodeCSV hands on %q", file, n+1, raw, g.raw)
				}
			}
			switch {
			case errors.Is(err, csv.ErrFieldCount):
				if g.bad == nil {
					t.Fatalf("%q: record %d has %d fields, decodeCSV took it as %v", file, n+1, len(fields), g.row)
				}
				continue
			case err != nil:
				return // encoding/csv gives up; decodeCSV quarantines or fails
			}
			valid := true
			for _, fl := range fields {
				valid = valid && utf8.ValidString(fl)
			}
			if !valid {
				if g.bad == nil {
					t.Fatalf("%q: record %d is not UTF-8, decodeCSV took it", file, n+1)
				}
				continue
			}
			if g.bad != nil {
				t.Fatalf("%q: record %d %q: decodeCSV quarantined it: %v", file, n+1, fields, g.bad)
			}
			want := make([]any, len(where))
			for i, j := range where {
				if j >= 0 && fields[j] != "" {
					want[i] = fields[j]
				}
			}
			if fmt.Sprint(g.row) != fmt.Sprint(want) || !reflect.DeepEqual(normalise(g.row), want) {
				t.Fatalf("%q: record %d: decodeCSV %q, encoding/csv %q", file, n+1, g.row, want)
			}
		}
	})
}

// normalise turns a row's values into plain strings and nils, as the
// fuzz targets compare them.
func normalise(row []any) []any {
	out := make([]any, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case nil:
		case string:
			out[i] = x
		case *string:
			if x != nil {
				out[i] = *x
			}
		default:
			out[i] = fmt.Sprint(x)
		}
	}
	return out
}

// escapeRawControls returns rec with each control character inside a
// string written as a \u00XX escape.
func escapeRawControls(rec []byte) []byte {
	var out []byte
	in, esc := false, false
	for _, c := range rec {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in && c < 0x20:
			out = fmt.Appendf(out, "\\u%04x", c)
			continue
		}
		out = append(out, c)
	}
	return out
}

// jsonFuzzSchema has a column of each kind the flat scanner reads.
const jsonFuzzSchema = "s:string?,i:int64?,f:float64?,b:bool?"

// A JSON lines record decodes the same through the flat scanner and
// through fastjson's tree, and what either takes is JSON that
// encoding/json reads to the same values: a string column holds the
// string encoding/json reads, a bool the bool, a number the number.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"s":"x","i":1,"f":1.5,"b":true}`, `{"s":null,"i":null}`, `{}`, `{"s":"\u00e9\ud83d\ude00","x":[1,{"y":2}]}`,
		`{"s":"a","s":"b"}`, `{"i":1e3}`, `{"i":9223372036854775808}`, `{"f":-0}`, `{"s":"\ud800"}`, `{"s":"\q"}`,
		`[1]`, `{"s":"x"} `, ` {"b":false}`, `{"s":"x",}`, `{"s":"` + "\xff" + `"}`, `{"i":"12"}`, `{"f":1E400}`, `{"i":-0}`,
	} {
		f.Add([]byte(s))
	}
	schema, err := catalog.ParseSchema(jsonFuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if bytes.ContainsAny(rec, "\n\r") {
			return // one record is one line
		}
		d := newSoloDecoder(schema, DefaultOptions())
		got, tree := make([]any, len(d.conv)), make([]any, len(d.conv))
		gerr, terr := d.jsonRow(rec, got), d.treeRow(rec, tree)
		if fmt.Sprint(gerr) != fmt.Sprint(terr) {
			t.Fatalf("%q: jsonRow: %v; treeRow: %v", rec, gerr, terr)
		}
		if gerr != nil {
			return
		}
		if !reflect.DeepEqual(got, tree) {
			t.Fatalf("%q: jsonRow %v, treeRow %v", rec, got, tree)
		}
		r := d.decodeJSON(rawRecord{b: rec, size: len(rec)})
		if r.bad != nil {
			if utf8.Valid(rec) {
				t.Fatalf("%q: jsonRow takes it, decodeJSON quarantines it: %v", rec, r.bad)
			}
			return
		}
		// sluice takes a raw control character inside a string (and
		// stores it as written), where RFC 8259 wants it escaped:
		// compare with the record so escaped.
		std := escapeRawControls(rec)
		if !json.Valid(std) {
			t.Fatalf("%q: taken, but encoding/json finds it invalid", rec)
		}
		dec := json.NewDecoder(bytes.NewReader(std))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil || obj == nil {
			t.Fatalf("%q: taken, but encoding/json reads no object: %v", rec, err)
		}
		for i, c := range schema.Columns {
			want, ok := obj[c.Name]
			have := r.row[i]
			if !ok || want == nil {
				if have != nil {
					t.Fatalf("%q: column %s is %v, encoding/json reads none", rec, c.Name, have)
				}
				continue
			}
			switch w := want.(type) {
			case string:
				if c.Type.Kind == catalog.KindString && normalise([]any{have})[0] != w {
					t.Fatalf("%q: column %s is %q, encoding/json reads %q", rec, c.Name, have, w)
				}
			case bool:
				if have != w {
					t.Fatalf("%q: column %s is %v, encoding/json reads %v", rec, c.Name, have, w)
				}
			case json.Number:
				switch c.Type.Kind {
				case catalog.KindInt64:
					if n, err := w.Int64(); err == nil && have != n {
						t.Fatalf("%q: column %s is %v, encoding/json reads %v", rec, c.Name, have, n)
					}
				case catalog.KindFloat64:
					if x, err := w.Float64(); err == nil && have != x {
						t.Fatalf("%q: column %s is %v, encoding/json reads %v", rec, c.Name, have, x)
					}
				}
			}
		}
	})
}
