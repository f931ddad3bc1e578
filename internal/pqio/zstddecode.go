package pqio

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// parquet-go decodes every zstd page it reads with the codec its
// compressionCodecs table holds for format.Zstd, a pure-Go decoder, and
// offers no option to choose another. Reading is half of a compaction's
// decompression (the inputs, then the read-back of every output for
// verification), and the reference C decoder is much faster, so sluice
// puts its own codec in that table once, at start: the C decoder
// where cgo is on, and in every build the primed pages (PrimeZstdPage),
// which spare a compaction a second decompression of a page it has just
// decompressed itself. The table is reached by linkname;
// TestParquetReadsZstdWithOurCodec fails if a parquet-go upgrade renames or
// reshapes it.
//
//go:linkname parquetCodecs github.com/parquet-go/parquet-go.compressionCodecs
var parquetCodecs [format.Lz4Raw + 1]compress.Codec

func init() { parquetCodecs[format.Zstd] = zstdCodec{} }

// zstdCodec is sluice's zstd (the build's, see compressLevel): Decode for
// every page parquet-go reads, Encode (level 3) for the files written
// without a per-column codec.
type zstdCodec struct{}

func (zstdCodec) String() string                            { return "ZSTD" }
func (zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return compressLevel(dst, src, zstdSmallLevel)
}

// Decode decompresses one page. dst, when its capacity holds the page's
// uncompressed size (parquet-go passes such a buffer), is reused. A page
// primed with PrimeZstdPage is copied, not decompressed.
func (zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst[:0], nil
	}
	if u, ok := primedPage(src); ok {
		return append(dst[:0], u...), nil // in dst when it holds u
	}
	out, err := decompress(dst, src)
	if err != nil {
		return dst[:0], fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}

// Pages whose decompressed bytes a caller already holds, primed for the
// read that is about to ask for them (see PrimeZstdPage). A compaction
// decompresses an input page itself to compare it with what it writes
// (compact's reusingCodec); parquet-go then reads the same page, and this
// spares it a second decompression. Few pages are primed at a time (one
// per rewrite running), so a list and a byte comparison find them.
var primed struct {
	n     atomic.Int32 // len(pages), read without the lock
	mu    sync.Mutex
	pages []primedZstd
}

type primedZstd struct{ compressed, uncompressed []byte }

// PrimeZstdPage tells the zstd decoder that compressed decompresses to
// uncompressed: until done is called, decoding those exact bytes copies
// uncompressed instead of decompressing. The caller must have decompressed
// compressed itself (with zstd) to get uncompressed, and must not change
// either until done.
func PrimeZstdPage(compressed, uncompressed []byte) (done func()) {
	primed.mu.Lock()
	primed.pages = append(primed.pages, primedZstd{compressed, uncompressed})
	primed.n.Store(int32(len(primed.pages)))
	primed.mu.Unlock()
	return func() {
		primed.mu.Lock()
		defer primed.mu.Unlock()
		for i, p := range primed.pages {
			if len(p.compressed) > 0 && len(compressed) > 0 && &p.compressed[0] == &compressed[0] && len(p.compressed) == len(compressed) {
				primed.pages = slices.Delete(primed.pages, i, i+1)
				break
			}
		}
		primed.n.Store(int32(len(primed.pages)))
	}
}

// primedPage returns the decompressed bytes of src if they were primed.
func primedPage(src []byte) ([]byte, bool) {
	if primed.n.Load() == 0 {
		return nil, false
	}
	primed.mu.Lock()
	defer primed.mu.Unlock()
	for _, p := range primed.pages {
		if bytes.Equal(p.compressed, src) {
			return p.uncompressed, true
		}
	}
	return nil, false
}
