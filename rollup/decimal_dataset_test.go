package rollup_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// Measures over a decimal(18,2) column sum exactly, beyond int64: values
// near 10^16 summed a few hundred times a key overflow 64 bits, and the
// running total (decimal(38,2), from a decimal base), the day's sum, min
// and max equal DuckDB's window SQL (whose SUM of a decimal is exact
// too), before and after late events, and a --full run.
func TestRollupDecimalMeasuresSumExactly(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "events")
	tb := newTable(t, src, "a:int64,ts:timestamp,x:decimal(18,2)?", "day(ts)")
	add := func(rows [][]any) { appendRows(t, tb, rows) }
	r := rand.New(rand.NewPCG(4, 4))
	big := func() string { // up to 9,999,999,999,999,999.99
		return fmt.Sprintf("%d.%02d", 9_000_000_000_000_000+r.Int64N(999_999_999_999_999), r.IntN(100))
	}
	var rows [][]any
	for a := int64(1); a <= 40; a++ {
		for range 200 + r.IntN(200) {
			var x any = big()
			switch r.IntN(8) {
			case 0:
				x = nil
			case 1:
				x = "-" + big()
			case 2:
				x = fmt.Sprintf("%d.%02d", r.IntN(1000), r.IntN(100))
			}
			rows = append(rows, []any{a, day(r.IntN(12) - 1).Add(time.Duration(r.IntN(86400)) * time.Second), x})
		}
	}
	add(rows)
	snap := filepath.Join(dir, "snapshot.parquet")
	var snapRows [][]any
	for a := int64(1); a <= 30; a++ {
		snapRows = append(snapRows, []any{a, day0, fmt.Sprintf("%d%s", a, big())})
	}
	writeSnapshot(t, snap, "a:int64,date:date,s:decimal(38,2)", snapRows)

	o := options(t, src, snap)
	o.Keys = []string{"a"}
	o.Measures = measures(t, "s=sum(x)", "d=sum_day(x)", "lo=min(x)", "hi=max(x)")
	out := filepath.Join(dir, "rollup")
	check := func(what string) {
		t.Helper()
		got := duck(t, fmt.Sprintf(`SELECT a, date, s, d, lo, hi FROM read_parquet(%s, hive_partitioning=false)`, liveFiles(t, out)))
		want := duck(t, fmt.Sprintf(`WITH snap AS (SELECT a, s AS base, date AS sday FROM read_parquet('%s')),
d0 AS (SELECT min(sday) AS d0 FROM snap),
ev AS (SELECT a, make_timestamp(epoch_us(ts))::DATE AS day, x FROM read_parquet(%s, hive_partitioning=false)),
evd AS (SELECT ev.* FROM ev, d0 WHERE day > d0),
keys AS (SELECT a FROM snap UNION SELECT a FROM evd),
spine AS (SELECT CAST(range AS DATE) AS day FROM range((SELECT d0 FROM d0), (SELECT greatest(max(day), (SELECT d0 FROM d0)) FROM ev) + INTERVAL 1 DAY, INTERVAL 1 DAY)),
daily AS (SELECT a, day, sum(x) AS sx, min(x) AS lo, max(x) AS hi FROM evd GROUP BY a, day)
SELECT k.a, s.day,
  (coalesce(sn.base, 0) + SUM(coalesce(d.sx, 0)) OVER (PARTITION BY k.a ORDER BY s.day ROWS UNBOUNDED PRECEDING))::DECIMAL(38,2),
  coalesce(d.sx, 0)::DECIMAL(38,2), d.lo, d.hi
FROM keys k CROSS JOIN spine s LEFT JOIN daily d ON d.a = k.a AND d.day = s.day LEFT JOIN snap sn ON sn.a = k.a`, snap, liveFiles(t, src)))
		sameRows(t, what, got, want)
	}
	res := run(t, out, o)
	if !res.Full || res.Keys != 40 {
		t.Fatalf("summary %+v: want a full run of 40 keys", res)
	}
	check("decimal measures vs DuckDB")
	add([][]any{{int64(3), day(4).Add(time.Hour), big()}, {int64(33), day(8).Add(time.Hour), "-0.01"}})
	if res = run(t, out, o); res.Full || res.KeysRestated != 2 {
		t.Fatalf("late events: summary %+v: want an incremental run restating 2 keys", res)
	}
	check("decimal measures after late events vs DuckDB")
	fo := o
	fo.Full = true
	run(t, out+"-full", fo)
	if got, want := tableRows(t, out), tableRows(t, out+"-full"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after late events: %d rows unlike a --full run's %d", len(got), len(want))
	}
}
