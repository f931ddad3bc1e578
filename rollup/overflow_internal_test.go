package rollup

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// sumInts's cells and wraps give the exact sums math/big gives, for values
// that wrap often in both directions.
func TestSumIntsCountsWraps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const cellsN, n = 4, 100000
	cells, x, ok := make([]int64, n), make([]int64, n), make([]bool, n)
	want := make([]*big.Int, cellsN)
	for c := range want {
		want[c] = new(big.Int)
	}
	for i := range n {
		cells[i] = r.Int64N(cellsN+1) - 1 // -1: a row not counted
		x[i] = r.Int64() >> r.IntN(3)
		if r.IntN(2) == 0 {
			x[i] = -x[i] - r.Int64N(2) // math.MinInt64 too
		}
		ok[i] = r.IntN(10) != 0
		if cells[i] >= 0 && ok[i] {
			want[cells[i]].Add(want[cells[i]], big.NewInt(x[i]))
		}
	}
	v, wraps := make([]int64, cellsN), map[int64]int64{}
	sumInts(cells, v, x, ok, wraps)
	for c := range cellsN {
		if got := bigOf(hiOf(v[c])+wraps[int64(c)], v[c]); got.Cmp(want[c]) != 0 {
			t.Errorf("cell %d: %s (%d wraps), want %s", c, got, wraps[int64(c)], want[c])
		}
	}
	if len(wraps) == 0 {
		t.Fatal("no cell wrapped: the test tests nothing")
	}
}

// fitsDecimal38 and add128Checked at their edges.
func TestDecimal38Range(t *testing.T) {
	ten38 := new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
	words := func(n *big.Int) (int64, int64) {
		u := new(big.Int).Set(n)
		if u.Sign() < 0 {
			u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return new(big.Int).Rsh(u, 64).Int64(), int64(new(big.Int).And(u, new(big.Int).SetUint64(math.MaxUint64)).Uint64())
	}
	one := big.NewInt(1)
	for n, fits := range map[string]bool{
		new(big.Int).Sub(ten38, one).String():                      true,
		ten38.String():                                             false,
		new(big.Int).Neg(new(big.Int).Sub(ten38, one)).String():    true,
		new(big.Int).Neg(ten38).String():                           false,
		new(big.Int).Neg(new(big.Int).Lsh(one, 127)).String():      false,
		new(big.Int).Sub(new(big.Int).Lsh(one, 127), one).String(): false,
		"0":  true,
		"-1": true,
	} {
		b, _ := new(big.Int).SetString(n, 10)
		if hi, lo := words(b); fitsDecimal38(hi, lo) != fits {
			t.Errorf("fitsDecimal38(%s) = %v, want %v", n, !fits, fits)
		}
	}
	hi, lo := words(new(big.Int).Sub(new(big.Int).Lsh(one, 127), one)) // 2^127 - 1
	if add128Checked(&hi, &lo, 0, 1) {
		t.Error("2^127 - 1 + 1 stayed inside 128 bits")
	}
	hi, lo = words(big.NewInt(-5))
	if !add128Checked(&hi, &lo, 0, 7) || hi != 0 || lo != 2 {
		t.Errorf("-5 + 7 = (%d, %d)", hi, lo)
	}
}
