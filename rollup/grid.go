package rollup

import (
	"errors"
	"math"
	"slices"
)

// grid holds the (key, day) cells of the days being computed, dense and
// day by day: cell (day-first)*kcap + k, kcap at least the keys held. Its
// size is the output's (within the room kept for new keys), whatever the
// events. Day by day, as the events come (a file of a source partitioned
// by day holds one day's), their cells are one day's keys: with 50,000
// keys a row group's random cells span 400 KB, which stays in a core's
// cache, where key by key they spanned every day's cells (4 MB over 10
// days) and the aggregation waited on memory.
type grid struct {
	measures []Measure
	first    int64 // the first day computed
	days     int64 // days computed: first .. first+days-1
	// nkeys are the keys held, kcap the keys the cells have room for.
	nkeys int
	kcap  int64
	// base[m][k] (fbase for a float64 measure) is running measure m's
	// value for key k on day first-1 (the snapshot's, or the output's
	// stored total); nil for per-day measures.
	base  [][]int64
	fbase [][]float64
	// bhi and vhi hold the high words of a decimal sum's base and cells
	// (base and vals their low words).
	bhi, vhi [][]int64
	// count[c] is the number of events in cell c, kept only for a
	// count() measure (counting); vals[m][c] (fvals for a float64
	// measure) the measure's aggregate (a sum of deltas, a day's sum,
	// min or max); has[m][c] whether a min or max saw a non-NULL value.
	count    []int64
	counting bool
	vals     [][]int64
	fvals    [][]float64
	has      [][]bool
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
		g.counting = g.counting || ms.Func == Count
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
	g.resize(int64(keys))
	g.nkeys = keys
	return g
}

// cell is the index of key k's cell on day first+off.
func (g *grid) cell(k int, off int64) int64 { return off*g.kcap + int64(k) }

// addKey makes room for one more key, whose base is 0, and tells
// whether the cells moved to make it.
func (g *grid) addKey() (moved bool) {
	if moved = int64(g.nkeys) == g.kcap; moved {
		g.resize(g.kcap + g.kcap/4 + 1024)
	}
	g.nkeys++
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
	return moved
}

// resize gives the cells room for kcap keys (not fewer than they hold),
// each measure's new cells holding its function's start value: the
// cells move to their new places, and so do the wraps counted of them.
func (g *grid) resize(kcap int64) {
	old := g.kcap
	if g.counting {
		g.count = relayout(g.count, g.days, old, kcap, 0)
	}
	for m, ms := range g.measures {
		fill, ffill := int64(0), 0.0
		switch ms.Func {
		case Min:
			fill, ffill = math.MaxInt64, math.Inf(1)
		case Max:
			fill, ffill = math.MinInt64, math.Inf(-1)
		}
		if ms.wide() {
			g.vhi[m] = relayout(g.vhi[m], g.days, old, kcap, 0)
		}
		if ms.float {
			g.fvals[m] = relayout(g.fvals[m], g.days, old, kcap, ffill)
		} else {
			g.vals[m] = relayout(g.vals[m], g.days, old, kcap, fill)
		}
		if ms.Func == Min || ms.Func == Max {
			g.has[m] = relayout(g.has[m], g.days, old, kcap, false)
		}
		if w := g.wraps[m]; len(w) > 0 {
			moved := make(map[int64]int64, len(w))
			for c, n := range w {
				moved[c/old*kcap+c%old] = n
			}
			g.wraps[m] = moved
		}
	}
	g.kcap = kcap
}

// relayout returns the cells s of days days, old keys a day, laid out with
// room for kcap keys a day, the new ones holding fill.
func relayout[T any](s []T, days, old, kcap int64, fill T) []T {
	out := make([]T, days*kcap)
	for off := range days {
		day := out[off*kcap : (off+1)*kcap]
		n := copy(day, s[off*old:(off+1)*old])
		for i := range day[n:] {
			day[n+i] = fill
		}
	}
	return out
}

func (g *grid) keys() int { return g.nkeys }

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
	g.cells = slices.Grow(g.cells[:0], n)[:n]
	cells, count := g.cells, g.count // count is nil without a count()
	last := g.first + g.days - 1
	// A key of one integer column is looked up in ki.dense here when it
	// is there: the lookup most rows take, without a call.
	var ints []int64
	var intsOK []bool
	if len(keyCols) == 1 && !isBytes(keyCols[0].typ.Kind) {
		ints, intsOK = keyCols[0].ints, keyCols[0].valid
	}
	dense := ki.dense
	for i, d := range days {
		cells[i] = -1
		if g.shard != nil && !g.shard.has(keyCols, i) {
			continue
		}
		t.read++
		switch {
		case !dayValid[i]:
			t.nullTime++
			continue
		case d <= snapDay:
			t.excluded++
			continue
		case d > last:
			t.after++
			continue
		case d < g.first:
			continue
		}
		k := int32(-1)
		if ints != nil && intsOK[i] && uint64(ints[i]) < uint64(len(dense)) {
			k = dense[ints[i]]
		}
		if k < 0 {
			if k = ki.lookup(keyCols, i); k < 0 {
				if !allowNew {
					return errNewKey
				}
				k = ki.add(keyCols, i)
				if old := g.kcap; g.addKey() {
					// The cells moved: so do the ones of the
					// rows before.
					for j, c := range cells[:i] {
						if c >= 0 {
							cells[j] = c/old*g.kcap + c%old
						}
					}
				}
				dense, count = ki.dense, g.count
			}
		}
		if onRow != nil {
			onRow(k, d)
		}
		c := (d-g.first)*g.kcap + int64(k)
		cells[i] = c
		if count != nil {
			count[c]++
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
	var date any = dayTime(d) // boxed once: every row shares it
	off := d - g.first
	width := 1 + len(g.measures)
	if keys > 0 {
		width += len(ki.vals[0])
	}
	flat := make([]any, 0, keys*width) // the rows' values, back to back
	for k := 0; k < keys; k++ {
		kv := ki.vals[k]
		start := len(flat)
		row := append(flat, kv...)
		row = append(row, date)
		c := g.cell(k, off)
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
		out[k], flat = row[start:len(row):len(row)], row
	}
	return out
}

// clone returns a copy of t, which the copy's changes leave alone.
func (t totals) clone() totals {
	c := totals{ints: make([][]int64, len(t.ints)), floats: make([][]float64, len(t.floats)), his: make([][]int64, len(t.his))}
	for m := range t.ints {
		c.ints[m] = slices.Clone(t.ints[m])
	}
	for m := range t.floats {
		c.floats[m] = slices.Clone(t.floats[m])
	}
	for m := range t.his {
		c.his[m] = slices.Clone(t.his[m])
	}
	return c
}

// advance adds day d's cells to the running totals, as rows(ki, d,
// running) does, without making the rows.
func (g *grid) advance(d int64, running totals) {
	off := d - g.first
	for m, ms := range g.measures {
		if ms.Func != Sum {
			continue
		}
		for k := range g.keys() {
			c := g.cell(k, off)
			switch {
			case ms.float:
				running.floats[m][k] += g.fvals[m][c]
			case ms.dec:
				add128(&running.his[m][k], &running.ints[m][k], g.vhi[m][c], g.vals[m][c])
			default:
				running.ints[m][k] += g.vals[m][c]
			}
		}
	}
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
