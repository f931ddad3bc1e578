package rollup_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// Measures over a float64 column (a running sum from a float64 base, a
// day's sum, min and max, NULLs ignored) equal DuckDB's window SQL row
// for row, and a late event restates them as a --full run computes them.
// The values are multiples of 1/8, so that every order of addition gives
// the same sums.
func TestRollupFloatMeasuresEqualDuckDB(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "events")
	tb := newTable(t, src, "a:int64,ts:timestamp,x:float64?", "day(ts)")
	r := rand.New(rand.NewPCG(8, 9))
	add := func(rows [][]any) { appendRows(t, tb, rows) }
	var rows [][]any
	for a := int64(1); a <= 600; a++ {
		for range 1 + r.IntN(12) {
			var x any
			if r.IntN(6) != 0 {
				x = float64(r.IntN(81)-40) / 8
			}
			rows = append(rows, []any{a, day(r.IntN(23) - 2).Add(time.Duration(r.IntN(86400)) * time.Second), x})
		}
	}
	add(rows)
	snap := filepath.Join(dir, "snapshot.parquet")
	var snapRows [][]any
	for a := int64(1); a <= 500; a++ {
		snapRows = append(snapRows, []any{a, day0, float64(r.IntN(8000)) / 8})
	}
	writeSnapshot(t, snap, "a:int64,date:date,s:float64", snapRows)

	o := options(t, src, snap)
	o.Keys = []string{"a"}
	o.Measures = measures(t, "s=sum(x)", "d=sum_day(x)", "lo=min(x)", "hi=max(x)", "n=count()")
	out := filepath.Join(dir, "rollup")
	check := func(what string) {
		t.Helper()
		got := duck(t, fmt.Sprintf(`SELECT a, date, s, d, lo, hi, n FROM read_parquet(%s, hive_partitioning=false)`, liveFiles(t, out)))
		want := duck(t, fmt.Sprintf(`WITH snap AS (SELECT a, s AS base, date AS sday FROM read_parquet('%s')),
d0 AS (SELECT min(sday) AS d0 FROM snap),
ev AS (SELECT a, make_timestamp(epoch_us(ts))::DATE AS day, x FROM read_parquet(%s, hive_partitioning=false)),
evd AS (SELECT ev.* FROM ev, d0 WHERE day > d0),
keys AS (SELECT a FROM snap UNION SELECT a FROM evd),
spine AS (SELECT CAST(range AS DATE) AS day FROM range((SELECT d0 FROM d0), (SELECT greatest(max(day), (SELECT d0 FROM d0)) FROM ev) + INTERVAL 1 DAY, INTERVAL 1 DAY)),
daily AS (SELECT a, day, sum(x) AS sx, min(x) AS lo, max(x) AS hi, count(*) AS n FROM evd GROUP BY a, day)
SELECT k.a, s.day,
  coalesce(sn.base, 0) + SUM(coalesce(d.sx, 0)) OVER (PARTITION BY k.a ORDER BY s.day ROWS UNBOUNDED PRECEDING),
  coalesce(d.sx, 0)::DOUBLE, d.lo, d.hi, coalesce(d.n, 0)
FROM keys k CROSS JOIN spine s LEFT JOIN daily d ON d.a = k.a AND d.day = s.day LEFT JOIN snap sn ON sn.a = k.a`, snap, liveFiles(t, src)))
		sameRows(t, what, got, want)
	}
	res := run(t, out, o)
	if !res.Full || res.Keys <= 500 {
		t.Fatalf("summary %+v: want a full run of the snapshot's 500 keys and more", res)
	}
	check("float measures vs DuckDB")
	add([][]any{{int64(7), day(5).Add(time.Hour), 2.5}, {int64(550), day(9).Add(time.Hour), -0.125}, {int64(8), day(9), nil}})
	res = run(t, out, o)
	if res.Full || res.KeysRestated != 3 {
		t.Fatalf("late events: summary %+v: want an incremental run restating 3 keys", res)
	}
	check("float measures after late events vs DuckDB")
	fo := o
	fo.Full = true
	run(t, out+"-full", fo)
	if got, want := tableRows(t, out), tableRows(t, out+"-full"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after late events: %d rows unlike a --full run's %d", len(got), len(want))
	}
}
