package pqio

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

func TestParquetReadsZstdWithOurCodec(t *testing.T) {
	if got := parquet.LookupCompressionCodec(format.Zstd); got != (zstdCodec{}) {
		t.Fatalf("parquet-go decodes zstd with %T, want catalog.zstdCodec: its codec table moved", got)
	}
	if got := parquet.LookupCompressionCodec(format.Snappy); got.CompressionCodec() != format.Snappy {
		t.Fatalf("snappy codec is %v after the swap: the table's shape changed", got.CompressionCodec())
	}
	src := bytes.Repeat([]byte("sluice compacts small files; "), 1000)
	enc, err := zstdCodec{}.Encode(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	// Frames of the pure-Go encoder decode too (other engines' files).
	goEnc, err := (&parquet.Zstd).Encode(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	for name, frame := range map[string][]byte{"c": enc, "go": goEnc} {
		for _, dst := range [][]byte{nil, make([]byte, 0, len(src)), make([]byte, 0, 10)} {
			out, err := zstdCodec{}.Decode(dst, frame)
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%s frame, dst cap %d: %d bytes, %v", name, cap(dst), len(out), err)
			}
		}
	}
	if _, err := (zstdCodec{}).Decode(nil, []byte("not zstd at all")); err == nil {
		t.Fatal("garbage decoded without error")
	}
}

// A primed page is copied from the bytes given, in place in a buffer
// large enough; only those exact compressed bytes are, and only until
// done. (The primed bytes here differ from the real ones so that a copy
// shows; a caller primes the page's true bytes.)
func TestPrimedZstdPageIsCopiedUntilDone(t *testing.T) {
	src := bytes.Repeat([]byte("sluice compacts small files; "), 1000)
	frame, err := zstdCodec{}.Encode(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	other, err := zstdCodec{}.Encode(nil, src[:len(src)-1])
	if err != nil {
		t.Fatal(err)
	}
	marked := bytes.ToUpper(src)
	done := PrimeZstdPage(frame, marked)
	dst := make([]byte, len(src))
	out, err := parquet.LookupCompressionCodec(format.Zstd).Decode(dst, frame)
	if err != nil || !bytes.Equal(out, marked) || &out[0] != &dst[0] {
		t.Fatalf("primed page: %d bytes, err %v, in place %v", len(out), err, len(out) > 0 && &out[0] == &dst[0])
	}
	if out, err := (zstdCodec{}).Decode(nil, bytes.Clone(frame)); err != nil || !bytes.Equal(out, marked) {
		t.Fatalf("primed page from other memory: err %v", err)
	}
	if out, err := (zstdCodec{}).Decode(nil, other); err != nil || !bytes.Equal(out, src[:len(src)-1]) {
		t.Fatalf("a page not primed: err %v", err)
	}
	done()
	if out, err := (zstdCodec{}).Decode(nil, frame); err != nil || !bytes.Equal(out, src) {
		t.Fatalf("after done: err %v", err)
	}
}

// zstdWritten is the zstd codec with Encode done by one zstd
// implementation: a test writes with it the files a build of sluice
// with that implementation writes.
type zstdWritten struct {
	zstdCodec
	compress func(dst, src []byte, level int) ([]byte, error)
}

func (c zstdWritten) Encode(dst, src []byte) ([]byte, error) {
	return c.compress(dst, src, zstdSmallLevel)
}

// zstdWriters are the zstd encoders whose frames a build reads: its own,
// and the pure Go one a CGO_ENABLED=0 build writes with (compiled into
// every build; the same as its own without cgo).
var zstdWriters = map[string]func(dst, src []byte, level int) ([]byte, error){
	"this build": compressLevel,
	"pure Go":    goCompressLevel,
}

// parquet-go hands Decode a buffer of the page's uncompressed size and,
// when the output is that long, reads the page from that buffer, not from
// the slice Decode returns (Column.decompress). So a page decoded anywhere
// else reads as whatever the buffer held before: a small page of a file
// written without cgo, whose frame does not say its size (the pure-Go
// encoder leaves it out below 256 bytes), was decoded by the C library
// into a buffer of its own, and the file read as corrupt (issue 12). Each
// writer's frames, at sizes on either side of those limits, decode into
// the buffer given, which starts out holding other bytes.
func TestZstdDecodesIntoTheBufferParquetGoGives(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for wname, enc := range zstdWriters {
		for _, size := range []int{1, 10, 255, 256, 1024, 1025, 64 << 10, 256 << 10} {
			page := make([]byte, 0, size)
			for len(page) < size {
				page = fmt.Appendf(page, "%x sluice ", r.Uint32N(1000))
			}
			page = page[:size]
			frame, err := enc(nil, page, zstdSmallLevel)
			if err != nil {
				t.Fatal(err)
			}
			for _, spare := range []int{0, 100} {
				buf := bytes.Repeat([]byte{0xee}, size+spare)[:size]
				out, err := zstdCodec{}.Decode(buf, frame)
				if err != nil || !bytes.Equal(out, page) {
					t.Fatalf("%s, %d bytes: %d bytes decoded, %v", wname, size, len(out), err)
				}
				if &out[0] != &buf[0] || !bytes.Equal(buf, page) {
					t.Fatalf("%s, %d bytes, buffer of capacity %d: decoded elsewhere, the buffer parquet-go reads holds %q...",
						wname, size, cap(buf), buf[:min(size, 8)])
				}
			}
		}
	}
}

// A file whose columns (flat and nested, dictionary-encoded, with NULLs)
// were compressed by either zstd reads back whole, as its rows, in this
// build: the build without cgo writes such files for the build with it to
// compact and publish, and the other way round.
func TestFilesOfEitherZstdReadBack(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	schema := pqSchema(t, "kind:string,note:string?,"+nestedTestSchema)
	var rows [][]any
	for i, r := range nestedTestRows() {
		var note any
		if i%2 == 1 {
			note = fmt.Sprint("note ", i)
		}
		rows = append(rows, append([]any{[]string{"click", "view"}[i%2], note}, r...))
	}
	for wname, enc := range zstdWriters {
		ps, err := ParquetSchemaNoDict(schema, nil, func(string) compress.Codec { return zstdWritten{compress: enc} })
		if err != nil {
			t.Fatal(err)
		}
		shred, err := NewShredder(schema)
		if err != nil {
			t.Fatal(err)
		}
		var prows []parquet.Row
		for _, row := range rows {
			prow, err := shred.Shred(row, nil)
			if err != nil {
				t.Fatal(err)
			}
			prows = append(prows, prow)
		}
		key := strings.ReplaceAll(wname, " ", "-") + ".parquet"
		size := putRaw(t, st, key, ps, prows, ParquetWriterOptions()...)
		got, err := ReadParquetRows(ctx, st, key, size, schema)
		if err != nil {
			t.Fatalf("the file written by %s zstd: %v", wname, err)
		}
		if len(got) != len(rows) {
			t.Fatalf("the file written by %s zstd: %d rows read, want %d", wname, len(got), len(rows))
		}
		for i := range rows {
			for j, c := range schema.Columns {
				if g, w := FormatValue(c.Type, got[i][j]), FormatValue(c.Type, rows[i][j]); g != w {
					t.Errorf("the file written by %s zstd: row %d column %s: read %s, wrote %s", wname, i, c.Name, g, w)
				}
			}
		}
	}
}
