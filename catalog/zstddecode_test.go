package catalog

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

func TestParquetReadsZstdWithC(t *testing.T) {
	if got := parquet.LookupCompressionCodec(format.Zstd); got != (cZstd{}) {
		t.Fatalf("parquet-go decodes zstd with %T, want catalog.cZstd: its codec table moved", got)
	}
	if got := parquet.LookupCompressionCodec(format.Snappy); got.CompressionCodec() != format.Snappy {
		t.Fatalf("snappy codec is %v after the swap: the table's shape changed", got.CompressionCodec())
	}
	src := bytes.Repeat([]byte("sluice compacts small files; "), 1000)
	enc, err := cZstd{}.Encode(nil, src)
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
			out, err := cZstd{}.Decode(dst, frame)
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%s frame, dst cap %d: %d bytes, %v", name, cap(dst), len(out), err)
			}
		}
	}
	if _, err := (cZstd{}).Decode(nil, []byte("not zstd at all")); err == nil {
		t.Fatal("garbage decoded without error")
	}
}
