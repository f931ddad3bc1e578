package pqio

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The pure-Go zstd, klauspost/compress. It is compiled into every build: a
// build without cgo compresses with it (zstd_nocgo.go), and the cgo
// build's tests check that each zstd reads the other's frames.
//
// klauspost/compress has four levels, not zstd's twenty-two:
// zstd.EncoderLevelFromZstd maps each zstd level onto the closest, level 1
// onto SpeedFastest and level 3 onto SpeedDefault, the two the adaptive
// codec chooses between. Its options are set to write what libzstd writes
// for a page: no checksum (Parquet pages have their own), and entropy-coded
// literals even in a block without matches, which those two levels skip
// by default — random hex ids were then stored raw, twice libzstd's size.

// goEncoders holds one encoder per level, made on first use. An encoder's
// EncodeAll is safe for concurrent use, GOMAXPROCS calls at a time.
var goEncoders [zstd.SpeedBestCompression + 1]struct {
	once sync.Once
	enc  *zstd.Encoder
	err  error
}

func goEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	e := &goEncoders[level]
	e.once.Do(func() {
		e.enc, e.err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(level),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(true),
			zstd.WithAllLitEntropyCompression(true),
			// A page is at most a few hundred KiB (parquet-go's page
			// buffer is 256 KiB), so a 1 MiB window loses no match;
			// the default 8 MiB, with the full-size tables, took a
			// compaction's peak RSS from 123 to 200 MB.
			zstd.WithWindowSize(1<<20),
			zstd.WithLowerEncoderMem(true))
	})
	return e.enc, e.err
}

// goDecoder decodes GOMAXPROCS frames at a time (DecodeAll), made on
// first use.
var goDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
})

func goCompressLevel(dst, src []byte, level int) ([]byte, error) {
	enc, err := goEncoder(zstd.EncoderLevelFromZstd(level))
	if err != nil {
		return dst[:0], fmt.Errorf("zstd level %d: %w", level, err)
	}
	return enc.EncodeAll(src, dst[:0]), nil
}

func goDecompress(dst, src []byte) ([]byte, error) {
	dec, err := goDecoder()
	if err != nil {
		return dst[:0], err
	}
	return dec.DecodeAll(src, dst[:0])
}
