package iceberg_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// benchTable makes a table of days daily partitions with perDay live
// files each, all real Parquet files: one written per day, the others
// hard links to it under their own names (so the table costs little disk
// yet every file is there to read), committed 10 days at a time.
func benchTable(b *testing.B, ctx context.Context, loc string, days, perDay int) *catalog.Table {
	b.Helper()
	tbl, m := newTable(b, ctx, loc, "id:int64,ts:timestamp", "day(ts)")
	first := time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC)
	var add []catalog.DataFile
	for d := range days {
		files, err := tbl.WriteFiles(ctx, m, [][]any{{int64(d), first.AddDate(0, 0, d)}})
		if err != nil {
			b.Fatal(err)
		}
		f := files[0]
		add = append(add, f)
		for range perDay - 1 {
			link := f
			link.Path = catalog.NewDataFilePath(f.Partition)
			if err := os.Link(tbl.FileURL(f), tbl.FileURL(link)); err != nil {
				b.Fatal(err)
			}
			add = append(add, link)
		}
		if (d+1)%10 == 0 || d == days-1 {
			if m, err = tbl.Commit(ctx, catalog.Change{Operation: "append", Add: add, DataChange: true}); err != nil {
				b.Fatal(err)
			}
			add = nil
		}
	}
	if m.Files != int64(days*perDay) {
		b.Fatalf("fixture: %d live files, want %d", m.Files, days*perDay)
	}
	return tbl
}

// BenchmarkSyncOneCommit measures syncing one append (one file into the
// latest day) onto a mirror of a table with 1,000 live files and one
// with 100,000 (100 files a day over 10 and 1,000 days). The table and
// its mirror are built, and mirrored, before the clock starts; each
// iteration commits one append untimed, then times its sync.
//
//	go test -run '^$' -bench BenchmarkSyncOneCommit -benchtime 20x ./iceberg
func BenchmarkSyncOneCommit(b *testing.B) {
	ctx := context.Background()
	for _, size := range []struct {
		name string
		days int
	}{{"files=1000", 10}, {"files=100000", 1000}} {
		dir := b.TempDir()
		tbl := benchTable(b, ctx, filepath.Join(dir, "t"), size.days, 100)
		cat, err := iceberg.OpenCatalog(ctx, "sqlite://"+filepath.Join(dir, "catalog.db"))
		if err != nil {
			b.Fatal(err)
		}
		opts := iceberg.Options{Namespace: "bench", Name: "t"}
		if _, err := iceberg.Sync(ctx, tbl, cat, opts); err != nil {
			b.Fatal(err)
		}
		last := time.Date(2020, 1, 1, 13, 0, 0, 0, time.UTC).AddDate(0, 0, size.days-1)
		b.Run(size.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m, err := tbl.Latest(ctx)
				if err != nil {
					b.Fatal(err)
				}
				files, err := tbl.WriteFiles(ctx, m, [][]any{{int64(-i), last}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", Add: files, DataChange: true}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := iceberg.Sync(ctx, tbl, cat, opts)
				if err != nil || res.Mirrored != 1 {
					b.Fatalf("sync: %+v, %v", res, err)
				}
			}
		})
		cat.Close()
		tbl.Close()
	}
}
