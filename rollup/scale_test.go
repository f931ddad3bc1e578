package rollup_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// scaleLists is the number of lists of TestRollupAtScaleEqualsDuckDB:
// SLUICE_ROLLUP_LISTS, else 2000 (4,000 keys), which keeps `make test`
// short. SLUICE_ROLLUP_LISTS=15000 gives the size, 30,000 keys
// of two columns over 31 days.
func scaleLists(t *testing.T) int64 {
	s := os.Getenv("SLUICE_ROLLUP_LISTS")
	if s == "" {
		return 2000
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 100 {
		t.Fatalf("SLUICE_ROLLUP_LISTS=%q: want a number of lists, at least 100", s)
	}
	return n
}

// At scale (two key columns, several measures, 30 days after the
// snapshot, keys only after the snapshot, snapshot keys without events,
// silent days, events before and on the snapshot day), the rollup equals
// DuckDB's window-function SQL row for row, in UTC and in
// America/New_York. Late events for days 3 and 17 after day 30 was
// rolled up restate exactly the keys they touch from those days on, as
// the summary counts, and the table then equals DuckDB's and a --full
// run's, in both zones.
func TestRollupAtScaleEqualsDuckDB(t *testing.T) {
	lists := scaleLists(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, uint64(lists)))
	src := filepath.Join(dir, "events")
	tb := newEvents(t, src)
	evs := genEventsN(r, lists)
	for i := 0; i < len(evs); i += len(evs)/4 + 1 {
		appendEvents(t, tb, evs[i:min(i+len(evs)/4+1, len(evs))])
	}
	snap := filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, snapshotSchema, snapshotRowsN(r, lists))
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	zones := []struct {
		name string
		loc  *time.Location
	}{{"UTC", nil}, {"America/New_York", ny}}

	for _, z := range zones {
		o := options(t, src, snap)
		o.Location = z.loc
		res := run(t, filepath.Join(dir, "out-"+filepath.Base(z.name)), o)
		want := expectedRows(t, src, snap, z.name)
		if !res.Full || res.Days != 31 || res.CellsWritten != int64(len(want)) || res.Keys < int(lists) {
			t.Fatalf("%s: summary %+v: want a full run of 31 days, %d cells, at least %d keys", z.name, res, len(want), lists)
		}
		sameRows(t, z.name+": rollup vs DuckDB", outputRows(t, filepath.Join(dir, "out-"+filepath.Base(z.name))), want)
	}

	// Late events at noon UTC (the same day in New York): region eu of
	// every 7th snapshot list on day 17, region us of every 11th on day
	// 3, and both of every 77th on day 3.
	type key struct {
		a int64
		b string
	}
	firstDay := map[key]int{}
	var late []event
	lateEvent := func(a int64, b string, d int, v int32) {
		late = append(late, event{a: a, b: b, ts: day(d).Add(12 * time.Hour), v: v})
		if f, ok := firstDay[key{a, b}]; !ok || d < f {
			firstDay[key{a, b}] = d
		}
	}
	for a := int64(1); a <= lists*5/6; a++ {
		if a%7 == 0 {
			lateEvent(a, "eu", 17, 2)
		}
		if a%11 == 0 {
			lateEvent(a, "us", 3, -1)
		}
		if a%77 == 0 {
			lateEvent(a, "eu", 3, 4)
			lateEvent(a, "us", 3, 1)
		}
	}
	var wantCells int64
	for _, d := range firstDay {
		wantCells += int64(30 - d + 1)
	}
	appendEvents(t, tb, late)

	for _, z := range zones {
		out := filepath.Join(dir, "out-"+filepath.Base(z.name))
		o := options(t, src, snap)
		o.Location = z.loc
		res := run(t, out, o)
		if res.Full || res.KeysRestated != len(firstDay) || res.CellsRestated != wantCells || res.EventsRead == 0 {
			t.Fatalf("%s: late events: summary %+v: want an incremental run restating %d keys, %d cells", z.name, res, len(firstDay), wantCells)
		}
		got := outputRows(t, out)
		sameRows(t, z.name+": after late events vs DuckDB", got, expectedRows(t, src, snap, z.name))
		fo := o
		fo.Full = true
		run(t, out+"-full", fo)
		if g, w := tableRows(t, out), tableRows(t, out+"-full"); !slices.Equal(g, w) {
			t.Fatalf("%s: after late events: %d rows unlike a --full run's %d", z.name, len(g), len(w))
		}
	}
}
