package catalog

import (
	"fmt"
	"sync"

	ddzstd "github.com/DataDog/zstd"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// Data files are compressed with zstd by the reference C library (through
// cgo): on the columns sluice rewrites it is about three times as fast as
// the pure-Go encoder at level 1 and faster at level 3, and compression is
// most of what a rewrite costs (see bench/compact.sh).
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

// adaptiveZstd is a parquet-go codec for one column of one file.
type adaptiveZstd struct {
	mu                 sync.Mutex
	seen               int64
	fastSize, slowSize int64
	level              int // 0 while undecided
	scratch            []byte
}

// NewDataFileCodec returns a fresh zstd codec for one column of a data file
// being written: it learns which level pays for that column's values.
func NewDataFileCodec() compress.Codec { return &adaptiveZstd{} }

func (c *adaptiveZstd) String() string { return "ZSTD" }

func (c *adaptiveZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *adaptiveZstd) Encode(dst, src []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.level != 0 {
		return compressLevel(dst, src, c.level)
	}
	fast, err := compressLevel(dst, src, zstdFastLevel)
	if err != nil {
		return fast, err
	}
	slow, err := compressLevel(c.scratch, src, zstdSmallLevel)
	if err != nil {
		return slow, err
	}
	c.seen += int64(len(src))
	c.fastSize += int64(len(fast))
	c.slowSize += int64(len(slow))
	if c.seen >= adaptiveTrialBytes {
		c.level = zstdSmallLevel
		if c.fastSize*1000 <= c.slowSize*(1000+adaptiveSlack) {
			c.level = zstdFastLevel
		}
	}
	if len(slow) < len(fast) {
		// Keep the smaller; the spare buffer becomes the next scratch.
		c.scratch = fast[:0]
		return slow, nil
	}
	c.scratch = slow[:0]
	return fast, nil
}

// zstdCtxs are reusable compression contexts: ddzstd.CompressLevel
// allocates and initializes a fresh context (about a MiB of tables at level
// 3) for every page.
var zstdCtxs = sync.Pool{New: func() any { return ddzstd.NewCtx() }}

func compressLevel(dst, src []byte, level int) ([]byte, error) {
	zc := zstdCtxs.Get().(ddzstd.Ctx)
	out, err := zc.CompressLevel(dst[:cap(dst)], src, level)
	zstdCtxs.Put(zc)
	if err != nil {
		return dst[:0], fmt.Errorf("zstd level %d: %w", level, err)
	}
	return out, nil
}

// Decode is the C decoder's (see cZstd).
func (c *adaptiveZstd) Decode(dst, src []byte) ([]byte, error) { return cZstd{}.Decode(dst, src) }
