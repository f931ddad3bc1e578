package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// The batch writer of the run index. Every run record's write updates
// its job's index; on a server running many jobs often, two writes of
// the index per run (the claim, the end) cost more than the runs. While
// a batch writer runs, a record's update waits, at most indexDelay, for
// the job's next ones, and one compare-and-swap of the index writes them
// all. The cost is a lag: another process sees the updates once they
// are written (this one at once, see Recent), and a crash loses those
// still waiting, as it lost the one being written before: the index is
// a cache, serve rebuilds every index at its start, and nothing that
// decides what runs reads it (claims read the records).
const (
	// indexDelay is how long an update waits for its job's next ones.
	indexDelay = time.Second
	// indexWriters bounds the batch writer's index writes at once.
	indexWriters = 4
	// indexCloseTimeout bounds serve's writing of the updates still
	// waiting at its shutdown.
	indexCloseTimeout = 10 * time.Second
)

// pendingIndex is a job's index updates waiting for the batch writer:
// the records, in the order they were written, and when the first was.
type pendingIndex struct {
	recs  []Record
	since time.Time
}

// indexBatcher is a History's batch writer: one goroutine that writes
// each job's waiting updates once the oldest has waited delay,
// indexWriters jobs at once.
type indexBatcher struct {
	delay  time.Duration
	wake   chan struct{} // a job's first update is waiting
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the goroutine has ended
	ctx    context.Context
	cancel context.CancelFunc
}

// batchIndex starts h's batch writer, unless it runs: from then on a
// record's index update waits up to delay for the job's next ones, until
// Close.
func (h *History) batchIndex(delay time.Duration) {
	h.indexMu.Lock()
	defer h.indexMu.Unlock()
	if h.batcher != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &indexBatcher{delay: delay, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), ctx: ctx, cancel: cancel}
	h.batcher = b
	go h.writeBatches(b)
}

// queueIndex leaves r's index update to the batch writer, if one runs,
// and tells whether it did.
func (h *History) queueIndex(r Record) bool {
	h.indexMu.Lock()
	defer h.indexMu.Unlock()
	b := h.batcher
	if b == nil {
		return false
	}
	p := h.pending[r.Job]
	if p == nil {
		if h.pending == nil {
			h.pending = map[string]*pendingIndex{}
		}
		p = &pendingIndex{since: time.Now()}
		h.pending[r.Job] = p
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	p.recs = append(p.recs, r)
	return true
}

// pendingOf returns a copy of job's updates waiting for the batch writer.
func (h *History) pendingOf(job string) []Record {
	h.indexMu.Lock()
	defer h.indexMu.Unlock()
	if p := h.pending[job]; p != nil {
		return slices.Clone(p.recs)
	}
	return nil
}

// takePending removes job's waiting updates and returns them; the
// caller holds the job's index lock, and so writes them before any
// update that waits after them.
func (h *History) takePending(job string) []Record {
	h.indexMu.Lock()
	defer h.indexMu.Unlock()
	p := h.pending[job]
	delete(h.pending, job)
	if p == nil {
		return nil
	}
	return p.recs
}

// due returns the jobs whose oldest waiting update has waited delay by
// now (every waiting job when delay is negative), and when the next of
// the others will have (zero when none waits).
func (h *History) due(now time.Time, delay time.Duration) (jobs []string, next time.Time) {
	h.indexMu.Lock()
	defer h.indexMu.Unlock()
	for job, p := range h.pending {
		at := p.since.Add(delay)
		switch {
		case delay < 0 || !at.After(now):
			jobs = append(jobs, job)
		case next.IsZero() || at.Before(next):
			next = at
		}
	}
	slices.Sort(jobs)
	return jobs, next
}

// flushJobs writes the waiting updates of jobs, indexWriters jobs at
// once; the error names each job whose index was not written.
func (h *History) flushJobs(ctx context.Context, jobs []string) error {
	var mu sync.Mutex
	var errs []error
	g := errgroup.Group{}
	g.SetLimit(indexWriters)
	for _, job := range jobs {
		g.Go(func() error {
			l := h.lockIndex(job)
			defer l.Unlock()
			recs := h.takePending(job)
			if err := h.mergeIndex(ctx, job, recs); err != nil {
				h.logIndexError(job, len(recs), err)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// writeBatches is the batch writer's goroutine: it writes each job's
// updates once the oldest has waited b.delay, until Close stops it.
func (h *History) writeBatches(b *indexBatcher) {
	defer close(b.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		jobs, next := h.due(time.Now(), b.delay)
		if len(jobs) > 0 {
			_ = h.flushJobs(b.ctx, jobs) // logged; the next rebuild corrects the index
			continue
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-b.stop:
			return
		case <-b.wake:
		case <-timer.C:
		}
	}
}

// Flush writes every index update waiting for the batch writer now (see
// Close), and returns once they are written; the error names each job
// whose index could not be (its next rebuild corrects it).
func (h *History) Flush(ctx context.Context) error {
	jobs, _ := h.due(time.Time{}, -1)
	return h.flushJobs(ctx, jobs)
}

// Close stops h's batch writer, if one runs, and writes every index
// update still waiting; h stays usable, each later update written with
// its record. Serve starts a batch writer and closes it at its shutdown
// itself; a program that starts one otherwise calls Close before it
// exits, or the index misses its last second of runs until it is
// rebuilt. Close is idempotent; ctx bounds the writes.
func (h *History) Close(ctx context.Context) error {
	h.indexMu.Lock()
	b := h.batcher
	h.batcher = nil
	h.indexMu.Unlock()
	if b != nil {
		close(b.stop)
		stop := context.AfterFunc(ctx, b.cancel) // a write under way gives up with ctx
		<-b.done
		stop()
		b.cancel()
	}
	return h.Flush(ctx)
}
