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

func cDecompress(dst, src []byte) ([]byte, error) {
	zc := zstdCtxs.Get().(ddzstd.Ctx)
	out, err := zc.Decompress(dst[:cap(dst)], src)
	zstdCtxs.Put(zc)
	return out, err
}
