package rollup

import (
	"errors"
	"math"
)

// grid holds the (key, day) cells of the days being computed, dense: cell
// k*days + (day-first). Its size is the output's, whatever the events.
type grid struct {
	measures []Measure
	first    int64 // the first day computed
	days     int64 // days computed: first .. first+days-1
	// base[m][k] (fbase for a float64 measure) is running measure m's
	// value for key k on day first-1 (the snapshot's, or the output's
	// stored total); nil for per-day measures.
	base  [][]int64
	fbase [][]float64
	// bhi and vhi hold the high words of a decimal sum's base and cells
	// (base and vals their low words).
	bhi, vhi [][]int64
	// count[c] is the number of events in cell c; vals[m][c] (fvals for
	// a float64 measure) the measure's aggregate (a sum of deltas, a
	// day's sum, min or max); has[m][c] whether a min or max saw a
	// non-NULL value.
	count []int64
	vals  [][]int64
	fvals [][]float64
	has   [][]bool
	// wraps[m] counts, for an int64 sum or sum_day, how often a cell's
	// sum passed an end of int64 (see sumInts); nil for other measures.
	wraps []map[int64]int64
	// cells is scratch: each row's cell, -1 for a row not counted.
	cells []int64
	// shard, when not nil, is the part of the keys computed (a sharded
	// run's, see PlanWork): rows of other keys are skipped, uncounted.
	shard *keyShard
}

func newGrid(ms []Measure, first, days int64, b *base) *grid {
	keys := b.ki.len()
	g := &grid{measures: ms, first: first, days: days, base: b.vals, fbase: b.fvals, bhi: b.his,
		vals: make([][]int64, len(ms)), fvals: make([][]float64, len(ms)), vhi: make([][]int64, len(ms)), has: make([][]bool, len(ms)),
		wraps: make([]map[int64]int64, len(ms))}
	for m, ms := range ms {
		if ms.intSum() {
			g.wraps[m] = map[int64]int64{}
		}
		switch {
		case ms.Func.Running() && ms.float:
			for len(g.fbase[m]) < keys {
				g.fbase[m] = append(g.fbase[m], 0)
			}
		case ms.Func.Running():
			for len(g.base[m]) < keys {
				g.base[m] = append(g.base[m], 0)
			}
			for ms.dec && len(g.bhi[m]) < keys {
				g.bhi[m] = append(g.bhi[m], 0)
			}
		}
	}
	for k := 0; k < keys; k++ {
		g.addCells()
	}
	return g
}

// addKey makes room for one more key, whose base is 0.
func (g *grid) addKey() {
	g.addCells()
	for m, ms := range g.measures {
		switch {
		case ms.Func.Running() && ms.float:
			g.fbase[m] = append(g.fbase[m], 0)
		case ms.Func.Running():
			g.base[m] = append(g.base[m], 0)
			if ms.dec {
				g.bhi[m] = append(g.bhi[m], 0)
			}
		}
	}
}

func (g *grid) addCells() {
	g.count = append(g.count, make([]int64, g.days)...)
	for m, ms := range g.measures {
		fill, ffill := int64(0), 0.0
		switch ms.Func {
		case Min:
			fill, ffill = math.MaxInt64, math.Inf(1)
		case Max:
			fill, ffill = math.MinInt64, math.Inf(-1)
		}
		if ms.wide() {
			g.vhi[m] = append(g.vhi[m], make([]int64, g.days)...)
		}
		for range g.days {
			if ms.float {
				g.fvals[m] = append(g.fvals[m], ffill)
			} else {
				g.vals[m] = append(g.vals[m], fill)
			}
		}
		if ms.Func == Min || ms.Func == Max {
			g.has[m] = append(g.has[m], make([]bool, g.days)...)
		}
	}
}

func (g *grid) keys() int { return len(g.count) / int(max(g.days, 1)) }

// errNewKey: an incremental run met a key the output does not hold, which
// needs rows from the snapshot day on.
var errNewKey = errors.New("a key the output does not hold yet")

// tally counts, per row group, what happened to its events.
type tally struct {
	read, excluded, after, nullTime int64
}

// add aggregates one row group of events: keyCols, the time column's day
// numbers and the measure columns (nil for count()). Rows dated on or
// before the snapshot day are counted as excluded, rows after the last day
// as after, rows before first (an incremental run's start, already in the
// base) are skipped. onRow, when not nil, is told each counted row's key
// and day.
func (g *grid) add(ki *keyIndex, keyCols []*colData, days []int64, dayValid []bool, ms []*colData, snapDay int64, allowNew bool, t *tally, onRow func(k int32, day int64)) error {
	n := len(days)
	g.cells = g.cells[:0]
	last := g.first + g.days - 1
	for i := 0; i < n; i++ {
		if g.shard != nil && !g.shard.has(keyCols, i) {
			g.cells = append(g.cells, -1)
			continue
		}
		t.read++
		d := days[i]
		switch {
		case !dayValid[i]:
			t.nullTime++
			g.cells = append(g.cells, -1)
			continue
		case d <= snapDay:
			t.excluded++
			g.cells = append(g.cells, -1)
			continue
		case d > last:
			t.after++
			g.cells = append(g.cells, -1)
			continue
		case d < g.first:
			g.cells = append(g.cells, -1)
			continue
		}
		k := ki.lookup(keyCols, i)
		if k < 0 {
			if !allowNew {
				return errNewKey
			}
			k = ki.add(keyCols, i)
			g.addKey()
		}
		if onRow != nil {
			onRow(k, d)
		}
		g.cells = append(g.cells, int64(k)*g.days+d-g.first)
	}
	for _, c := range g.cells {
		if c >= 0 {
			g.count[c]++
		}
	}
	for m, col := range ms {
		if col == nil {
			continue
		}
		g.fold(m, col)
	}
	return nil
}

// fold aggregates one measure column into its cells: one loop per function.
func (g *grid) fold(m int, col *colData) {
	if g.measures[m].float {
		// A day's float sum adds the values in the order the files and
		// their rows are read.
		foldColumn(g.measures[m].Func, g.cells, g.fvals[m], g.has[m], col.floats, col.valid)
		return
	}
	if g.measures[m].wide() {
		v, vh, x, ok := g.vals[m], g.vhi[m], col.ints, col.valid
		for i, c := range g.cells {
			if c >= 0 && ok[i] {
				add128(&vh[c], &v[c], col.hi(i), x[i])
			}
		}
		return
	}
	if g.measures[m].intSum() {
		sumInts(g.cells, g.vals[m], col.ints, col.valid, g.wraps[m])
		return
	}
	foldColumn(g.measures[m].Func, g.cells, g.vals[m], g.has[m], col.ints, col.valid)
}

// foldColumn folds the values x (valid where ok) of one measure into the
// cells v, one loop per function; has marks the cells a min or max has
// seen. Generic over the two number kinds a measure holds, compiled once
// for each; an int64 sum goes through sumInts instead, which counts its
// wraps.
func foldColumn[T int64 | float64](fn Func, cells []int64, v []T, has []bool, x []T, ok []bool) {
	switch fn {
	case Sum, SumDay:
		for i, c := range cells {
			if c >= 0 && ok[i] {
				v[c] += x[i]
			}
		}
	case Min:
		for i, c := range cells {
			if c >= 0 && ok[i] {
				v[c] = min(v[c], x[i])
				has[c] = true
			}
		}
	case Max:
		for i, c := range cells {
			if c >= 0 && ok[i] {
				v[c] = max(v[c], x[i])
				has[c] = true
			}
		}
	}
}

// totals are the running measures' totals per key: ints[m][k], or
// floats[m][k] for a float64 measure.
type totals struct {
	ints   [][]int64
	floats [][]float64
	his    [][]int64 // a decimal total's high words
}

// rows returns day d's output rows: the key values, the date, then each
// measure. running holds each running measure's total per key through day
// d-1 and is advanced to d.
func (g *grid) rows(ki *keyIndex, d int64, running totals) [][]any {
	keys := g.keys()
	out := make([][]any, keys)
	date := dayTime(d)
	off := d - g.first
	for k := 0; k < keys; k++ {
		kv := ki.vals[k]
		row := make([]any, 0, len(kv)+1+len(g.measures))
		row = append(row, kv...)
		row = append(row, date)
		c := int64(k)*g.days + off
		for m, ms := range g.measures {
			switch {
			case ms.Func == Count:
				row = append(row, g.count[c])
			case (ms.Func == Min || ms.Func == Max) && !g.has[m][c]:
				row = append(row, nil)
			case ms.Func == Sum && ms.float:
				running.floats[m][k] += g.fvals[m][c]
				row = append(row, running.floats[m][k])
			case ms.Func == Sum && ms.dec:
				add128(&running.his[m][k], &running.ints[m][k], g.vhi[m][c], g.vals[m][c])
				row = append(row, formatDecimal128(running.his[m][k], running.ints[m][k], ms.src.Scale))
			case ms.wide():
				row = append(row, formatDecimal128(g.vhi[m][c], g.vals[m][c], ms.src.Scale))
			case ms.dec:
				row = append(row, formatDecimal128(hiOf(g.vals[m][c]), g.vals[m][c], ms.src.Scale))
			case ms.Func == Sum:
				// Exact even when the day's sum wrapped: checkRange
				// found the total inside int64, and int64 adds mod 2^64.
				running.ints[m][k] += g.vals[m][c]
				row = append(row, running.ints[m][k])
			case ms.float:
				row = append(row, g.fvals[m][c])
			default:
				row = append(row, g.vals[m][c])
			}
		}
		out[k] = row
	}
	return out
}

// startTotals returns each running measure's totals per key before the
// first day: the base.
func (g *grid) startTotals() totals {
	t := totals{ints: make([][]int64, len(g.measures)), floats: make([][]float64, len(g.measures)), his: make([][]int64, len(g.measures))}
	for m, ms := range g.measures {
		switch {
		case ms.Func.Running() && ms.float:
			t.floats[m] = append([]float64(nil), g.fbase[m]...)
		case ms.Func.Running():
			t.ints[m] = append([]int64(nil), g.base[m]...)
			if ms.dec {
				t.his[m] = append([]int64(nil), g.bhi[m]...)
			}
		}
	}
	return t
}
