package rollup

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// 128-bit sums, their text and their bytes agree with math/big.
func TestDecimal128AgreesWithBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var hi, lo int64
	want := new(big.Int)
	for range 100000 {
		x := r.Int64() >> r.IntN(63)
		if r.IntN(2) == 0 {
			x = -x
		}
		add128(&hi, &lo, hiOf(x), x)
		want.Add(want, big.NewInt(x))
		if bigOf(hi, lo).Cmp(want) != 0 {
			t.Fatalf("sum %s, want %s", bigOf(hi, lo), want)
		}
	}
	typ := catalog.Type{Kind: catalog.KindDecimal, Precision: 38, Scale: 4}
	for _, n := range []*big.Int{want, new(big.Int).Neg(want), big.NewInt(5), big.NewInt(-5), big.NewInt(0), big.NewInt(-123456)} {
		h := new(big.Int).Rsh(n, 64).Int64()
		l := int64(new(big.Int).And(n, new(big.Int).SetUint64(^uint64(0))).Uint64())
		s := formatDecimal128(h, l, 4)
		f, _ := new(big.Float).SetPrec(200).SetString(s)
		back, _ := new(big.Float).SetPrec(200).Mul(f, big.NewFloat(1e4)).Int(nil)
		if back.Cmp(n) != 0 {
			t.Fatalf("%s formats as %q", n, s)
		}
		ph, pl, err := decimalText(typ, s)
		if err != nil || ph != h || pl != l {
			t.Fatalf("%q parses as (%d, %d), %v; want (%d, %d)", s, ph, pl, err, h, l)
		}
		b := make([]byte, 16)
		u := new(big.Int).Set(n)
		if u.Sign() < 0 {
			u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		u.FillBytes(b)
		for _, w := range []int{16, 12} {
			if n.BitLen() >= 8*w {
				continue
			}
			bh, bl, err := decimal128(b[16-w:])
			if err != nil || bh != h || bl != l {
				t.Fatalf("%s in %d bytes reads as (%d, %d), %v", n, w, bh, bl, err)
			}
		}
	}
	if s := formatDecimal128(0, 5, 4); s != "0.0005" {
		t.Fatalf("5 at scale 4 formats as %q", s)
	}
}
