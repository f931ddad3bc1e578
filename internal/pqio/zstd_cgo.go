//go:build cgo

package pqio

import (
	"fmt"
	"sync"

	ddzstd "github.com/DataDog/zstd"
)

// compressLevel compresses src at a zstd level into dst's memory when it
// is large enough. With cgo, the reference C library does it.
func compressLevel(dst, src []byte, level int) ([]byte, error) {
	return cCompressLevel(dst, src, level)
}

// decompress decompresses one frame into dst's memory when it is large
// enough. With cgo, the reference C library does it.
func decompress(dst, src []byte) ([]byte, error) { return cDecompress(dst, src) }

// zstdCtxs are reusable C contexts, each good for compression and
// decompression alike: ddzstd.CompressLevel allocates and initializes a
// fresh context (about a MiB of tables at level 3) for every page.
var zstdCtxs = sync.Pool{New: func() any { return ddzstd.NewCtx() }}

func cCompressLevel(dst, src []byte, level int) ([]byte, error) {
	zc := zstdCtxs.Get().(ddzstd.Ctx)
	out, err := zc.CompressLevel(dst[:cap(dst)], src, level)
	zstdCtxs.Put(zc)
	if err != nil {
		return dst[:0], fmt.Errorf("zstd level %d: %w", level, err)
	}
	return out, nil
}

// cDecompress decompresses into dst's memory whenever the output fits:
// parquet-go reads a page from the buffer it passed, of the page's
// uncompressed size, and not from the slice Decode returns (see
// TestZstdDecodesIntoTheBufferParquetGoGives). ddzstd's Decompress sizes
// its output by the frame's content size instead, and a frame that does
// not carry one (klauspost's encoder, which a build without cgo writes
// with, leaves it out of frames under 256 bytes) got a fresh 1 MB buffer
// in place of dst: the page then read as dst's stale bytes, and small
// files written without cgo as corrupt. So dst at its full capacity is
// tried first, and ddzstd allocates only for an output that outgrows it.
func cDecompress(dst, src []byte) ([]byte, error) {
	zc := zstdCtxs.Get().(ddzstd.Ctx)
	defer zstdCtxs.Put(zc)
	if cap(dst) > 0 {
		n, err := zc.DecompressInto(dst[:cap(dst)], src)
		if err == nil {
			return dst[:n], nil
		}
		if !ddzstd.IsDstSizeTooSmallError(err) {
			return dst[:0], err
		}
	}
	return zc.Decompress(nil, src)
}
