package ingest

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluice-data/sluice/catalog"
)

// A quote left open at the end of a CSV file swallows every line after it
// into one field: the file fails whole, naming the line and column where
// the quote opened, rather than being taken as fewer records (issue 13,
// item 4). Quotes that close, however late or lazily, still read as
// before.
func TestDecodeCSVFailsAFileThatEndsInsideAQuotedField(t *testing.T) {
	schema, err := catalog.ParseSchema("a:int64,b:string?")
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	cases := map[string]struct {
		file    string
		records int    // records handed on, good or bad
		err     string // what the whole-file error says; "" for none
	}{
		"an unterminated quote in the middle swallows the rest": {
			file: "a,b\n1,x\n2,\"y\n3,z\n4,w\n", records: 1, err: "CSV line 3, column 3: the quoted field opened there is never closed"},
		"an unterminated quote without a last line ending": {
			file: "a,b\n1,\"x", records: 0, err: "CSV line 2, column 3"},
		"an unterminated quote in the first field": {
			file: "a,b\n\"1,x\n2,y\n", records: 0, err: "CSV line 2, column 1"},
		"an unterminated quote after blank lines": {
			file: "a,b\n1,x\n\n\r\n2,\"y", records: 1, err: "CSV line 5, column 3"},
		"a field count error does not hide the open quote": {
			file: "a,b\n1,x\n2,y,\"z\n3,w\n", records: 1, err: "CSV line 3, column 5"},
		"an escaped quote just before the end": {
			file: "a,b\n1,\"x\"\"", records: 0, err: "CSV line 2, column 3"},
		"a bare quote inside a quoted field keeps it open": {
			file: "a,b\n1,\"x\"y\n2,z\n", records: 0, err: "CSV line 2, column 3"},
		"an unterminated quote in the header": {
			file: "a,\"b\n1,x\n", records: 0, err: "CSV header: CSV line 1, column 3"},
		"a quoted field closed at the end of the file": {file: "a,b\n1,\"x\"", records: 1},
		"a quoted field closed before a CRLF":          {file: "a,b\n1,\"x\"\r\n2,\"y\"\r\n", records: 2},
		"a quoted field closed before a last CR":       {file: "a,b\n1,\"x\"\r", records: 1},
		"an escaped quote inside a closed field":       {file: "a,b\n1,\"x\"\"y\"\"\"\n", records: 1},
		"a quoted field over several lines":            {file: "a,b\n1,\"x\ny\"\n2,z", records: 2},
		"a bare quote in an unquoted field":            {file: "a,b\n1,5\" screen\n2,z\n", records: 2},
		"a quoted last field of a short row":           {file: "a,b\n1,x\n\"2\"\n", records: 2},
		"an empty file after the header":               {file: "a,b\n", records: 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			for _, src := range []io.Reader{strings.NewReader(c.file), iotest.OneByteReader(strings.NewReader(c.file))} {
				n := 0
				err := d.decodeCSV(context.Background(), src, func(int64, []byte, []any, error) error {
					n++
					return nil
				})
				switch {
				case c.err == "" && err != nil:
					t.Fatalf("error %v, want none", err)
				case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
					t.Fatalf("error %v, want one saying %q", err, c.err)
				case n != c.records:
					t.Fatalf("%d records handed on, want %d", n, c.records)
				}
			}
		})
	}
}

// A CSV header that names a column twice makes every row ambiguous, as a
// JSON record naming a key twice is: the file fails whole, naming the
// column and both fields. With an _extra column, which keeps the other
// fields under their names, so does any name given twice.
func TestDecodeCSVFailsAHeaderNamingAColumnTwice(t *testing.T) {
	cases := []struct {
		name, schema, header string
		err                  string // "" when the file is read
	}{
		{"a column twice", "a:int64,b:string?", "a,b,a", `CSV header names column "a" twice (fields 1 and 3): the file is ambiguous`},
		{"a column twice, once with spaces", "a:int64,b:string?", "b, a ,a", `CSV header names column "a" twice (fields 2 and 3)`},
		{"an unkept field twice", "a:int64,b:string?", "a,x,x", ""},
		{"an extra field twice", "a:int64,_extra:string?", "a,x,x", `CSV header names "x" twice (fields 2 and 3): the file is ambiguous`},
		{"distinct extra fields", "a:int64,_extra:string?", "a,x,y", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema, err := catalog.ParseSchema(c.schema)
			if err != nil {
				t.Fatal(err)
			}
			d := newDecoder(schema, DefaultOptions())
			n := 0
			err = d.decodeCSV(context.Background(), strings.NewReader(c.header+"\n1,2,3\n"), func(_ int64, _ []byte, _ []any, bad error) error {
				if bad != nil {
					return bad
				}
				n++
				return nil
			})
			switch {
			case c.err == "" && (err != nil || n != 1):
				t.Fatalf("%v after %d rows, want the one row", err, n)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("%v, want %q", err, c.err)
			}
		})
	}
}

// Regression (issue 13, item 5): encoding/csv reads a whole record before
// it hands it on, so one record far past --max-record-bytes (here a quote
// opened and closed 4 MiB later) took memory far beyond --memory: a 200
// MiB record at --memory 128MiB peaked at 938 MB. The recorder stops it
// once it holds more than the limit, and the file fails, named by the
// record; records up to the limit still read.
func TestDecodeCSVStopsARecordPastTheLimit(t *testing.T) {
	schema, err := catalog.ParseSchema("a:int64,b:string?")
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MaxRecordBytes = 64 << 10
	d := newDecoder(schema, o)
	long := strings.Repeat("x", 4<<20)
	fits := strings.Repeat("y", 60<<10)
	before := "a,b\n1," + fits + "\n"
	file := before + "2,\"" + long + "\"\n3,z\n"
	var reader countingReader
	reader.r = strings.NewReader(file)
	n := 0
	err = d.decodeCSV(context.Background(), &reader, func(_ int64, _ []byte, _ []any, bad error) error {
		if bad != nil {
			t.Errorf("record %d quarantined: %v", n+1, bad)
		}
		n++
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "CSV record 2 after the header") || !strings.Contains(err.Error(), "--max-record-bytes") {
		t.Fatalf("error %v, want the file to fail naming record 2 and the record limit", err)
	}
	if n != 1 {
		t.Errorf("%d records handed on, want the 1 before the long one", n)
	}
	// What came before, the limit, the slack, and one read of csv's buffer.
	if max := int64(len(before) + o.MaxRecordBytes + csvReadSlack + 64<<10); reader.n > max {
		t.Errorf("read %d bytes of the 4 MiB record before stopping, want at most %d", reader.n, max)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Each record is handed on with its own bytes, which the quarantine keeps
// and the UTF-8 check reads: not the bytes of the record read after it,
// which the reader's buffer had already taken in (found by FuzzDecodeCSV:
// its corpus keeps the input as raw-bytes-overwritten).
func TestDecodeCSVHandsOnEachRecordsOwnBytes(t *testing.T) {
	schema, err := catalog.ParseSchema("a:string?,b:string?")
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	file := "a,b\n1,x\n\xec,y\n2,y,extra\n3,\"q\"\"z\"\n"
	type rec struct {
		raw string
		bad bool
	}
	var got []rec
	err = d.decodeCSV(context.Background(), strings.NewReader(file), func(_ int64, raw []byte, _ []any, bad error) error {
		got = append(got, rec{string(raw), bad != nil})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []rec{{"1,x", false}, {"\xec,y", true}, {"2,y,extra", true}, {`3,"q""z"`, false}}
	if !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}
