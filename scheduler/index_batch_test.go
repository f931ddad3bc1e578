package scheduler

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// While a batch writer runs, the record writes of three runs of one job
// (a claim and an end each) wait, and Flush writes them with one write
// of the job's index; meanwhile this process sees them (Recent) and
// another sees the index as it was. On local disk and on the S3 test
// server.
func TestBatchedIndexWritesAJobsUpdatesAtOnce(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			p, h, kinds := indexLake(t, kind, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
			ctx := context.Background()
			if _, err := h.RebuildIndex(ctx, "load"); err != nil { // an index with no runs
				t.Fatal(err)
			}
			counted := &countIndex{Store: h.Store}
			h.Store = counted
			h.batchIndex(time.Hour) // nothing is written but by Flush
			defer h.Close(ctx)
			clock := newFakeClock(hour(3).End)
			r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "a"}
			for n := range 3 {
				if out, err := r.RunInterval(ctx, p.Jobs["load"], hour(n), RunOptions{Only: true}); err != nil || !out.Ran {
					t.Fatalf("hour %d: %+v, %v", n, out, err)
				}
			}
			want := "2 succeeded 1\n1 succeeded 1\n0 succeeded 1\n"
			other := &History{Store: counted.Store}
			if jr, err := h.Recent(ctx, "load"); err != nil || listed(jr) != want {
				t.Fatalf("before the flush, this process's Recent lists\n%s(%v), want\n%s", listed(jr), err, want)
			}
			if jr, _, err := other.readIndex(ctx, "load"); err != nil || len(jr.Runs) != 0 {
				t.Fatalf("before the flush, the index lists\n%s(%v), want no runs", listed(jr), err)
			}
			if n := counted.writes.Load(); n != 0 {
				t.Fatalf("%d index writes before the flush", n)
			}
			if err := h.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if n := counted.writes.Load(); n != 1 {
				t.Fatalf("the flush wrote the index %d times, want once for six record writes", n)
			}
			if jr, _, err := other.readIndex(ctx, "load"); err != nil || listed(jr) != want {
				t.Fatalf("after the flush, the index lists\n%s(%v), want\n%s", listed(jr), err, want)
			}
		})
	}
}

// The batch writer writes waiting updates by itself once they have
// waited its delay; Close writes those still waiting, and leaves no
// goroutine behind; after it each update is written with its record.
func TestBatchWriterFlushesAloneAndCloseWritesTheRest(t *testing.T) {
	_, h, _ := indexLake(t, testenv.Local, nil)
	ctx := context.Background()
	rec := func(n int, st Status) Record {
		return Record{Job: "load", Interval: hour(n).Key(), Start: hour(n).Start, End: hour(n).End, ID: hour(n).Key(), Attempt: 1,
			Status: st, Started: hour(n).End}
	}
	put := func(r Record) {
		t.Helper()
		if _, err := h.put(ctx, r, cloud.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	indexed := func() string {
		t.Helper()
		jr, _, err := (&History{Store: h.Store}).readIndex(ctx, "load")
		if err != nil {
			t.Fatal(err)
		}
		return listed(jr)
	}
	written := make(chan struct{}, 1)
	h.Store = notifyIndex{h.Store, written}
	before := batchGoroutines()
	h.batchIndex(time.Millisecond)
	t.Cleanup(func() { h.Close(ctx) })
	put(rec(0, StatusSucceeded)) // the job's first: rebuilt from the records
	<-written
	put(rec(1, StatusSucceeded))
	<-written // by the writer alone
	if got, want := indexed(), "1 succeeded 1\n0 succeeded 1\n"; got != want {
		t.Fatalf("the batch writer wrote\n%swant\n%s", got, want)
	}

	h.batchIndex(time.Hour) // runs already: unchanged
	put(rec(2, StatusFailed))
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := indexed(), "2 failed 1\n1 succeeded 1\n0 succeeded 1\n"; got != want {
		t.Fatalf("after Close the index lists\n%swant\n%s", got, want)
	}
	for i := 0; i < 100 && batchGoroutines() > before; i++ {
		time.Sleep(10 * time.Millisecond) // a goroutine that has closed its done may still be returning
	}
	if n := batchGoroutines(); n > before {
		t.Fatalf("%d batch writer goroutines left after Close (%d before)", n, before)
	}
	put(rec(3, StatusSucceeded))
	if got := indexed(); !strings.HasPrefix(got, "3 succeeded 1\n") {
		t.Fatalf("after Close a record's update was not written with it: the index lists\n%s", got)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// Serve starts a batch writer of the index at its start, and at its
// shutdown writes the updates still waiting and stops it: nothing waits,
// and no goroutine of it is left, once Serve returns.
func TestServeBatchesIndexUpdatesAndWritesThemAtShutdown(t *testing.T) {
	p, h, kinds := indexLake(t, testenv.Local, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	batching := func() bool {
		h.indexMu.Lock()
		defer h.indexMu.Unlock()
		return h.batcher != nil
	}
	// serve serves until the start's index rebuild is done and hour 0,
	// the catch-up, has run (once, by the first serve), calls during,
	// then shuts down.
	serve := func(during func()) {
		t.Helper()
		ctx, stop := context.WithCancel(context.Background())
		rebuilt := make(chan struct{}, 1)
		s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: newFakeClock(hour(0).End.Add(30 * time.Minute)),
			Instance: "a", Logger: slog.New(onMessage{"run indexes rebuilt", rebuilt})}}
		done := make(chan error)
		go func() { done <- s.Serve(ctx) }()
		<-rebuilt
		<-s.Ready() // hour 0 ran: nothing else runs until the next tick
		during()
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if batching() || len(h.pendingOf("load")) > 0 {
			t.Fatalf("after Serve returned: batch writer running %v, updates waiting %v", batching(), h.pendingOf("load"))
		}
	}
	before := batchGoroutines()
	// A batch writer that writes nothing but at shutdown.
	h.batchIndex(time.Hour)
	serve(func() {
		if len(h.pendingOf("load")) == 0 {
			t.Error("hour 0's run did not wait for the batch writer")
		}
	})
	jr, _, err := (&History{Store: h.Store}).readIndex(context.Background(), "load")
	if err != nil || listed(jr) != "0 succeeded 1\n" {
		t.Fatalf("after serve the index lists\n%s(%v); want hour 0 succeeded", listed(jr), err)
	}
	serve(func() {
		if !batching() {
			t.Error("serve did not start a batch writer")
		}
	})
	for i := 0; i < 100 && batchGoroutines() > before; i++ {
		time.Sleep(10 * time.Millisecond) // a goroutine that has closed its done may still be returning
	}
	if n := batchGoroutines(); n > before {
		t.Fatalf("%d batch writer goroutines left after serve (%d before)", n, before)
	}
}

// onMessage is a log handler that signals c at each line whose message
// is msg, unless c is full.
type onMessage struct {
	msg string
	c   chan<- struct{}
}

func (m onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (m onMessage) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m onMessage) WithGroup(string) slog.Handler            { return m }
func (m onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == m.msg {
		select {
		case m.c <- struct{}{}:
		default:
		}
	}
	return nil
}

// batchGoroutines counts the goroutines running the batch writer.
func batchGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "scheduler.(*History).writeBatches") || strings.Contains(g, "scheduler.(*History).flushJobs") {
			n++
		}
	}
	return n
}

// countIndex is a store that counts the writes of run indexes.
type countIndex struct {
	cloud.Store
	writes atomic.Int64
}

func (s *countIndex) Put(ctx context.Context, key string, r io.Reader, size int64, opts cloud.PutOptions) (cloud.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, r, size, opts)
	if err == nil && strings.HasPrefix(key, runIndexPrefix) {
		s.writes.Add(1)
	}
	return info, err
}
