package catalog

import (
	"fmt"
	_ "unsafe" // go:linkname

	ddzstd "github.com/DataDog/zstd"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// parquet-go decodes every zstd page it reads with the codec its
// compressionCodecs table holds for format.Zstd, a pure-Go decoder, and
// offers no option to choose another. Reading is half of a compaction's
// decompression (the inputs, then the read-back of every output for
// verification), and the reference C decoder is about three times as fast,
// so sluice puts its own codec in that table once, at start. The table is
// reached by linkname; TestParquetReadsZstdWithC fails if a parquet-go
// upgrade renames or reshapes it.
//
//go:linkname parquetCodecs github.com/parquet-go/parquet-go.compressionCodecs
var parquetCodecs [format.Lz4Raw + 1]compress.Codec

func init() { parquetCodecs[format.Zstd] = cZstd{} }

// cZstd is zstd through the C library: Decode for every page parquet-go
// reads, Encode (level 3) for the files written without a per-column codec.
type cZstd struct{}

func (cZstd) String() string                            { return "ZSTD" }
func (cZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (cZstd) Encode(dst, src []byte) ([]byte, error) {
	return compressLevel(dst, src, zstdSmallLevel)
}

// Decode decompresses one page. dst, when its capacity holds the page's
// uncompressed size (parquet-go passes such a buffer), is reused.
func (cZstd) Decode(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst[:0], nil
	}
	zc := zstdCtxs.Get().(ddzstd.Ctx) // a context both compresses and decompresses
	out, err := zc.Decompress(dst[:cap(dst)], src)
	zstdCtxs.Put(zc)
	if err != nil {
		return dst[:0], fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}
