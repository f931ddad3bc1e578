package compact

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// BenchmarkRewrite rewrites 100 small files of 2,000 event rows each into
// one file; bench/compact.sh compares the same engine with DuckDB at scale.
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
	out := tempStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := Rewrite(ctx, storeOpener(st), out, schema, "", inputs, RewriteOptions{})
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
}
