package pqio

import (
	"sync"

	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// Data files are compressed with zstd by the reference C library (through
// cgo) where cgo is on: on the columns sluice rewrites it is faster than
// the pure-Go encoder at both levels sluice uses, and compression is most
// of what a rewrite costs (bench/compact.sh, with and without CGO=0).
// A build without cgo (CGO_ENABLED=0: static binaries, cross-builds) uses
// the pure-Go encoder of klauspost/compress instead, its levels
// SpeedFastest and SpeedDefault standing for 1 and 3 (see zstd_cgo.go and
// zstd_nocgo.go). Both write standard zstd frames; each reads the other's.
//
// Level 1 compresses ids and other high-entropy text as well as level 3,
// but loses up to a third on columns whose repetition is in a few bytes of
// each value (random doubles, timestamps). So each column's codec decides
// on the data: its first pages are compressed at both levels, the smaller
// output is kept, and once enough bytes were seen the column stays at
// level 1 if that cost at most 2% more, else at level 3.
const (
	zstdFastLevel  = 1
	zstdSmallLevel = 3
	// adaptiveTrialBytes of uncompressed pages are compressed twice
	// before a column's level is fixed.
	adaptiveTrialBytes = 2 << 20
	// adaptiveSlack is how much larger (in 1/1000) level 1's output may be
	// for the column to stay at level 1.
	adaptiveSlack = 20
)

// adaptiveZstd is a parquet-go codec for one column. Several files may
// share it (see Codecs), so that the trial is paid once per column per run
// and not once per file: on a rewrite of many partitions the trial was a
// sixth of all compression work. It is safe for concurrent use; only the
// bookkeeping is locked, never a compression.
type adaptiveZstd struct {
	mu                 sync.Mutex
	seen               int64
	fastSize, slowSize int64
	level              int // 0 while undecided
}

// Codecs hands out one shared codec per column name, for writers of one
// table in one run: what the first pages of a column taught holds for the
// same column in the next file, and so does whether its values are too
// distinct for a dictionary (see noDictionary). The zero value is not usable; a nil
// *Codecs gives every call a fresh codec.
type Codecs struct {
	mu sync.Mutex
	m  map[string]*adaptiveZstd
	// noDict is what the first large enough sample of a string column
	// said of its dictionary (see noDictionary).
	noDict map[string]bool
}

// NewCodecs returns an empty set of shared column codecs.
func NewCodecs() *Codecs { return &Codecs{m: map[string]*adaptiveZstd{}} }

// For returns the codec of the named column.
func (cs *Codecs) For(column string) compress.Codec {
	if cs == nil {
		return &adaptiveZstd{} // learns this file's column alone
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.m[column]
	if !ok {
		c = &adaptiveZstd{}
		cs.m[column] = c
	}
	return c
}

func (c *adaptiveZstd) String() string { return "ZSTD" }

func (c *adaptiveZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

// trialScratch holds spare output buffers for the second compression of a
// trial page.
var trialScratch sync.Pool

func (c *adaptiveZstd) Encode(dst, src []byte) ([]byte, error) {
	c.mu.Lock()
	level := c.level
	c.mu.Unlock()
	if level != 0 {
		return compressLevel(dst, src, level)
	}
	fast, err := compressLevel(dst, src, zstdFastLevel)
	if err != nil {
		return fast, err
	}
	var scratch []byte
	if b, ok := trialScratch.Get().(*[]byte); ok {
		scratch = *b
	}
	slow, err := compressLevel(scratch, src, zstdSmallLevel)
	if err != nil {
		return slow, err
	}
	c.mu.Lock()
	if c.level == 0 {
		c.seen += int64(len(src))
		c.fastSize += int64(len(fast))
		c.slowSize += int64(len(slow))
		if c.seen >= adaptiveTrialBytes {
			c.level = zstdSmallLevel
			if c.fastSize*1000 <= c.slowSize*(1000+adaptiveSlack) {
				c.level = zstdFastLevel
			}
		}
	}
	c.mu.Unlock()
	// Keep the smaller; the other buffer becomes a spare.
	keep, spare := fast, slow
	if len(slow) < len(fast) {
		keep, spare = slow, fast
	}
	spare = spare[:0]
	trialScratch.Put(&spare)
	return keep, nil
}

// Decode is zstdCodec's, the decoder parquet-go reads every page with.
func (c *adaptiveZstd) Decode(dst, src []byte) ([]byte, error) { return zstdCodec{}.Decode(dst, src) }
