package rollup_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/rollup"
)

// overflowEvent is an event of key (1, eu) on day d with w = x.
func overflowEvent(d int, x int64) []any {
	return []any{int64(1), "eu", day(d).Add(3600e9), int32(1), x}
}

// overflowSource and overflowSnapshot are a source of events rows and a
// snapshot with base total for key (1, eu), under dir.
func overflowSource(t *testing.T, dir string, rows [][]any, total int64) (src, snap string) {
	t.Helper()
	src, snap = filepath.Join(dir, "events"), filepath.Join(dir, "snapshot.parquet")
	appendRows(t, newEvents(t, src), rows)
	writeSnapshot(t, snap, snapshotSchema, [][]any{{int64(1), "eu", day0, total}, {int64(2), "us", day0, int64(0)}})
	return src, snap
}

// rollupErr runs a rollup of measures into a fresh output under dir and
// returns the output and Run's error.
func rollupErr(t *testing.T, dir, src, snap string, specs ...string) (*catalog.Table, error) {
	t.Helper()
	out, err := catalog.Open(context.Background(), filepath.Join(dir, "out"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	o := rollup.Options{Source: src, Snapshot: snap, Keys: []string{"a", "b"}, Time: "ts", Measures: measures(t, specs...), RunID: "test"}
	_, err = rollup.Run(context.Background(), out, o)
	return out, err
}

// Regression (review item 5): int64 sums wrapped silently, so two events
// of 9.2e18 on one day gave a negative total and the run succeeded. Every
// int64 sum (a day's, and the running total of the base and the days) that
// leaves int64 fails the run with ErrOverflow, in one line naming the
// measure, the key and the day, and nothing is committed.
func TestRollupOverflowFails(t *testing.T) {
	const big = int64(9_200_000_000_000_000_000)
	cases := map[string]struct {
		rows    [][]any
		base    int64
		measure string
		want    string
	}{
		"two events of 9.2e18 on one day": {
			[][]any{overflowEvent(1, big), overflowEvent(1, big)}, 0, "total=sum(w)",
			"the day's 18400000000000000000 = 18400000000000000000 does not fit in int64"},
		"two events of -9.2e18 on one day": {
			[][]any{overflowEvent(2, -big), overflowEvent(2, -big)}, 0, "total=sum(w)",
			"2024-03-03: the running total 0 + the day's -18400000000000000000"},
		"the day's sum of sum_day": {
			[][]any{overflowEvent(1, big), overflowEvent(1, big)}, 0, "d=sum_day(w)",
			"measure d=sum_day(w), key (1, eu), 2024-03-02: the day's sum 18400000000000000000 does not fit in int64"},
		"the base plus the first day": {
			[][]any{overflowEvent(1, 10)}, math.MaxInt64 - 5, "total=sum(w)",
			"2024-03-02: the running total 9223372036854775802 + the day's 10 = 9223372036854775812"},
		"the running total of days that each fit": {
			[][]any{overflowEvent(1, big), overflowEvent(2, 5), overflowEvent(3, big)}, 0, "total=sum(w)",
			"2024-03-04: the running total 9200000000000000005 + the day's 9200000000000000000"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src, snap := overflowSource(t, dir, c.rows, c.base)
			out, err := rollupErr(t, dir, src, snap, c.measure)
			if !errors.Is(err, rollup.ErrOverflow) {
				t.Fatalf("rollup: %v, want %v", err, rollup.ErrOverflow)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "measure "+c.measure+", key (1, eu), 2024-03-0") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming the measure, key and day, with %q", msg, c.want)
			}
			if _, err := out.Latest(context.Background()); !errors.Is(err, catalog.ErrTableNotFound) {
				t.Fatalf("after the overflow the output reads %v, want %v: something was committed", err, catalog.ErrTableNotFound)
			}
		})
	}
}

// A sum is exact whatever order its events come in: a day whose partial
// sums leave int64 but whose sum fits is no overflow, nor a day's sum
// beyond int64 that the base brings back inside it.
func TestRollupSumsNearInt64AreExact(t *testing.T) {
	const big = int64(9_000_000_000_000_000_000)
	dir := t.TempDir()
	src, snap := overflowSource(t, dir, [][]any{
		overflowEvent(1, big), overflowEvent(1, big), // 1.8e19 onto a base of -9e18
		overflowEvent(2, -big), overflowEvent(2, -big), overflowEvent(2, big), // -9e18, partial sums down to -1.8e19
	}, -big)
	if _, err := rollupErr(t, dir, src, snap, "total=sum(w)"); err != nil {
		t.Fatal(err)
	}
	got := tableRows(t, filepath.Join(dir, "out"))
	want := []string{
		"[1 eu 2024-03-01 00:00:00 +0000 UTC -9000000000000000000]",
		"[1 eu 2024-03-02 00:00:00 +0000 UTC 9000000000000000000]",
		"[1 eu 2024-03-03 00:00:00 +0000 UTC 0]",
		"[2 us 2024-03-01 00:00:00 +0000 UTC 0]",
		"[2 us 2024-03-02 00:00:00 +0000 UTC 0]",
		"[2 us 2024-03-03 00:00:00 +0000 UTC 0]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An incremental run whose late event makes a total overflow fails the
// same way, and the output keeps the version it had.
func TestRollupOverflowOfALateEventCommitsNothing(t *testing.T) {
	dir := t.TempDir()
	src, snap := overflowSource(t, dir, [][]any{overflowEvent(1, 5), overflowEvent(3, 5)}, math.MaxInt64-20)
	out, err := rollupErr(t, dir, src, snap, "total=sum(w)")
	if err != nil {
		t.Fatal(err)
	}
	before, err := out.LatestVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tb, err := catalog.Open(context.Background(), src, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	appendRows(t, tb, [][]any{overflowEvent(2, 15)}) // day 3's total: MaxInt64 - 20 + 5 + 15 + 5
	o := rollup.Options{Source: src, Snapshot: snap, Keys: []string{"a", "b"}, Time: "ts", Measures: measures(t, "total=sum(w)"), RunID: "test"}
	_, err = rollup.Run(context.Background(), out, o)
	if !errors.Is(err, rollup.ErrOverflow) || !strings.Contains(err.Error(), "key (1, eu), 2024-03-04: the running total 9223372036854775807 + the day's 5") {
		t.Fatalf("incremental rollup: %v, want %v on key (1, eu), 2024-03-04", err, rollup.ErrOverflow)
	}
	if after, err := out.LatestVersion(context.Background()); err != nil || after != before {
		t.Fatalf("output at version %d (%v) after the overflow, want %d", after, err, before)
	}
}

// A decimal running total (decimal(38, s)) that passes 38 digits fails the
// same way: the base at the column's largest value plus one cent.
func TestRollupDecimalOverflowFails(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "events")
	appendRows(t, newTable(t, src, "a:int64,ts:timestamp,x:decimal(18,2)?", "day(ts)"),
		[][]any{{int64(1), day(2).Add(3600e9), "0.01"}})
	snap := filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, "a:int64,date:date,s:decimal(38,2)", [][]any{{int64(1), day0, strings.Repeat("9", 36) + ".99"}})
	out, err := catalog.Open(context.Background(), filepath.Join(dir, "out"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	o := rollup.Options{Source: src, Snapshot: snap, Keys: []string{"a"}, Time: "ts", Measures: measures(t, "s=sum(x)"), RunID: "test"}
	_, err = rollup.Run(context.Background(), out, o)
	if !errors.Is(err, rollup.ErrOverflow) || !strings.Contains(err.Error(), "measure s=sum(x), key (1), 2024-03-03: the running total "+strings.Repeat("9", 36)+".99 + the day's 0.01 = 1"+strings.Repeat("0", 36)+".00 has more than 38 digits") {
		t.Fatalf("rollup: %v, want %v naming the measure, key and day", err, rollup.ErrOverflow)
	}
	if _, err := out.Latest(context.Background()); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Fatalf("after the overflow the output reads %v: something was committed", err)
	}
}
