package rollup

import (
	"math/rand/v2"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// BenchmarkFoldSum times the grid's innermost loop for an int64 sum: one
// row group of 1M events (a tenth NULL) folded into 20,000 keys × 31 days
// at random cells.
func BenchmarkFoldSum(b *testing.B) {
	const keys, days, n = 20000, 31, 1 << 20
	kc := &colData{typ: catalog.Type{Kind: catalog.KindInt64}}
	ki := newKeyIndex()
	for k := range int64(keys) {
		kc.ints, kc.valid = append(kc.ints, k), append(kc.valid, true)
		ki.add([]*colData{kc}, int(k))
	}
	for _, fn := range []Func{Sum, SumDay} {
		b.Run(string(fn), func(b *testing.B) {
			ms := []Measure{{Name: "m", Func: fn, Column: "v"}}
			g := newGrid(ms, 0, days, &base{ki: ki, vals: make([][]int64, 1), fvals: make([][]float64, 1), his: make([][]int64, 1)})
			r := rand.New(rand.NewPCG(1, 2))
			col := &colData{typ: catalog.Type{Kind: catalog.KindInt64}, ints: make([]int64, n), valid: make([]bool, n)}
			g.cells = make([]int64, n)
			for i := range n {
				g.cells[i] = r.Int64N(keys * days)
				col.ints[i] = r.Int64N(1000) - 500
				col.valid[i] = r.IntN(10) != 0
			}
			b.SetBytes(n * 8)
			for b.Loop() {
				g.fold(0, col)
			}
		})
	}
}
