package compact

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// BenchmarkRewrite rewrites 100 small files of 2,000 event rows each into
// one file: copied as they are, sorted by a column whose values every
// file spreads over (n) in memory, and sorted with spills of 1 MiB runs
// to disk. bench/compact.sh compares the same engine with DuckDB at scale.
func BenchmarkRewrite(b *testing.B) {
	ctx := context.Background()
	st := tempStore(b)
	schema := parseSchema(b, eventSchema)
	var inputs []catalog.DataFile
	var rows int64
	for i := range 100 {
		inputs = append(inputs, writeFile(b, st, fmt.Sprintf("in/%03d.parquet", i), "", schema, eventRows(i*2000, 2000)))
		rows += 2000
	}
	sorted := Ordering{Columns: []string{"n"}}
	for _, bc := range []struct {
		name  string
		order Ordering
		cap   int64
	}{
		{"copy", Ordering{}, sortBufferCap},
		{"sorted", sorted, sortBufferCap},
		{"sorted-spill", sorted, 1 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(n int64) { sortBufferCap = n }(sortBufferCap)
			sortBufferCap = bc.cap
			out := tempStore(b)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := Rewrite(ctx, storeOpener(st), out, schema, "", inputs, RewriteOptions{Order: bc.order})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, f := range res.Outputs {
					_ = out.Delete(ctx, f.Path)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
