package delta_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

// writeBigLog writes a Delta log of files live files, partitioned by
// date over a year, in commits of 10,000 adds, each add with the stats a
// Spark writer of a six-column table leaves (about 600 bytes), and a
// commit removing every tenth file.
func writeBigLog(b *testing.B, dir string, files int) {
	b.Helper()
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		b.Fatal(err)
	}
	schema := `{"type":"struct","fields":[` +
		`{"name":"event_id","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"user_id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"kind","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"payload","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"date","type":"string","nullable":true,"metadata":{}}]}`
	meta, _ := json.Marshal(map[string]any{"metaData": map[string]any{"id": "big", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": schema, "partitionColumns": []string{"date"}, "configuration": map[string]any{}, "createdTime": 1}})
	write := func(v int, lines func(w *bufio.Writer)) {
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		lines(w)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	write(0, func(w *bufio.Writer) {
		fmt.Fprintln(w, `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`)
		fmt.Fprintln(w, string(meta))
	})
	now := time.Now().UnixMilli()
	path := func(i int) (string, string) {
		day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%365).Format("2006-01-02")
		return day, fmt.Sprintf("date=%s/part-%05d-%08x-1c2d-4e5f-8a9b-%012x.c000.snappy.parquet", day, i%1000, i, i*7919)
	}
	v := 1
	for start := 0; start < files; start += 10000 {
		write(v, func(w *bufio.Writer) {
			fmt.Fprintf(w, `{"commitInfo":{"timestamp":%d,"operation":"STREAMING UPDATE"}}`+"\n", now)
			for i := start; i < min(start+10000, files); i++ {
				day, p := path(i)
				stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"event_id":"00a1b2c3-%08x","user_id":%d,"kind":"click","amount":0.01,"ts":"%sT00:00:01.123Z","payload":"{\"k\":\"a\\\"b\"}"},"maxValues":{"event_id":"ffe1d2c3-%08x","user_id":%d,"kind":"view","amount":99812.5,"ts":"%sT23:59:58.999Z","payload":"{\"k\":\"z\"}"},"nullCount":{"event_id":0,"user_id":0,"kind":0,"amount":%d,"ts":0,"payload":%d}}`,
					1000+i%5000, i, i%977, day, i, 100000+i, day, i%13, i%7)
				statsJSON, _ := json.Marshal(stats)
				fmt.Fprintf(w, `{"add":{"path":%q,"partitionValues":{"date":%q},"size":%d,"modificationTime":%d,"dataChange":true,"stats":%s}}`+"\n",
					p, day, 50000+i%90000, now, statsJSON)
			}
		})
		v++
	}
	write(v, func(w *bufio.Writer) {
		fmt.Fprintf(w, `{"commitInfo":{"timestamp":%d,"operation":"DELETE"}}`+"\n", now)
		for i := 0; i < files; i += 10 {
			day, p := path(i)
			fmt.Fprintf(w, `{"remove":{"path":%q,"deletionTimestamp":%d,"dataChange":true,"partitionValues":{"date":%q},"size":%d}}`+"\n", p, now, day, 50000+i%90000)
		}
	})
}

// peakRSS resets the process's peak resident set (Linux) and returns a
// function that reports the peak since, in bytes; -1 where it cannot.
func peakRSS() func() int64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return func() int64 { return -1 }
	}
	return func() int64 {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return -1
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				return kb << 10
			}
		}
		return -1
	}
}

// peakHeap samples the live heap every millisecond until stop is called,
// which returns the largest sample.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// BenchmarkCheckpoint200kFiles writes the checkpoint of a table with
// 200,000 live files (and 20,000 tombstones) and reports its peak heap
// and peak RSS, beside those of reading the same version whole
// (Snapshot, what a reader holding every add would need):
//
//	go test -run '^$' -bench BenchmarkCheckpoint200kFiles -benchtime 1x ./delta
func BenchmarkCheckpoint200kFiles(b *testing.B) {
	files := 200000
	if s := os.Getenv("SLUICE_BENCH_FILES"); s != "" {
		files, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	writeBigLog(b, dir, files)
	ctx := context.Background()
	st, err := cloud.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	tbl := delta.New(st)
	snap, err := tbl.Snapshot(ctx, delta.Latest)
	if err != nil {
		b.Fatal(err)
	}
	version, live := snap.Version, len(snap.Files)
	snap = nil
	measure := func(fn func()) (heap uint64, rss int64, d time.Duration) {
		runtime.GC()
		debug.FreeOSMemory()
		rssOf := peakRSS()
		stop := peakHeap()
		start := time.Now()
		fn()
		d = time.Since(start)
		return stop(), rssOf(), d
	}
	b.ResetTimer()
	for range b.N {
		_ = os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", version)))
		var res delta.CheckpointResult
		cpHeap, cpRSS, cpTime := measure(func() {
			if res, err = tbl.WriteCheckpoint(ctx, version, time.Now()); err != nil {
				b.Fatal(err)
			}
		})
		if res.Adds != int64(live) {
			b.Fatalf("checkpoint of %d adds; %d files are live", res.Adds, live)
		}
		_ = os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", version)))
		snapHeap, snapRSS, snapTime := measure(func() {
			s, err := tbl.Snapshot(ctx, delta.Latest)
			if err != nil || len(s.Files) != live {
				b.Fatal(err)
			}
			runtime.KeepAlive(s)
		})
		b.ReportMetric(float64(cpHeap)/(1<<20), "checkpoint-peak-heap-MiB")
		b.ReportMetric(float64(cpRSS)/(1<<20), "checkpoint-peak-rss-MiB")
		b.ReportMetric(cpTime.Seconds(), "checkpoint-s")
		b.ReportMetric(float64(res.Bytes)/(1<<20), "checkpoint-file-MiB")
		b.ReportMetric(float64(snapHeap)/(1<<20), "whole-read-peak-heap-MiB")
		b.ReportMetric(float64(snapRSS)/(1<<20), "whole-read-peak-rss-MiB")
		b.ReportMetric(snapTime.Seconds(), "whole-read-s")
	}
}
