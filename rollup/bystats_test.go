package rollup_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// A source not partitioned by day of its time column (an imported Spark
// table's string date folders, or no partitions at all) is rolled up
// incrementally too: the files each commit added or removed say, by
// their time column's statistics, which days changed. Before, every run
// on such a source was a full recompute. A file without statistics
// still makes one, and the summary says which file.
func TestRollupIncrementalWhateverThePartitioning(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	src := filepath.Join(dir, "events")
	tb := newEventsBy(t, src, "")
	appendEvents(t, tb, genEvents(r))
	snap := filepath.Join(dir, "snapshot.parquet")
	writeSnapshot(t, snap, snapshotSchema, snapshotRows(r))
	out := filepath.Join(dir, "rollup")
	o := options(t, src, snap)
	if res := run(t, out, o); !res.Full {
		t.Fatalf("first run: %+v, want a full one", res)
	}

	// Late events on day 17 and new ones on day 31.
	var late []event
	for a := int64(1); a <= 40; a++ {
		late = append(late, event{a: a, b: "eu", ts: day(17).Add(time.Hour), v: 3})
	}
	for a := int64(1); a <= 1200; a += 7 {
		late = append(late, event{a: a, b: "us", ts: day(31).Add(2 * time.Hour), v: 1})
	}
	appendEvents(t, tb, late)
	res := run(t, out, o)
	if res.Full || res.First != day(17).Format(time.DateOnly) {
		t.Fatalf("after late events on days 17 and 31: %+v, want an incremental run from day 17", res)
	}
	sameRows(t, "after late events", outputRows(t, out), expectedRows(t, src, snap, "UTC"))

	// Removing a file (a delete) restates from its first day: a file of
	// day 20's events appended, rolled up, then deleted.
	var d20 []event
	for a := int64(100); a <= 160; a++ {
		d20 = append(d20, event{a: a, b: "eu", ts: day(20).Add(3 * time.Hour), v: 2})
	}
	appendEvents(t, tb, d20)
	if res := run(t, out, o); res.Full || res.First != day(20).Format(time.DateOnly) {
		t.Fatalf("after day 20's file: %+v, want an incremental run from day 20", res)
	}
	m, err := tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tb.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var last catalog.DataFile
	for _, f := range files {
		if f.AddedAt.After(last.AddedAt) || last.Path == "" {
			last = f
		}
	}
	if last.Rows != int64(len(d20)) {
		t.Fatalf("the newest file has %d rows, want day 20's %d", last.Rows, len(d20))
	}
	if _, err := tb.Commit(ctx, catalog.Change{Operation: "delete", RunID: "test", Remove: []catalog.DataFile{last}, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	res = run(t, out, o)
	if res.Full || res.First != day(20).Format(time.DateOnly) {
		t.Fatalf("after deleting day 20's file: %+v, want an incremental run from day 20", res)
	}
	sameRows(t, "after a delete", outputRows(t, out), expectedRows(t, src, snap, "UTC"))

	// A file without statistics of the time column: a full run, saying so.
	m, err = tb.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	written, err := tb.WriteFiles(ctx, m, [][]any{event{a: 9, b: "eu", ts: day(20), v: 5}.row()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range written {
		delete(written[i].Columns, "ts")
	}
	if _, err := tb.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: written, DataChange: true}); err != nil {
		t.Fatal(err)
	}
	res = run(t, out, o)
	if !res.Full || !strings.Contains(res.Reason, "no exact statistics of ts") || !strings.Contains(res.Reason, written[0].Path) {
		t.Fatalf("after a file without statistics: %+v, want a full run naming the file", res)
	}
	sameRows(t, "after a file without statistics", outputRows(t, out), expectedRows(t, src, snap, "UTC"))
}
