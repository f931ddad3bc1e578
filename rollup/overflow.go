package rollup

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/sluice-data/sluice/internal/pqio"
)

// ErrOverflow: a value of an integer or decimal measure does not fit its
// output column: an int64 sum of a day's events, an int64 running total
// (the base plus the days' sums), or a decimal(38, s) sum past 38 digits.
// The run fails naming the measure, the key and the day, before anything
// is written.
var ErrOverflow = errors.New("overflow")

// ErrOptionsChanged: a rerun whose keys, time column, time zone or
// measures differ from those the output was computed with. Recomputing
// would silently drop or change columns and days of the output; --full
// says that is meant.
var ErrOptionsChanged = errors.New("the rollup's options changed")

// sumInts adds the values x (valid where ok) into the cells v, as int64
// adds them, and counts in wraps each time a cell's sum passes an end of
// int64 (+1 past the top, -1 past the bottom): the cell's exact sum is then
// v[c] + wraps[c]·2^64, whatever order the rows came in. The count is kept
// apart, in a map touched only on a wrap, so that the loop stays one add
// and one sign test a row (see BenchmarkFoldSum).
func sumInts(cells []int64, v []int64, x []int64, ok []bool, wraps map[int64]int64) {
	for i, c := range cells {
		if c >= 0 && ok[i] {
			a, b := v[c], x[i]
			s := a + b
			// Stored before the test, so that s is not kept across
			// the map's call: the loop then spills nothing.
			v[c] = s
			if (a^s)&(b^s) < 0 { // a and b of one sign, s of the other
				wraps[c] += 1 | b>>63 // +1 for b >= 0, -1 for b < 0
			}
		}
	}
}

// maxDecimal38Hi and maxDecimal38Lo are the words of the largest unscaled
// decimal(38, s), 10^38 - 1.
var maxDecimal38Hi, maxDecimal38Lo = func() (int64, int64) {
	n := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil), big.NewInt(1))
	return new(big.Int).Rsh(n, 64).Int64(), int64(n.Uint64())
}()

// fitsDecimal38 tells whether the 128-bit (hi, lo) has at most 38 digits.
func fitsDecimal38(hi, lo int64) bool {
	if hi < 0 { // |x| = -x, and -(10^38-1) is the least value
		nh, nl := ^hi, ^lo
		add128(&nh, &nl, 0, 1)
		if nh < 0 { // -2^127 itself
			return false
		}
		hi, lo = nh, nl
	}
	return hi < maxDecimal38Hi || hi == maxDecimal38Hi && uint64(lo) <= uint64(maxDecimal38Lo)
}

// add128Checked adds (xh, xl) to (*hi, *lo) and reports whether the sum
// stayed inside 128 bits.
func add128Checked(hi, lo *int64, xh, xl int64) bool {
	a := *hi
	add128(hi, lo, xh, xl)
	return (a^*hi)&(xh^*hi) >= 0
}

// checkRange goes through the days the grid holds as rows() will write
// them, and fails with ErrOverflow at the first value that does not fit
// its column, naming the measure, the key and the day. It runs before
// anything is written, so a run that would overflow leaves no file.
func (g *grid) checkRange(ki *keyIndex) error {
	running := g.startTotals()
	for k := 0; k < g.keys(); k++ {
		for off := int64(0); off < g.days; off++ {
			c := g.cell(k, off)
			for m, ms := range g.measures {
				if err := g.checkCell(m, k, c, running); err != nil {
					return fmt.Errorf("measure %s, key %s, %s: %w", ms, keyValues(ki.vals[k]), dayString(g.first+off), err)
				}
			}
		}
	}
	return nil
}

// checkCell checks cell c of measure m, key k, and advances its running
// total in running (the totals through the day before).
func (g *grid) checkCell(m, k int, c int64, running totals) error {
	ms := g.measures[m]
	switch {
	case ms.float || ms.Func == Count || ms.Func == Min || ms.Func == Max:
		// Floats go to ±Inf as every engine's do; a count is bounded by
		// the events read, min and max by the column's values.
		return nil
	case ms.dec && ms.Func == Sum:
		hi, lo := running.his[m][k], running.ints[m][k]
		if !add128Checked(&hi, &lo, g.vhi[m][c], g.vals[m][c]) || !fitsDecimal38(hi, lo) {
			r, d := bigOf(running.his[m][k], running.ints[m][k]), bigOf(g.vhi[m][c], g.vals[m][c])
			return fmt.Errorf("the running total %s + the day's %s = %s has more than %d digits: %w", decText(r, ms),
				decText(d, ms), decText(new(big.Int).Add(r, d), ms), sumPrecision, ErrOverflow)
		}
		running.his[m][k], running.ints[m][k] = hi, lo
	case ms.dec:
		if !fitsDecimal38(g.vhi[m][c], g.vals[m][c]) {
			return fmt.Errorf("the day's sum %s has more than %d digits: %w",
				decText(bigOf(g.vhi[m][c], g.vals[m][c]), ms), sumPrecision, ErrOverflow)
		}
	case ms.Func == Sum:
		// The day's exact sum, its wraps put back, then the total, in
		// 128 bits.
		r, dh, dl := running.ints[m][k], hiOf(g.vals[m][c])+g.wraps[m][c], g.vals[m][c]
		hi, lo := hiOf(r), r
		add128(&hi, &lo, dh, dl)
		if hi != hiOf(lo) {
			return fmt.Errorf("the running total %d + the day's %s = %s does not fit in int64: %w", r, bigOf(dh, dl), bigOf(hi, lo), ErrOverflow)
		}
		running.ints[m][k] = lo
	default: // SumDay
		if w := g.wraps[m][c]; w != 0 {
			return fmt.Errorf("the day's sum %s does not fit in int64: %w", bigOf(hiOf(g.vals[m][c])+w, g.vals[m][c]), ErrOverflow)
		}
	}
	return nil
}

// decText is the unscaled n at measure m's scale, as decimal text.
func decText(n *big.Int, m Measure) string { return pqio.PlacePoint(n.String(), m.src.Scale) }

// keyValues is a key's values as an error shows them: "(1, eu)".
func keyValues(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if v == nil {
			parts[i] = "NULL"
			continue
		}
		if d, ok := v.(interface{ Format(string) string }); ok {
			parts[i] = d.Format("2006-01-02")
			continue
		}
		parts[i] = fmt.Sprint(v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
