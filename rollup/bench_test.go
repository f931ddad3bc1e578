package rollup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
	"github.com/sluice-data/sluice/rollup"
)

// BenchmarkRollupFull is a full rollup of 2M events (2,000 keys of two
// columns, 30 days after the snapshot, the five measures of the tests)
// into a fresh output: decoding, the grid's measure loops, writing the 31
// days. It reports events a second.
func BenchmarkRollupFull(b *testing.B) {
	const lists, events = 1000, 1 << 21
	ctx := context.Background()
	dir := b.TempDir()
	src := filepath.Join(dir, "events")
	s, err := catalog.ParseSchema(eventsSchema)
	if err != nil {
		b.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec("day(ts)", s)
	if err != nil {
		b.Fatal(err)
	}
	tb, err := catalog.Open(ctx, src, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	m, err := tb.Create(ctx, s, spec, nil, "bench")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 7))
	for part := range 4 {
		rows := make([][]any, 0, events/4)
		for range events / 4 {
			var w any
			if r.IntN(4) != 0 {
				w = int64(r.IntN(1000))
			}
			at := day(1 + r.IntN(30)).Add(time.Duration(r.IntN(86400)) * time.Second)
			rows = append(rows, []any{1 + r.Int64N(lists), regions[r.IntN(2)], at, int32(r.IntN(9) - 3), w})
		}
		files, err := tb.WriteFiles(ctx, m, rows)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tb.Commit(ctx, catalog.Change{Operation: "append", RunID: fmt.Sprint("bench", part), Add: files, DataChange: true}); err != nil {
			b.Fatal(err)
		}
	}
	var snap [][]any
	for a := int64(1); a <= lists; a++ {
		for _, reg := range regions {
			snap = append(snap, []any{a, reg, day0, int64(r.IntN(500))})
		}
	}
	ss, err := catalog.ParseSchema(snapshotSchema)
	if err != nil {
		b.Fatal(err)
	}
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, _, err := pqio.WriteParquet(ctx, st, "snapshot.parquet", ss, snap); err != nil {
		b.Fatal(err)
	}
	var ms []rollup.Measure
	for _, spec := range testMeasures {
		m, err := rollup.ParseMeasure(spec)
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
	}
	o := rollup.Options{Source: src, Snapshot: filepath.Join(dir, "snapshot.parquet"), Keys: []string{"a", "b"},
		Time: "ts", Measures: ms, RunID: "bench", Full: true}
	i := 0
	for b.Loop() {
		out, err := catalog.Open(ctx, filepath.Join(dir, fmt.Sprint("out", i)), catalog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rollup.Run(ctx, out, o); err != nil {
			b.Fatal(err)
		}
		out.Close()
		i++
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
