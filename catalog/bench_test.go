package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// benchTable creates a local table holding n files, 100 per daily
// partition, committed in one version. The entries carry realistic
// statistics; the commit protocol never opens data files, so the bench
// does not write n Parquet files.
func benchTable(b *testing.B, n int) *catalog.Table {
	b.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, b.TempDir(), catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tbl.Close() })
	if _, err := tbl.Create(ctx, eventSchema, daySpec(b), nil, "bench"); err != nil {
		b.Fatal(err)
	}
	files := make([]catalog.DataFile, n)
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range files {
		files[i] = syntheticFile(day0.AddDate(0, 0, i/100))
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "import", Add: files, DataChange: true}); err != nil {
		b.Fatal(err)
	}
	return tbl
}

func syntheticFile(day time.Time) catalog.DataFile {
	d := day.Format("2006-01-02")
	p := "date=" + d
	lo, hi := d+"T00:00:00.000000Z", d+"T23:59:59.000000Z"
	minID, maxID := "1", "99999"
	return catalog.DataFile{Path: catalog.NewDataFilePath(p), Partition: p,
		PartitionValues: map[string]*string{"date": &d}, Bytes: 8 << 20,
		FileStats: catalog.FileStats{Rows: 100000, Columns: map[string]catalog.ColumnStats{
			"list_id":    {Min: &minID, Max: &maxID},
			"event_time": {Min: &lo, Max: &hi},
		}}}
}

// BenchmarkCommitOneFile measures the latency of committing one added file
// to a table that already holds 1,000 / 10,000 / 100,000 files. It must
// stay flat: a commit rewrites only the touched partition's newest piece.
func BenchmarkCommitOneFile(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			tbl := benchTable(b, n)
			ctx := context.Background()
			today := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n/100-1)
			b.ResetTimer()
			for b.Loop() {
				f := syntheticFile(today)
				if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: []catalog.DataFile{f}, DataChange: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListFiles measures what `sluice files` does: find the latest
// version and list its live files, with a cold piece cache.
func BenchmarkListFiles(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			tbl := benchTable(b, n)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				h, _ := catalog.Open(ctx, tbl.Location(), catalog.Options{})
				m, err := h.Latest(ctx)
				if err != nil {
					b.Fatal(err)
				}
				files, err := h.Files(ctx, m)
				if err != nil || len(files) != n {
					b.Fatalf("%d files, %v", len(files), err)
				}
				h.Close()
			}
		})
	}
}

// BenchmarkParquetWriterWrite is the encoding side of an ingest: batches of
// rows like bench/ingest.sh's (two uuids, an int64, an int32, a timestamp)
// through one file's writer: conversion, encoding and the pages'
// compression, without the final row group flush and upload. The columns
// are required, as bench/ingest.sh's, or all nullable (without NULLs).
func BenchmarkParquetWriterWrite(b *testing.B) {
	for _, bc := range []struct{ name, schema string }{
		{"required", "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp"},
		{"nullable", "event_id:uuid?,list_id:int64?,subscriber_id:uuid?,tally:int32?,event_time:timestamp?"},
	} {
		b.Run(bc.name, func(b *testing.B) { benchParquetWriterWrite(b, mustSchema(bc.schema)) })
	}
}

func benchParquetWriterWrite(b *testing.B, schema catalog.Schema) {
	rows := make([][]any, 1024)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("%08x-1089-4edd-90a9-1e4fb85fa15e", i), int64(i % 5000),
			fmt.Sprintf("%08x-22d9-4488-9cf1-92d1dad9f74a", i*7), int32(i % 10), t0.Add(time.Duration(i) * time.Second)}
	}
	ctx := context.Background()
	w, err := pqio.NewParquetWriter(schema, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { w.Abort() }()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Write(ctx, rows); err != nil {
			b.Fatal(err)
		}
		if w.Buffered() > 64<<20 {
			b.StopTimer()
			w.Abort()
			if w, err = pqio.NewParquetWriter(schema, nil); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// BenchmarkCommitManyPartitions measures a commit adding one file to each
// of 30 daily partitions (a backfill's, or an ingest's of a month of late
// events) to a table of 1,000 files on local disk, where every piece
// written is fsynced with its folder.
func BenchmarkCommitManyPartitions(b *testing.B) {
	tbl := benchTable(b, 1000)
	ctx := context.Background()
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for b.Loop() {
		add := make([]catalog.DataFile, 30)
		for i := range add {
			add[i] = syntheticFile(day0.AddDate(0, 0, i))
		}
		if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: add, DataChange: true}); err != nil {
			b.Fatal(err)
		}
	}
}
