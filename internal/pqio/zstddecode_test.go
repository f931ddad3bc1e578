package pqio

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
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
