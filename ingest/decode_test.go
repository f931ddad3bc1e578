package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
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
