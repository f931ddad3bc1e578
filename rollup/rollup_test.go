package rollup_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
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
