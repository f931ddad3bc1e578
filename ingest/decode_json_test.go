package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// failingReader yields r, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

// JSON lines are read, decoded and handed on by several goroutines: the
// records still arrive one at a time, in file order, with their line
// numbers and bytes, whatever their sizes; a failing emit or a read error
// stops the file at the right record, and no goroutine is left behind.
func TestDecodeJSONLHandsRecordsOnInOrder(t *testing.T) {
	schema, err := catalog.ParseSchema("id:int64,note:string?")
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MaxRecordBytes = 300 << 10 // over the reader's 256 KiB buffer
	var file bytes.Buffer
	type want struct {
		line int64
		id   int64
		bad  bool
	}
	var wants []want
	line := int64(0)
	for i := range 10000 {
		line++
		switch {
		case i%997 == 0:
			file.WriteString("\n") // blank: not a record
			continue
		case i%1009 == 0:
			fmt.Fprintf(&file, "{\"id\":%d,\n", i) // malformed
			wants = append(wants, want{line, 0, true})
			continue
		case i == 4321:
			fmt.Fprintf(&file, "{\"id\":%d,\"note\":%q}\n", i, strings.Repeat("x", 280<<10)) // long, within the limit
		case i == 7777:
			fmt.Fprintf(&file, "{\"id\":%d,\"note\":%q}\n", i, strings.Repeat("y", 400<<10)) // over the limit
			wants = append(wants, want{line, 0, true})
			continue
		default:
			fmt.Fprintf(&file, "{\"id\":%d,\"note\":\"n%d\"}\n", i, i)
		}
		wants = append(wants, want{line, int64(i), false})
	}
	before := runtime.NumGoroutine()

	d := newDecoder(schema, o)
	var got []want
	err = d.decodeJSONL(context.Background(), bytes.NewReader(file.Bytes()), func(pos int64, raw []byte, row []any, bad error) error {
		if bad != nil {
			got = append(got, want{pos, 0, true})
			return nil
		}
		if !bytes.Contains(raw, fmt.Appendf(nil, `"id":%d,`, row[0])) {
			return fmt.Errorf("line %d: raw bytes %.40q are not the row's (id %v)", pos, raw, row[0])
		}
		got = append(got, want{pos, row[0].(int64), false})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(wants) {
		t.Fatalf("%d records handed on, want %d", len(got), len(wants))
	}
	for i := range wants {
		if got[i] != wants[i] {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], wants[i])
		}
	}

	// A failing emit stops the file there.
	stop := errors.New("stop")
	n := 0
	err = d.decodeJSONL(context.Background(), bytes.NewReader(file.Bytes()), func(int64, []byte, []any, error) error {
		if n++; n == 2500 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2500 {
		t.Fatalf("after a failing emit: %v after %d records", err, n)
	}

	// A read error comes after every record read before it.
	broken := errors.New("connection reset")
	n = 0
	err = d.decodeJSONL(context.Background(), &failingReader{bytes.NewReader(file.Bytes()[:file.Len()/2]), broken}, func(int64, []byte, []any, error) error {
		n++
		return nil
	})
	if !errors.Is(err, broken) || n == 0 {
		t.Fatalf("read error: %v after %d records", err, n)
	}

	// A cancelled context stops the file.
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	err = d.decodeJSONL(ctx, bytes.NewReader(file.Bytes()), func(int64, []byte, []any, error) error {
		if n++; n == 100 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v after %d records", err, n)
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines after decoding, %d before", after, before)
	}
}

// Records are the file's lines as written, whatever their sizes and
// wherever a read ends: against a plain split of the file, over random
// files of short, empty, blank and CRLF lines, lines around the read
// buffer's size and over the size limit, with and without a last line
// ending, read in one piece and a few bytes at a time.
func TestDecodeJSONLRecordsAreTheFilesLines(t *testing.T) {
	schema, err := catalog.ParseSchema("id:int64,note:string?")
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.MaxRecordBytes = jsonBlockBytes + 1000
	d := newDecoder(schema, o)
	rnd := rand.New(rand.NewPCG(7, 8))
	type rec struct {
		line int64
		raw  string
	}
	for round := range 40 {
		var file bytes.Buffer
		nLines := 1 + rnd.IntN(3000)
		for k := range nLines {
			switch c := rnd.IntN(100); {
			case c < 3:
				// nothing: an empty line
			case c < 5:
				file.WriteString(" \t ")
			case c < 7:
				// around the buffer's size, and over the limit
				n := jsonBlockBytes - 500 + rnd.IntN(2000)
				fmt.Fprintf(&file, `{"id":%d,"note":"%s"}`, k, strings.Repeat("x", n))
			default:
				fmt.Fprintf(&file, `{"id":%d,"note":"%s"}`, k, strings.Repeat("n", rnd.IntN(300)))
			}
			if k < nLines-1 || rnd.IntN(2) == 0 {
				if rnd.IntN(10) == 0 {
					file.WriteString("\r")
				}
				file.WriteString("\n")
			}
		}
		var want []rec
		for i, l := range strings.SplitAfter(file.String(), "\n") {
			if l == "" {
				continue // after the last line ending
			}
			r := strings.TrimRight(l, "\r\n")
			if strings.TrimSpace(r) == "" && len(l) <= o.MaxRecordBytes {
				continue
			}
			if len(l) > o.MaxRecordBytes {
				r = l[:o.MaxRecordBytes]
			}
			want = append(want, rec{int64(i + 1), r})
		}
		var src io.Reader = bytes.NewReader(file.Bytes())
		if round%2 == 1 {
			src = iotest.HalfReader(src) // short reads
		}
		var got []rec
		err := d.decodeJSONL(context.Background(), src, func(pos int64, raw []byte, _ []any, _ error) error {
			got = append(got, rec{pos, string(raw)})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d records, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("round %d, record %d: line %d %.60q (%d bytes), want line %d %.60q (%d bytes)",
					round, i, got[i].line, got[i].raw, len(got[i].raw), want[i].line, want[i].raw, len(want[i].raw))
			}
		}
	}
}
