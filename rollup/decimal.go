package rollup

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// A decimal sum is held exactly as a 128-bit two's complement unscaled
// integer: hi, and lo's bits in an int64. The output's decimal(38, s)
// holds any sum of fewer than 10^20 values of a decimal(18, s) column.

// sumPrecision is the precision of a decimal sum's output column, as SQL
// engines give SUM(decimal(p, s)).
const sumPrecision = 38

// add128 adds (xh, xl) to (*hi, *lo).
func add128(hi, lo *int64, xh, xl int64) {
	s := uint64(*lo) + uint64(xl)
	carry := int64(0)
	if s < uint64(*lo) {
		carry = 1
	}
	*lo = int64(s)
	*hi += xh + carry
}

// hiOf is the high word of an int64 widened to 128 bits.
func hiOf(x int64) int64 { return x >> 63 }

// bigOf is (hi, lo) as a big.Int.
func bigOf(hi, lo int64) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(hi), 64)
	return n.Or(n, new(big.Int).SetUint64(uint64(lo)))
}

// formatDecimal128 is the unscaled (hi, lo) at scale as decimal text
// ("-123.45"), as catalog writes a decimal.
func formatDecimal128(hi, lo int64, scale int) string {
	if hi == hiOf(lo) {
		return pqio.PlacePoint(strconv.FormatInt(lo, 10), scale)
	}
	return pqio.PlacePoint(bigOf(hi, lo).String(), scale)
}

// decimal128 decodes a big-endian two's complement unscaled value of at
// most 16 bytes (a FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY decimal).
func decimal128(b []byte) (hi, lo int64, err error) {
	if len(b) == 0 || len(b) > 16 {
		return 0, 0, fmt.Errorf("a decimal of %d bytes: rollup sums decimals of up to 16", len(b))
	}
	var buf [16]byte
	fill := byte(0)
	if b[0]&0x80 != 0 {
		fill = 0xff
	}
	for i := range 16 - len(b) {
		buf[i] = fill
	}
	copy(buf[16-len(b):], b)
	for i := range 8 {
		hi = hi<<8 | int64(buf[i])
		lo = lo<<8 | int64(buf[8+i])
	}
	return hi, lo, nil
}

// decimalText parses a decimal of type t's text into its unscaled value.
func decimalText(t catalog.Type, s string) (hi, lo int64, err error) {
	n, err := pqio.DecimalUnscaled(t, s)
	if err != nil || n.BitLen() > 126 {
		return 0, 0, fmt.Errorf("%q is not a %s", s, t)
	}
	lo = int64(new(big.Int).And(n, new(big.Int).SetUint64(^uint64(0))).Uint64())
	hi = new(big.Int).Rsh(n, 64).Int64()
	return hi, lo, nil
}
