//go:build !cgo

package pqio

// compressLevel compresses src at a zstd level into dst's memory when it
// is large enough. Without cgo, the pure-Go encoder does it.
func compressLevel(dst, src []byte, level int) ([]byte, error) {
	return goCompressLevel(dst, src, level)
}

// decompress decompresses one frame into dst's memory when it is large
// enough. Without cgo, the pure-Go decoder does it.
func decompress(dst, src []byte) ([]byte, error) { return goDecompress(dst, src) }
