package main

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// BenchmarkFilesCommand times `sluice files` (the whole process: start,
// find the latest version, read its pieces, print) on a local table of
// 100,000 files in 1,000 daily partitions.
func BenchmarkFilesCommand(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	tbl, err := catalog.Open(ctx, dir, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tbl.Close()
	sc, _ := catalog.ParseSchema("event_id:uuid,list_id:int64,event_time:timestamp")
	spec, _ := catalog.ParsePartitionSpec("day(event_time)", sc)
	if _, err := tbl.Create(ctx, sc, spec, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	const n = 100000
	files := make([]catalog.DataFile, n)
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range files {
		d := day0.AddDate(0, 0, i/100).Format("2006-01-02")
		p := "date=" + d
		lo, hi := d+"T00:00:00.000000Z", d+"T23:59:59.000000Z"
		files[i] = catalog.DataFile{Path: catalog.NewDataFilePath(p), Partition: p,
			PartitionValues: map[string]*string{"date": &d}, Bytes: 8 << 20,
			FileStats: catalog.FileStats{Rows: 100000, Columns: map[string]catalog.ColumnStats{"event_time": {Min: &lo, Max: &hi}}}}
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "import", Add: files}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		out, err := exec.Command(sluiceBin, "files", dir).Output()
		if err != nil {
			b.Fatal(err)
		}
		if got := len(lines(string(out))); got != n {
			b.Fatalf("%d files listed, want %d", got, n)
		}
	}
}
