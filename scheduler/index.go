package scheduler

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
)

// runIndexPrefix is where the run index lives under the lake: beside
// runsPrefix, not under it, so listing the run records never sees it.
const runIndexPrefix = "_sluice/runindex/"

// What one job's index keeps, and the limits of the work on it.
const (
	// indexNewest: the records of the job's newest intervals, always kept.
	indexNewest = 30
	// indexWindow: beyond those, every record whose run started within
	// this of the job's newest start (so, whatever a reader's clock says,
	// every run of its last day is there).
	indexWindow = 24 * time.Hour
	// indexCap bounds the records one index holds (a job run every second
	// starts 86,400 runs a day); the newest intervals stay.
	indexCap = 500
	// indexRetries is how many times a write of the index is tried
	// against other writers before it is given up (the index is a cache:
	// the next rebuild corrects it). Eight lost to two backfills of four
	// runs each under the race detector; sixteen, with waits growing to
	// 64 ms, outlast such a burst.
	indexRetries = 16
	// indexReaders bounds RecentAll's reads at once.
	indexReaders = 16
	// rebuildReaders bounds one rebuild's record reads at once.
	rebuildReaders = 8
	// serveRebuilds bounds the jobs serve's start rebuilds at once.
	serveRebuilds = 4
)

// errUnreadableIndex: an index object that is not a JobRuns in JSON.
var errUnreadableIndex = errors.New("unreadable run index")

// errIndexRace: every try to write the index lost to another writer.
var errIndexRace = errors.New("lost every race to write the run index")

func indexKey(job string) string { return runIndexPrefix + job + "/index.json" }

// JobRuns is one job's recent runs, from its index.
type JobRuns struct {
	Job     string    `json:"job"`
	Runs    []Record  `json:"runs"` // newest interval first
	Updated time.Time `json:"updated"`
}

// lockIndex takes this process's turn at job's index, so that its own
// writers of one index take turns instead of racing each other's
// compare-and-swap; the caller unlocks.
func (h *History) lockIndex(job string) *sync.Mutex {
	h.indexMu.Lock()
	l, ok := h.indexLocks[job]
	if !ok {
		if h.indexLocks == nil {
			h.indexLocks = map[string]*sync.Mutex{}
		}
		l = &sync.Mutex{}
		h.indexLocks[job] = l
	}
	h.indexMu.Unlock()
	l.Lock()
	return l
}

// logIndexTo sends the failures of h's index writes to log (at warn).
func (h *History) logIndexTo(log *slog.Logger) { h.indexLog.Store(log) }

// readIndex returns job's index and its ETag: cloud.ErrNotFound when
// there is none; errUnreadableIndex, with the ETag, when it does not
// decode.
func (h *History) readIndex(ctx context.Context, job string) (JobRuns, string, error) {
	rc, info, err := h.Store.Get(ctx, indexKey(job))
	if err != nil {
		return JobRuns{}, "", fmt.Errorf("read run index of %s: %w", job, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return JobRuns{}, "", fmt.Errorf("read run index of %s: %w", job, err)
	}
	var jr JobRuns
	if err := json.Unmarshal(data, &jr); err != nil || jr.Job != job {
		return JobRuns{}, info.ETag, fmt.Errorf("run index %s: %w", h.Store.URL(indexKey(job)), errUnreadableIndex)
	}
	return jr, info.ETag, nil
}

// writeIndex writes jr as its job's index over the generation etag
// (none: create-only); cloud.ErrPreconditionFailed when another writer
// came first.
func (h *History) writeIndex(ctx context.Context, jr *JobRuns, etag string) error {
	jr.Updated = time.Now().UTC()
	if jr.Runs == nil {
		jr.Runs = []Record{}
	}
	data, err := json.Marshal(jr)
	if err != nil {
		return fmt.Errorf("encode run index of %s: %w", jr.Job, err)
	}
	opts := cloud.PutOptions{IfAbsent: etag == "", IfMatch: etag}
	if _, err := h.Store.Put(ctx, indexKey(jr.Job), bytes.NewReader(data), int64(len(data)), opts); err != nil {
		return fmt.Errorf("write run index of %s: %w", jr.Job, err)
	}
	return nil
}

// Recent returns job's index; when the index object is missing or
// unreadable it rebuilds it from the job's records (listing them) and
// writes it.
func (h *History) Recent(ctx context.Context, job string) (JobRuns, error) {
	jr, _, err := h.readIndex(ctx, job)
	if errors.Is(err, cloud.ErrNotFound) || errors.Is(err, errUnreadableIndex) {
		return h.RebuildIndex(ctx, job)
	}
	if err != nil {
		return JobRuns{}, err
	}
	// This process's own writes show at once, written to the index yet
	// or not.
	if runs, changed := mergeRuns(jr.Runs, h.pendingOf(job)); changed {
		jr.Runs = runs
	}
	if jr.Runs == nil {
		jr.Runs = []Record{}
	}
	return jr, nil
}

// RecentAll returns the indexes of jobs, read concurrently (at most 16
// reads at once), by job name. A job whose index cannot be had is left
// out, and the error names it; the others are returned all the same.
func (h *History) RecentAll(ctx context.Context, jobs []string) (map[string]JobRuns, error) {
	out := make(map[string]JobRuns, len(jobs))
	var mu sync.Mutex
	var errs []error
	g := errgroup.Group{}
	g.SetLimit(indexReaders)
	for _, job := range slices.Compact(slices.Sorted(slices.Values(jobs))) {
		g.Go(func() error {
			jr, err := h.Recent(ctx, job)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			out[job] = jr
			return nil
		})
	}
	_ = g.Wait()
	return out, errors.Join(errs...)
}

// RebuildIndex rebuilds job's index from its records.
func (h *History) RebuildIndex(ctx context.Context, job string) (JobRuns, error) {
	defer h.lockIndex(job).Unlock()
	return h.rebuild(ctx, job)
}

// rebuild writes job's index anew from its records; the caller holds
// the job's index lock. The index's ETag is read before the records are
// listed: a record written meanwhile merged into the index, which fails
// the write, and the rebuild starts again and lists it.
func (h *History) rebuild(ctx context.Context, job string) (JobRuns, error) {
	for range indexRetries {
		_, etag, err := h.readIndex(ctx, job)
		if err != nil && !errors.Is(err, cloud.ErrNotFound) && !errors.Is(err, errUnreadableIndex) {
			return JobRuns{}, err
		}
		recs, err := h.records(ctx, job)
		if err != nil {
			return JobRuns{}, fmt.Errorf("rebuild run index of %s: %w", job, err)
		}
		jr := JobRuns{Job: job, Runs: trimRuns(recs)}
		err = h.writeIndex(ctx, &jr, etag)
		if errors.Is(err, cloud.ErrPreconditionFailed) {
			continue
		}
		if err != nil {
			return JobRuns{}, err
		}
		return jr, nil
	}
	return JobRuns{}, fmt.Errorf("rebuild run index of %s: %w (%d tries)", job, errIndexRace, indexRetries)
}

// records reads every readable record of job, rebuildReaders at once. A
// record that does not decode cannot be in the index: it is left out
// (History.List names it).
func (h *History) records(ctx context.Context, job string) ([]Record, error) {
	var ivs []string
	if err := h.eachKey(ctx, runsPrefix+job+"/", func(_, iv string, _ cloud.ObjectInfo) { ivs = append(ivs, iv) }); err != nil {
		return nil, err
	}
	recs := make([]Record, len(ivs))
	ok := make([]bool, len(ivs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(rebuildReaders)
	for i, iv := range ivs {
		g.Go(func() error {
			r, _, err := h.Get(gctx, job, iv)
			switch {
			case errors.Is(err, cloud.ErrNotFound), errors.Is(err, ErrUnreadableRecord):
				return nil
			case err != nil:
				return err
			}
			recs[i], ok[i] = r, true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := recs[:0]
	for i, r := range recs {
		if ok[i] {
			out = append(out, r)
		}
	}
	return out, nil
}

// indexRecord merges r, just written, into its job's index: later, with
// the job's next writes, while a batch writer runs (see index_batch.go),
// else now, with any updates of the job still waiting. It never fails
// the record's write: the record is the truth and the index a cache,
// which the next rebuild corrects; a failure is logged at warn where a
// logger was given (serve), else dropped.
func (h *History) indexRecord(ctx context.Context, r Record) {
	if h.queueIndex(r) {
		return
	}
	defer h.lockIndex(r.Job).Unlock()
	recs := append(h.takePending(r.Job), r)
	h.logIndexError(r.Job, len(recs), h.mergeIndex(ctx, r.Job, recs))
}

// logIndexError logs err, the failure of n updates of job's index, where
// a logger was given.
func (h *History) logIndexError(job string, n int, err error) {
	if err == nil {
		return
	}
	if log := h.indexLog.Load(); log != nil {
		log.Warn("run index not updated; its next rebuild corrects it", "job", job, "records", n, "error", err)
	}
}

// mergeIndex merges recs, records of job written in this order, into the
// job's index by one compare-and-swap, retrying a lost race after a short
// jittered wait. An index that is missing (a new job, or a lake from
// before the index) or unreadable is rebuilt from the records, recs
// among them: merged into nothing they would hide the job's older runs.
func (h *History) mergeIndex(ctx context.Context, job string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	for n := range indexRetries {
		if n > 0 {
			wait := time.Duration(1+rand.IntN(1<<min(n, 6))) * time.Millisecond
			if err := sleep(ctx, RealClock{}, wait); err != nil {
				return err
			}
		}
		jr, etag, err := h.readIndex(ctx, job)
		if errors.Is(err, cloud.ErrNotFound) || errors.Is(err, errUnreadableIndex) {
			_, err := h.rebuild(ctx, job)
			return err
		}
		if err != nil {
			return err
		}
		runs, changed := mergeRuns(jr.Runs, recs)
		if !changed {
			return nil // late writes the index already has newer than
		}
		jr.Runs = runs
		err = h.writeIndex(ctx, &jr, etag)
		if !errors.Is(err, cloud.ErrPreconditionFailed) {
			return err
		}
	}
	return fmt.Errorf("merge %d records of %s into the run index: %w (%d tries)", len(recs), job, errIndexRace, indexRetries)
}

// mergeRuns merges recs into runs in order, as mergeRun does each.
func mergeRuns(runs, recs []Record) (out []Record, changed bool) {
	out = runs
	for _, r := range recs {
		var c bool
		out, c = mergeRun(out, r)
		changed = changed || c
	}
	return out, changed
}

// mergeRun returns runs with r in its interval's place: r replaces the
// interval's record when it has the higher attempt, or the same attempt
// and is final or the other is running (the later write wins a tie).
// changed is false when r changes nothing.
func mergeRun(runs []Record, r Record) (out []Record, changed bool) {
	out = slices.Clone(runs)
	i := slices.IndexFunc(out, func(x Record) bool { return x.Interval == r.Interval })
	switch {
	case i < 0:
		out = append(out, r)
	case renewal(r, out[i]):
		// A heartbeat moves only the holder's lease_until, which no
		// reader of the index uses: not worth a write per renewal.
		return runs, false
	case supersedes(r, out[i]):
		out[i] = r
	default:
		return runs, false
	}
	return trimRuns(out), true
}

// supersedes tells whether r, written after x, is the interval's record
// the index keeps: a write arriving late (a running record's after its
// final one) does not undo a newer state.
func supersedes(r, x Record) bool {
	if r.Attempt != x.Attempt {
		return r.Attempt > x.Attempt
	}
	return r.Status != StatusRunning || x.Status == StatusRunning
}

// renewal tells whether r is x renewed: the same running attempt, only
// its lease_until moved.
func renewal(r, x Record) bool {
	return r.Status == StatusRunning && x.Status == StatusRunning && r.ID == x.ID && r.Attempt == x.Attempt &&
		r.Instance == x.Instance && r.Started.Equal(x.Started) && r.Error == x.Error
}

// startedAt is when r's run started, or, for one given back before its
// start, when it ended.
func startedAt(r Record) time.Time {
	if r.Started.IsZero() {
		return r.Ended
	}
	return r.Started
}

// trimRuns sorts runs newest interval first and keeps what an index
// holds: the newest indexNewest intervals, and those whose run started
// within indexWindow of the newest start, at most indexCap in all.
func trimRuns(runs []Record) []Record {
	slices.SortStableFunc(runs, func(a, b Record) int { return cmp.Compare(b.Interval, a.Interval) })
	var newest time.Time
	for _, r := range runs {
		if t := startedAt(r); t.After(newest) {
			newest = t
		}
	}
	since := newest.Add(-indexWindow)
	out := runs[:0]
	for i, r := range runs {
		if len(out) == indexCap {
			break
		}
		if t := startedAt(r); i < indexNewest || !t.IsZero() && !t.Before(since) {
			out = append(out, r)
		}
	}
	return slices.Clip(out)
}

// rebuildIndexes is serve's part in the run index, from its start until
// ctx ends (shutdown). It batches the index updates of serve's runs (see
// index_batch.go) and rebuilds every job's index, serveRebuilds at once:
// a crash between a record's write and its index's, or while updates
// waited for the batch writer, left it stale. At shutdown, before serve
// waits for its running runs, it writes the updates still waiting and
// stops the batch writer: the runs' last records are written each with
// its index update, and nothing waits once Serve returns.
func (s *Server) rebuildIndexes(ctx context.Context) {
	h := s.Runner.History
	h.logIndexTo(s.Runner.log())
	h.batchIndex(indexDelay)
	s.rebuildAll(ctx)
	<-ctx.Done()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), indexCloseTimeout)
	defer cancel()
	_ = h.Close(cctx) // each job not written is logged; the next start rebuilds it
}

// rebuildAll rebuilds every job's index, serveRebuilds at once.
func (s *Server) rebuildAll(ctx context.Context) {
	r := s.Runner
	began := time.Now()
	var failed sync.Map
	g := errgroup.Group{}
	g.SetLimit(serveRebuilds)
	for _, job := range r.Pipeline.Order {
		g.Go(func() error {
			if _, err := r.History.RebuildIndex(ctx, job); err != nil && ctx.Err() == nil {
				failed.Store(job, true)
				r.log().Warn("rebuild run index", "job", job, "error", err)
			}
			return nil
		})
	}
	_ = g.Wait()
	n := 0
	failed.Range(func(any, any) bool { n++; return true })
	if ctx.Err() != nil {
		return
	}
	r.log().Info("run indexes rebuilt", "jobs", len(r.Pipeline.Order)-n, "failed", n, "seconds", time.Since(began).Seconds())
}
