package rollup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

const snapshotSchema = "a:int64,b:string,date:date,total:int64"

// The data set's rollup equals DuckDB's window-function SQL row for row,
// in UTC days.
func TestRollupEqualsDuckDB(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	src := filepath.Join(dir, "events")
	tb := newEvents(t, src)
	evs := genEvents(r)
	appendEvents(t, tb, evs[:len(evs)/2])
	appendEvents(t, tb, evs[len(evs)/2:])
	snap := filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, snapshotSchema, snapshotRows(r))
	out := filepath.Join(dir, "rollup")
	res := run(t, out, options(t, src, snap))
	if !res.Full || res.Days != 31 || res.EventsRead != int64(len(evs)) || res.EventsExcluded == 0 {
		t.Fatalf("summary %+v: want a full run of 31 days over %d events, some excluded", res, len(evs))
	}
	want := expectedRows(t, src, snap, "UTC")
	sameRows(t, "rollup vs DuckDB", outputRows(t, out), want)
	if res.CellsWritten != int64(len(want)) {
		t.Fatalf("cells written %d, want %d", res.CellsWritten, len(want))
	}
}

// dataSet builds the events table and the snapshot in dir and returns
// their locations and the events.
func dataSet(t *testing.T, dir string) (src, snap string, evs []event) {
	r := rand.New(rand.NewPCG(1, 2))
	src = filepath.Join(dir, "events")
	tb := newEvents(t, src)
	evs = genEvents(r)
	appendEvents(t, tb, evs)
	snap = filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, snapshotSchema, snapshotRows(r))
	return src, snap, evs
}

// Late events for days 3 and 17, after day 30 was rolled up, restate only
// the keys they touch from those days on; the table then equals DuckDB's
// and a --full run's, and a rerun commits nothing.
func TestRollupLateEventsRestateOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	first := run(t, out, o)

	// Late events: keys (a, "eu") for a = 1..40 on day 17, and for
	// a = 21..60 on day 3 as well; list 950 (in the snapshot, no events
	// so far) on day 3.
	var late []event
	firstDay := map[int64]int{}
	for a := int64(1); a <= 40; a++ {
		late = append(late, event{a: a, b: "eu", ts: day(17).Add(time.Hour), v: 2})
		firstDay[a] = 17
	}
	for a := int64(21); a <= 60; a++ {
		late = append(late, event{a: a, b: "eu", ts: day(3).Add(2 * time.Hour), v: -1})
		firstDay[a] = 3
	}
	late = append(late, event{a: 950, b: "eu", ts: day(3).Add(3 * time.Hour), v: 5})
	firstDay[950] = 3
	tb, err := catalog.Open(context.Background(), src, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	appendEvents(t, tb, late)

	res := run(t, out, o)
	var wantCells int64
	for _, d := range firstDay {
		wantCells += int64(30 - d + 1)
	}
	if res.Full || res.First != day(3).Format(time.DateOnly) || res.KeysRestated != len(firstDay) || res.CellsRestated != wantCells {
		t.Fatalf("summary %+v: want an incremental run from day 3 restating %d keys, %d cells", res, len(firstDay), wantCells)
	}
	if res.SourceFrom != first.SourceTo || res.SourceTo != first.SourceTo+1 || res.PartitionsReplaced != 28 {
		t.Fatalf("summary %+v: want source %d -> %d and 28 partitions replaced", res, first.SourceTo, first.SourceTo+1)
	}
	got := outputRows(t, out)
	sameRows(t, "incremental rollup vs DuckDB", got, expectedRows(t, src, snap, "UTC"))

	again := run(t, out, o)
	if again.Version != 0 || again.CellsWritten != 0 {
		t.Fatalf("rerun with nothing new: %+v, want nothing committed", again)
	}

	full := filepath.Join(dir, "full")
	fo := o
	fo.Full = true
	run(t, full, fo)
	sameRows(t, "incremental vs --full", got, outputRows(t, full))
	if res := run(t, out, fo); !res.Full || res.Reason != "--full" {
		t.Fatalf("--full on the output: %+v", res)
	}
	sameRows(t, "--full in place vs before", outputRows(t, out), got)
}

// A new snapshot (another base) is a full recompute, said in the summary.
func TestRollupNewSnapshotRecomputes(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	run(t, out, o)
	rows := snapshotRows(rand.New(rand.NewPCG(7, 7)))
	writeSnapshot(t, snap, snapshotSchema, rows)
	res := run(t, out, o)
	if !res.Full || !strings.Contains(res.Reason, "new snapshot") {
		t.Fatalf("summary %+v: want a full recompute for a new snapshot", res)
	}
	sameRows(t, "after a new snapshot", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
}

// With --tz, days are counted in that zone, as DuckDB counts them with
// its TimeZone set.
func TestRollupTimeZoneEqualsDuckDB(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	o.Location = ny
	run(t, out, o)
	sameRows(t, "rollup --tz vs DuckDB", outputRows(t, out), expectedRows(t, src, snap, "America/New_York"))
}

// A CSV snapshot (header line, values as text) gives the table a Parquet
// snapshot of the same rows gives, with the same identity; so does one
// that starts with a UTF-8 byte-order mark, as Excel writes them (before,
// it failed with "no key column").
func TestRollupCSVSnapshot(t *testing.T) {
	for _, bom := range []string{"", "\uFEFF"} {
		testRollupCSVSnapshot(t, bom)
	}
}

func testRollupCSVSnapshot(t *testing.T, bom string) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	var b strings.Builder
	b.WriteString(bom + "date,b,a,total\n")
	gen := rand.New(rand.NewPCG(1, 2)) // as dataSet draws them
	genEvents(gen)
	for _, r := range snapshotRows(gen) {
		fmt.Fprintf(&b, "%s,%s,%d,%d\n", r[2].(time.Time).Format(time.DateOnly), r[1], r[0], r[3])
	}
	csvSnap := filepath.Join(dir, "snapshot.csv")
	if err := os.WriteFile(csvSnap, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fromParquet := run(t, filepath.Join(dir, "p"), options(t, src, snap))
	fromCSV := run(t, filepath.Join(dir, "c"), options(t, src, csvSnap))
	if fromCSV.Snapshot != fromParquet.Snapshot {
		t.Fatalf("CSV snapshot identity %s, the Parquet one's %s", fromCSV.Snapshot, fromParquet.Snapshot)
	}
	if got, want := tableRows(t, filepath.Join(dir, "c")), tableRows(t, filepath.Join(dir, "p")); !slices.Equal(got, want) {
		t.Fatalf("CSV snapshot: %d rows unlike the Parquet snapshot's %d", len(got), len(want))
	}
}

// A source not partitioned by day: files wholly before the snapshot day
// or after the last are skipped by their time statistics, and a late
// event restates its key from its day, found by its file's statistics;
// both equal DuckDB's.
func TestRollupUnpartitionedSource(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	src := filepath.Join(dir, "events")
	tb := newEventsBy(t, src, "")
	evs := genEvents(r)
	slices.SortFunc(evs, func(a, b event) int { return a.ts.Compare(b.ts) })
	before := 0 // a first file wholly before the snapshot day
	for evs[before].ts.Before(day0) {
		before++
	}
	appendEvents(t, tb, evs[:before])
	rest := evs[before:]
	for i := 0; i < len(rest); i += len(rest)/3 + 1 {
		appendEvents(t, tb, rest[i:min(i+len(rest)/3+1, len(rest))])
	}
	snap := filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, snapshotSchema, snapshotRows(r))
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	res := run(t, out, o)
	if res.EventsRead != int64(len(evs)) || res.EventsExcluded < int64(before) {
		t.Fatalf("events read %d, excluded %d: want %d, at least %d", res.EventsRead, res.EventsExcluded, len(evs), before)
	}
	sameRows(t, "unpartitioned source vs DuckDB", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
	appendEvents(t, tb, []event{{a: 7, b: "us", ts: day(4), v: 3}})
	res = run(t, out, o)
	if res.Full || res.First != day(4).Format(time.DateOnly) || res.KeysRestated != 1 {
		t.Fatalf("late event on an unpartitioned source: %+v, want key (7, us) restated from its day, by the file's statistics", res)
	}
	sameRows(t, "after a late event", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
}

// Progress is told the bytes of the files read, from 0 up to the total
// of the files the run reads, never backwards.
func TestRollupReportsProgress(t *testing.T) {
	dir := t.TempDir()
	src, snap, _ := dataSet(t, dir)
	o := options(t, src, snap)
	var done, totals []int64
	o.Progress = func(d, total int64) { done, totals = append(done, d), append(totals, total) }
	run(t, filepath.Join(dir, "rollup"), o)
	if len(done) < 3 || done[0] != 0 || totals[0] <= 0 {
		t.Fatalf("progress %v of %v: want reports from 0 of a total", done, totals)
	}
	for i := range done {
		if totals[i] != totals[0] || i > 0 && done[i] < done[i-1] {
			t.Fatalf("progress %v of %v: want one total and no step back", done, totals)
		}
	}
	if last := done[len(done)-1]; last != totals[0] {
		t.Fatalf("progress ends at %d of %d", last, totals[0])
	}
}
