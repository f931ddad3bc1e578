package rollup

import (
	"math/rand/v2"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// An integer key numbers its values as one map of encodings would, with
// values dense and sparse, negative, huge and NULL, across dense's
// doublings.
func TestKeyIndexIntegerKeysNumberAsEncodings(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ki, ref := newKeyIndex(), map[string]int32{}
	col := &colData{}
	col.reset(catalog.Type{Kind: catalog.KindInt64})
	for range 200000 {
		var x int64
		switch r.IntN(6) {
		case 0:
			x = r.Int64()
		case 1:
			x = -r.Int64N(5000)
		default:
			x = r.Int64N(int64(1 + len(ki.vals)*3))
		}
		col.ints, col.valid = append(col.ints[:0], x), append(col.valid[:0], r.IntN(50) != 0)
		cols := []*colData{col}
		want, seen := ref[string(ki.encode(cols, 0))]
		got := ki.lookup(cols, 0)
		if !seen {
			want = -1
		}
		if got != want {
			t.Fatalf("key %d (valid %v): number %d, want %d", x, col.valid[0], got, want)
		}
		if got < 0 {
			id := ki.add(cols, 0)
			ref[string(ki.buf)] = id
			if v := ki.vals[id][0]; col.valid[0] && v != x || !col.valid[0] && v != nil {
				t.Fatalf("key %d: value %v", x, v)
			}
		}
	}
	if len(ki.dense) == 0 || len(ki.ints) == 0 {
		t.Fatalf("dense %d, sparse %d keys: want both used", len(ki.dense), len(ki.ints))
	}
}
