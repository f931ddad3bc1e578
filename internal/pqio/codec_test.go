package pqio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// pages makes n pages of 256 KiB from gen.
func pages(n int, gen func(r *rand.Rand, b []byte) []byte) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		var b []byte
		for len(b) < 256<<10 {
			b = gen(r, b)
		}
		out[i] = b
	}
	return out
}

func TestAdaptiveZstdPicksALevelPerColumnAndRoundTrips(t *testing.T) {
	for name, c := range map[string]struct {
		gen  func(r *rand.Rand, b []byte) []byte
		want int
	}{
		// Random ids: level 1 is as small as level 3, and faster.
		"hex ids stay at level 1": {func(r *rand.Rand, b []byte) []byte {
			s := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
			return append(binary.LittleEndian.AppendUint32(b, uint32(len(s))), s...)
		}, zstdFastLevel},
		// Timestamps a few seconds apart: the repetition is in the high
		// bytes of each value, which level 1 mostly misses.
		"timestamps move to level 3": {func(r *rand.Rand, b []byte) []byte {
			ts := int64(1_700_000_000_000_000)
			if n := len(b); n >= 8 {
				ts = int64(binary.LittleEndian.Uint64(b[n-8:]))
			}
			return binary.LittleEndian.AppendUint64(b, uint64(ts+r.Int64N(5_000_000)))
		}, zstdSmallLevel},
	} {
		t.Run(name, func(t *testing.T) {
			codec := &adaptiveZstd{}
			var dst []byte
			for i, p := range pages(12, c.gen) {
				var err error
				if dst, err = codec.Encode(dst[:0], p); err != nil {
					t.Fatal(err)
				}
				// Every page reads back with parquet-go's own decoder,
				// as any reader's would.
				got, err := parquet.Zstd.Decode(nil, dst)
				if err != nil || !bytes.Equal(got, p) {
					t.Fatalf("page %d does not round-trip: %v", i, err)
				}
			}
			if codec.level != c.want {
				t.Fatalf("settled on level %d (level 1 %d bytes, level 3 %d bytes over the trial); want %d",
					codec.level, codec.fastSize, codec.slowSize, c.want)
			}
		})
	}
}

func TestCodecsShareWhatAColumnTaughtAcrossFiles(t *testing.T) {
	cs := NewCodecs()
	first := cs.For("ts").(*adaptiveZstd)
	for _, p := range pages(12, func(r *rand.Rand, b []byte) []byte {
		return binary.LittleEndian.AppendUint64(b, uint64(1_700_000_000_000_000+r.Int64N(5_000_000)))
	}) {
		if _, err := first.Encode(nil, p); err != nil {
			t.Fatal(err)
		}
	}
	if first.level == 0 {
		t.Fatal("the trial did not settle on a level")
	}
	// The next file's writer of the same column starts decided; another
	// column and a nil set start afresh.
	if got := cs.For("ts").(*adaptiveZstd).level; got != first.level {
		t.Errorf("second file of column ts: level %d, want %d", got, first.level)
	}
	if got := cs.For("id").(*adaptiveZstd).level; got != 0 {
		t.Errorf("column id: level %d before any page, want undecided", got)
	}
	var none *Codecs
	if got := none.For("ts").(*adaptiveZstd).level; got != 0 {
		t.Errorf("nil set: level %d, want a fresh codec", got)
	}
}
