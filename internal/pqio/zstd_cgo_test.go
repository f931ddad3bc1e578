//go:build cgo

package pqio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// A table written by a cgo build is read by a build without cgo and the
// other way round: each zstd decodes every frame the other writes, at the
// levels sluice writes, on the kinds of columns a table holds, into the
// buffer given when it is large enough (parquet-go reads the page from
// there: see TestZstdDecodesIntoTheBufferParquetGoGives), from pages of a
// few bytes, whose pure-Go frames do not say their size, to full ones; and
// the pure-Go build's files are not much larger.
func TestCAndPureGoZstdReadEachOther(t *testing.T) {
	kinds := map[string]func(r *rand.Rand, b []byte) []byte{
		"hex ids": func(r *rand.Rand, b []byte) []byte {
			return fmt.Appendf(b, "%016x%016x", r.Uint64(), r.Uint64())
		},
		"timestamps": func(r *rand.Rand, b []byte) []byte {
			return binary.LittleEndian.AppendUint64(b, uint64(1_700_000_000_000_000+r.Int64N(5_000_000)))
		},
		"random doubles": func(r *rand.Rand, b []byte) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(r.NormFloat64()))
		},
		"one value repeated": func(r *rand.Rand, b []byte) []byte { return append(b, "sluice "...) },
	}
	impls := map[string]struct {
		compress   func(dst, src []byte, level int) ([]byte, error)
		decompress func(dst, src []byte) ([]byte, error)
	}{
		"C":       {cCompressLevel, cDecompress},
		"pure Go": {goCompressLevel, goDecompress},
	}
	for kind, gen := range kinds {
		full := pages(1, gen)[0]
		for _, page := range [][]byte{full[:10], full[:255], full[:1025], full} {
			for _, level := range []int{zstdFastLevel, zstdSmallLevel} {
				for wname, w := range impls {
					frame, err := w.compress(nil, page, level)
					if err != nil {
						t.Fatalf("%s, %s, level %d: %v", kind, wname, level, err)
					}
					// As equivalent as the libraries allow: the pure-Go frames
					// of full pages are at most 5% larger (it gives up on
					// entropy coding sooner: random doubles), never stored
					// raw where libzstd compresses.
					if c, _ := cCompressLevel(nil, page, level); len(page) == len(full) && len(frame) > len(c)*105/100+64 {
						t.Errorf("%s, level %d: %s writes %d bytes, libzstd %d", kind, level, wname, len(frame), len(c))
					}
					for rname, r := range impls {
						for _, dst := range [][]byte{nil, make([]byte, 0, len(page)), make([]byte, 0, len(page)+100), make([]byte, 0, 5)} {
							out, err := r.decompress(dst, frame)
							if err != nil || !bytes.Equal(out, page) {
								t.Fatalf("%s written by %s at level %d, read by %s (%d bytes, dst cap %d): %d bytes, %v",
									kind, wname, level, rname, len(page), cap(dst), len(out), err)
							}
							if cap(dst) >= len(page) && &out[0] != &dst[:1][0] {
								t.Fatalf("%s written by %s at level %d, read by %s (%d bytes, dst cap %d): decoded outside dst",
									kind, wname, level, rname, len(page), cap(dst))
							}
						}
					}
				}
			}
		}
	}
}
