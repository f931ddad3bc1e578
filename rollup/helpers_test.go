package rollup_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/rollup"
)

// day0 is the snapshot day of the generated data set; events run from
// day -2 (already in the snapshot) through day 30.
var day0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func day(n int) time.Time { return day0.AddDate(0, 0, n) }

// event is one row of the events table
// "a:int64,b:string,ts:timestamp,v:int32,w:int64?".
type event struct {
	a  int64
	b  string
	ts time.Time
	v  int32
	w  *int64
}

func (e event) row() []any {
	var w any
	if e.w != nil {
		w = *e.w
	}
	return []any{e.a, e.b, e.ts, e.v, w}
}

const eventsSchema = "a:int64,b:string,ts:timestamp,v:int32,w:int64?"

var regions = []string{"eu", "us"}

// genEvents makes the data set: lists 1..1200 in two regions. Lists up to
// 1000 are in the snapshot; 900..1000 have no events at all; lists above
// 1000 appear only after the snapshot day. Each key has events on a few
// random days (silent on the others), some on and before the snapshot day,
// some within minutes of midnight (so that a time zone moves them).
func genEvents(r *rand.Rand) []event { return genEventsN(r, 1200) }

// genEventsN is genEvents for lists 1..lists: lists up to lists*5/6 are
// in the snapshot, lists*3/4 .. lists*5/6 have no events.
func genEventsN(r *rand.Rand, lists int64) []event {
	var out []event
	for a := int64(1); a <= lists; a++ {
		if a >= lists*3/4 && a <= lists*5/6 {
			continue
		}
		for _, b := range regions {
			for range 1 + r.IntN(8) {
				d := r.IntN(33) - 2
				at := day(d).Add(time.Duration(r.IntN(86400)) * time.Second)
				if r.IntN(5) == 0 {
					at = day(d).Add(time.Duration(r.IntN(600)-300) * time.Second)
				}
				for range 1 + r.IntN(3) {
					e := event{a: a, b: b, ts: at, v: int32(r.IntN(9) - 3)}
					if r.IntN(4) != 0 {
						w := int64(r.IntN(1000))
						e.w = &w
					}
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// snapshotRows are the snapshot's: keys of lists 1..1000 with a base.
func snapshotRows(r *rand.Rand) [][]any { return snapshotRowsN(r, 1200) }

// snapshotRowsN are the snapshot's of genEventsN(r, lists).
func snapshotRowsN(r *rand.Rand, lists int64) [][]any {
	var out [][]any
	for a := int64(1); a <= lists*5/6; a++ {
		for _, b := range regions {
			out = append(out, []any{a, b, day0, int64(r.IntN(500))})
		}
	}
	return out
}

// newEvents creates the events table at dir, partitioned by day(ts), and
// appends events in one commit per call of appendEvents.
func newEvents(t *testing.T, dir string) *catalog.Table {
	t.Helper()
	return newEventsBy(t, dir, "day(ts)")
}

// newEventsBy is newEvents with another partitioning ("": none).
func newEventsBy(t *testing.T, dir, partitionBy string) *catalog.Table {
	t.Helper()
	return newTable(t, dir, eventsSchema, partitionBy)
}

// newTable creates a table of schema at dir, partitioned by partitionBy
// ("": none), closed when the test ends.
func newTable(t *testing.T, dir, schema, partitionBy string) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec(partitionBy, s)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	if _, err := tb.Create(ctx, s, spec, nil, "test"); err != nil {
		t.Fatal(err)
	}
	return tb
}

func appendEvents(t *testing.T, tb *catalog.Table, evs []event) {
	t.Helper()
	rows := make([][]any, len(evs))
	for i, e := range evs {
		rows[i] = e.row()
	}
	appendRows(t, tb, rows)
}

// appendRows appends rows to tb in one commit.
func appendRows(t *testing.T, tb *catalog.Table, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
}

// writeSnapshot writes rows of schema as one Parquet file at path.
func writeSnapshot(t *testing.T, path, schema string, rows [][]any) {
	t.Helper()
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloud.Open(context.Background(), filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := pqio.WriteParquet(context.Background(), st, filepath.Base(path), s, rows); err != nil {
		t.Fatal(err)
	}
}

func measures(t *testing.T, specs ...string) []rollup.Measure {
	t.Helper()
	var out []rollup.Measure
	for _, s := range specs {
		m, err := rollup.ParseMeasure(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// testMeasures are the data set's: a running total, a per-day count,
// min, max and sum.
var testMeasures = []string{"total=sum(v)", "n=count()", "lo=min(v)", "hi=max(v)", "wday=sum_day(w)"}

func options(t *testing.T, src, snap string) rollup.Options {
	return rollup.Options{Source: src, Snapshot: snap, Keys: []string{"a", "b"}, Time: "ts",
		Measures: measures(t, testMeasures...), RunID: "test"}
}

func run(t *testing.T, out string, o rollup.Options) rollup.Result {
	t.Helper()
	tb, err := catalog.Open(context.Background(), out, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	res, err := rollup.Run(context.Background(), tb, o)
	if err != nil {
		t.Fatalf("rollup %s: %v", out, err)
	}
	return res
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// duck runs sql in DuckDB and returns its rows, sorted.
func duck(t *testing.T, sql string) []string {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(repoRoot(), "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// liveFiles lists a table's live data files as a DuckDB list literal.
func liveFiles(t *testing.T, loc string) string {
	t.Helper()
	ctx := context.Background()
	tb, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var q []string
	for _, f := range files {
		q = append(q, "'"+tb.FileURL(f)+"'")
	}
	if len(q) == 0 {
		t.Fatalf("%s has no live files", loc)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// outputRows reads the rollup's output through DuckDB.
func outputRows(t *testing.T, out string) []string {
	t.Helper()
	return duck(t, fmt.Sprintf(`SELECT a, b, date, total, n, lo, hi, wday FROM read_parquet(%s, hive_partitioning=false)`, liveFiles(t, out)))
}

// expectedRows is the rollup as warehouses write it: the snapshot union
// the deltas after its day, a date spine, and a window sum; tz is the
// zone whose days the events are counted in.
func expectedRows(t *testing.T, src, snap, tz string) []string {
	t.Helper()
	return duck(t, fmt.Sprintf(`SET TimeZone = '%s';
WITH snap AS (SELECT a, b, date AS sday, total AS base FROM read_parquet('%s')),
d0 AS (SELECT min(sday) AS d0 FROM snap),
ev AS (SELECT a, b, CAST(ts AS DATE) AS day, v, w FROM read_parquet(%s, hive_partitioning=false)),
through AS (SELECT greatest(max(day), (SELECT d0 FROM d0)) AS through FROM ev),
evd AS (SELECT ev.* FROM ev, d0 WHERE day > d0),
keys AS (SELECT a, b FROM snap UNION SELECT a, b FROM evd),
spine AS (SELECT CAST(range AS DATE) AS day FROM range((SELECT d0 FROM d0), (SELECT through FROM through) + INTERVAL 1 DAY, INTERVAL 1 DAY)),
daily AS (SELECT a, b, day, sum(v) AS sv, count(*) AS n, min(v) AS lo, max(v) AS hi, sum(w) AS sw FROM evd GROUP BY a, b, day),
grid AS (SELECT k.a, k.b, s.day FROM keys k CROSS JOIN spine s)
SELECT g.a, g.b, g.day,
  coalesce(sn.base, 0) + SUM(coalesce(d.sv, 0)) OVER (PARTITION BY g.a, g.b ORDER BY g.day ROWS UNBOUNDED PRECEDING) AS total,
  coalesce(d.n, 0), d.lo, d.hi, coalesce(d.sw, 0)
FROM grid g LEFT JOIN daily d ON d.a = g.a AND d.b = g.b AND d.day = g.day LEFT JOIN snap sn ON sn.a = g.a AND sn.b = g.b`,
		tz, snap, liveFiles(t, src)))
}

// sameRows fails with the first differences between two sorted row lists.
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	gs, ws := map[string]bool{}, map[string]bool{}
	for _, g := range got {
		gs[g] = true
	}
	for _, w := range want {
		ws[w] = true
	}
	var extra, missing []string
	for _, g := range got {
		if !ws[g] && len(extra) < 5 {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !gs[w] && len(missing) < 5 {
			missing = append(missing, w)
		}
	}
	t.Fatalf("%s: %d rows, want %d; unexpected %q; missing %q", what, len(got), len(want), extra, missing)
}
