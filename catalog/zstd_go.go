package catalog

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
)

// The pure-Go zstd, klauspost/compress through parquet-go's codec, which
// pools its encoders and decoders and writes frames as the C library does
// (no checksum). It is compiled into every build: a build without cgo
// compresses with it (zstd_nocgo.go), and the cgo build's tests check that
// each zstd reads the other's frames.
//
// klauspost/compress has four levels, not zstd's twenty-two:
// zstd.EncoderLevelFromZstd maps each zstd level onto the closest, level 1
// onto SpeedFastest and level 3 onto SpeedDefault, the two the adaptive
// codec chooses between.
var goCodecs = [...]*pqzstd.Codec{
	zstd.SpeedFastest:           {Level: zstd.SpeedFastest},
	zstd.SpeedDefault:           {Level: zstd.SpeedDefault},
	zstd.SpeedBetterCompression: {Level: zstd.SpeedBetterCompression},
	zstd.SpeedBestCompression:   {Level: zstd.SpeedBestCompression},
}

func goCompressLevel(dst, src []byte, level int) ([]byte, error) {
	out, err := goCodecs[zstd.EncoderLevelFromZstd(level)].Encode(dst, src)
	if err != nil {
		return dst[:0], fmt.Errorf("zstd level %d: %w", level, err)
	}
	return out, nil
}

// goDecompress decodes with any of the codecs: a decoder does not depend
// on the level.
func goDecompress(dst, src []byte) ([]byte, error) {
	return goCodecs[zstd.SpeedDefault].Decode(dst, src)
}
