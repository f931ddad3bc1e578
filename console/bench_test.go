package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/scheduler"
)

// The benchmark's lake: 200 jobs on @every 15m, 500 run records each
// (100,000 in all, five days of runs), the newest ending now; each
// job's index holds its last day (96 runs).
const (
	benchJobs    = 200
	benchRecords = 500
	benchEvery   = 15 * time.Minute
)

var benchLake struct {
	once sync.Once
	srv  *scheduler.Server
	err  error
}

// benchServer writes the benchmark's lake once per process: the records
// as files in the lake's layout (writing 100,000 through claims would
// take minutes), then each job's index built by History.RebuildIndex.
func benchServer(b *testing.B) *scheduler.Server {
	benchLake.once.Do(func() { benchLake.srv, benchLake.err = writeBenchLake(b.TempDir()) })
	if benchLake.err != nil {
		b.Fatal(benchLake.err)
	}
	return benchLake.srv
}

func writeBenchLake(dir string) (*scheduler.Server, error) {
	var src strings.Builder
	fmt.Fprintf(&src, "lake: %s\njobs:\n", filepath.Join(dir, "lake"))
	for i := range benchJobs {
		fmt.Fprintf(&src, "  job%03d:\n    schedule: \"@every 15m\"\n    task: {}\n", i)
	}
	kinds := map[string]scheduler.Kind{"task": task{run: func(context.Context, *scheduler.Job, scheduler.Interval) (any, error) { return nil, nil }}}
	p, err := scheduler.Parse(filepath.Join(dir, "p.yaml"), []byte(src.String()), kinds, func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(benchEvery)
	var g errgroup.Group
	g.SetLimit(8)
	for _, job := range p.Order {
		g.Go(func() error {
			folder := filepath.Join(dir, "lake", "_sluice", "runs", job)
			if err := os.MkdirAll(folder, 0o755); err != nil {
				return err
			}
			for i := range benchRecords {
				start := now.Add(-time.Duration(i+1) * benchEvery)
				iv := scheduler.Interval{Start: start, End: start.Add(benchEvery)}
				rec := scheduler.Record{Job: job, Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: fmt.Sprintf("%s-%d", job, i),
					Attempt: 1, Instance: "bench-1", Status: scheduler.StatusSucceeded, Trigger: "schedule",
					Started: iv.End, Ended: iv.End.Add(time.Duration(1+i%7) * time.Second), Summary: json.RawMessage(`{"files":3,"rows":1200}`)}
				if i%50 == 7 {
					rec.Status, rec.Error, rec.ErrorClass, rec.Summary = scheduler.StatusFailed, "read landing file: connection reset", "transient", nil
				}
				data, err := json.MarshalIndent(rec, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(folder, rec.Interval), data, 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	st, err := cloud.Open(context.Background(), p.Lake)
	if err != nil {
		return nil, err
	}
	h := &scheduler.History{Store: st}
	for _, job := range p.Order {
		g.Go(func() error {
			_, err := h.RebuildIndex(context.Background(), job)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &scheduler.Server{Runner: &scheduler.Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "bench-1"}}, nil
}

// firstByte records when the first byte of the body is written.
type firstByte struct {
	http.ResponseWriter
	at time.Time
}

func (w *firstByte) Write(p []byte) (int, error) {
	if w.at.IsZero() {
		w.at = time.Now()
	}
	return w.ResponseWriter.Write(p)
}

// BenchmarkIndexPage times GET / on a lake of 200 jobs and 100,000 run
// records: from the request to the first byte of the page and to its
// last, and reports the page's size and the timeline bars it draws.
// Cold is a new console, its caches empty (every job's index is read);
// warm reads the index within the cache's two seconds.
func BenchmarkIndexPage(b *testing.B) {
	srv := benchServer(b)
	type result struct {
		first, whole time.Duration
		bytes, bars  int
	}
	get := func(b *testing.B, h http.Handler) result {
		req := httptest.NewRequest("GET", "/", nil)
		rec := httptest.NewRecorder()
		w := &firstByte{ResponseWriter: rec}
		began := time.Now()
		h.ServeHTTP(w, req)
		whole := time.Since(began)
		if rec.Code != 200 || w.at.IsZero() {
			b.Fatalf("GET /: %d", rec.Code)
		}
		body := rec.Body.String()
		return result{first: w.at.Sub(began), whole: whole, bytes: len(body), bars: strings.Count(body, `<rect class="bar `)}
	}
	report := func(b *testing.B, rs []result) {
		var sum result
		for _, r := range rs {
			sum.first += r.first
			sum.whole += r.whole
			sum.bytes += r.bytes
			sum.bars += r.bars
		}
		n := float64(len(rs))
		b.ReportMetric(float64(sum.first.Microseconds())/1000/n, "ms/first-byte")
		b.ReportMetric(float64(sum.whole.Microseconds())/1000/n, "ms/page")
		b.ReportMetric(float64(sum.bytes)/n, "bytes/page")
		b.ReportMetric(float64(sum.bars)/n, "bars/page")
	}
	b.Run("cold", func(b *testing.B) {
		var rs []result
		for b.Loop() {
			rs = append(rs, get(b, New(srv, "", nil, nil).Handler()))
		}
		report(b, rs)
	})
	b.Run("warm", func(b *testing.B) {
		h := New(srv, "", nil, nil).Handler()
		get(b, h)
		var rs []result
		for b.Loop() {
			rs = append(rs, get(b, h))
		}
		report(b, rs)
	})
}
