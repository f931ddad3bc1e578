package rollup

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// New keys met in the middle of row groups make the grid move its cells
// to make room (several times here: 3,000 keys after 3 from the base);
// every cell keeps what was folded into it, before and after each move:
// sums (their wraps past int64 too), counts, min and max, as a map of
// (key, day) computes them.
func TestGridKeepsCellsAsNewKeysMoveThem(t *testing.T) {
	const days, rowGroups, n = 5, 6, 2000
	ms := []Measure{{Name: "s", Func: Sum, Column: "v"}, {Name: "n", Func: Count}, {Name: "lo", Func: Min, Column: "v"},
		{Name: "hi", Func: Max, Column: "v"}, {Name: "d", Func: SumDay, Column: "v"}}
	ki := newKeyIndex()
	kc := &colData{typ: catalog.Type{Kind: catalog.KindInt64}}
	for k := range int64(3) {
		kc.ints, kc.valid = append(kc.ints, 5000+k), append(kc.valid, true)
		ki.add([]*colData{kc}, int(k))
	}
	b := &base{ki: ki, vals: [][]int64{{7, 8, 9}, nil, nil, nil, nil}, fvals: make([][]float64, len(ms)), his: make([][]int64, len(ms))}
	g := newGrid(ms, 10, days, b)

	type cell struct{ key, day int64 }
	type want struct {
		sum, daySum   *big.Int
		count, lo, hi int64
	}
	wants := map[cell]*want{}
	r := rand.New(rand.NewPCG(4, 4))
	var tl tally
	for range rowGroups {
		keys := &colData{typ: catalog.Type{Kind: catalog.KindInt64}}
		vals := &colData{typ: catalog.Type{Kind: catalog.KindInt64}}
		var dayNums []int64
		var dayOK []bool
		for range n {
			key := 5000 + r.Int64N(3003) // most keys new, met in any order
			d := 10 + r.Int64N(days)
			v := r.Int64N(2000) - 1000
			if r.IntN(50) == 0 {
				v = math.MaxInt64 - r.Int64N(10) // wraps the sums
			}
			keys.ints, keys.valid = append(keys.ints, key), append(keys.valid, true)
			vals.ints, vals.valid = append(vals.ints, v), append(vals.valid, true)
			dayNums, dayOK = append(dayNums, d), append(dayOK, true)
			w := wants[cell{key, d}]
			if w == nil {
				w = &want{sum: new(big.Int), daySum: new(big.Int), lo: math.MaxInt64, hi: math.MinInt64}
				wants[cell{key, d}] = w
			}
			w.sum.Add(w.sum, big.NewInt(v))
			w.daySum.Add(w.daySum, big.NewInt(v))
			w.count++
			w.lo, w.hi = min(w.lo, v), max(w.hi, v)
		}
		err := g.add(ki, []*colData{keys}, dayNums, dayOK, []*colData{vals, nil, vals, vals, vals}, 9, true, &tl, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if g.keys() != ki.len() || g.kcap < int64(g.keys()) {
		t.Fatalf("the grid holds %d keys with room for %d; the index has %d", g.keys(), g.kcap, ki.len())
	}
	if g.kcap == 3 {
		t.Fatal("the grid never moved its cells: the test tests nothing")
	}
	wrapped := 0
	for k, kv := range ki.vals {
		key := kv[0].(int64)
		for off := range int64(days) {
			c := g.cell(k, off)
			w := wants[cell{key, 10 + off}]
			if w == nil {
				w = &want{sum: new(big.Int), daySum: new(big.Int), lo: math.MaxInt64, hi: math.MinInt64}
			}
			for m, sum := range []*big.Int{w.sum, nil, nil, nil, w.daySum} {
				if sum == nil {
					continue
				}
				got := bigOf(hiOf(g.vals[m][c])+g.wraps[m][c], g.vals[m][c])
				if got.Cmp(sum) != 0 {
					t.Fatalf("key %d, day %d, %s: %s, want %s", key, 10+off, ms[m], got, sum)
				}
				if g.wraps[m][c] != 0 {
					wrapped++
				}
			}
			if g.count[c] != w.count || g.vals[2][c] != w.lo || g.vals[3][c] != w.hi || g.has[2][c] != (w.count > 0) {
				t.Fatalf("key %d, day %d: count %d, min %d, max %d, want %d, %d, %d", key, 10+off, g.count[c], g.vals[2][c], g.vals[3][c], w.count, w.lo, w.hi)
			}
		}
	}
	if wrapped == 0 {
		t.Fatal("no sum wrapped: the test tests nothing")
	}
	if tl.read != rowGroups*n {
		t.Fatalf("%d events read, want %d", tl.read, rowGroups*n)
	}
}
