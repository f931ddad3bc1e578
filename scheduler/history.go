package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/lease"
)

// Status is a run's state in its record.
type Status string

// The run statuses. Running holds a lease; the others are final, and all
// but Succeeded leave the interval to be claimed again.
const (
	StatusRunning        Status = "running"
	StatusSucceeded      Status = "succeeded"
	StatusFailed         Status = "failed"
	StatusCancelled      Status = "cancelled"
	StatusUpstreamFailed Status = "upstream_failed"
	StatusSkipped        Status = "skipped"
)

// runsPrefix is where run records live under the lake.
const runsPrefix = "_sluice/runs/"

// Record is one interval's run record, at <lake>/_sluice/runs/<job>/<interval>.
// The create-only write of it is the run's claim; its lease is renewed by
// heartbeat while the run runs.
type Record struct {
	Job      string `json:"job"`
	Interval string `json:"interval"`
	// Start and End are the data interval, [Start, End).
	Start time.Time `json:"interval_start"`
	End   time.Time `json:"interval_end"`
	// ID identifies the latest attempt (the admin API cancels by it).
	ID       string    `json:"id"`
	Attempt  int       `json:"attempt"`
	Instance string    `json:"instance"`
	Status   Status    `json:"status"`
	Error    string    `json:"error,omitempty"`
	Trigger  string    `json:"trigger,omitempty"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	// LeaseUntil is when the holder's lease ends by the holder's own
	// clock: for people reading the record. Another instance never
	// compares it with its own clock, which may be skewed: it takes a
	// running interval over only once it has seen the record unchanged
	// for a full lease (see History.leaseExpired).
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// LeaseSeconds is the holder's lease TTL: it renews the record at
	// least every third of it while it runs.
	LeaseSeconds float64 `json:"lease_ttl_seconds,omitempty"`
	// ErrorClass says whether a failed run's error was transient
	// (retried, and worth running again) or permanent (retrying changes
	// nothing: bad options, bad input, a verification failure).
	ErrorClass string `json:"error_class,omitempty"`
	// Summary is the job's result as its kind reported it, in JSON.
	Summary json.RawMessage `json:"summary,omitempty"`
	// Note says what a succeeded record went through since its success:
	// a rerun that was cancelled leaves the success standing, and this.
	Note string `json:"note,omitempty"`
}

func recordKey(job, interval string) string { return runsPrefix + job + "/" + interval }

// History reads and writes run records in a lake's store.
type History struct {
	Store cloud.Store

	// judge remembers, per running record, the generation (ETag) this
	// process last saw and when, on its own clock, it first saw it: the
	// only clock a lease's expiry is judged by.
	judge lease.Judge

	// The run index's writers in this process (see index.go): the
	// logger their failures go to (serve's; none elsewhere) and a lock
	// per job; on indexMu, the updates waiting for the batch writer, by
	// job, and that writer, nil when each update is written with its
	// record (see index_batch.go).
	indexLog   atomic.Pointer[slog.Logger]
	indexMu    sync.Mutex
	indexLocks map[string]*sync.Mutex
	pending    map[string]*pendingIndex
	batcher    *indexBatcher
}

// leaseExpired tells whether the running record rec, read with etag at
// now (this process's clock), has outlived its lease: whether this
// process has seen that same generation unchanged for a full lease, the
// longer of ttl and the holder's own. A holder renews its record every
// third of its lease, so an unchanged record means a dead holder,
// whatever either clock says; lease_until, written on the holder's
// clock, is not read. until is when the lease ends if the record stays
// unchanged.
func (h *History) leaseExpired(rec Record, etag string, now time.Time, ttl time.Duration) (expired bool, until time.Time) {
	ttl = max(ttl, time.Duration(rec.LeaseSeconds*float64(time.Second)))
	return h.judge.Expired(recordKey(rec.Job, rec.Interval), etag, now, ttl)
}

// sighted returns the generation of job's interval this process last
// saw running ("" when none).
func (h *History) sighted(job, interval string) string {
	return h.judge.Sighted(recordKey(job, interval))
}

// forget drops the sighting of job's interval: it was claimed, or seen
// final.
func (h *History) forget(job, interval string) {
	h.judge.Forget(recordKey(job, interval))
}

// Get returns the record of job's interval and its ETag; ErrNotFound
// (cloud's) when the interval never ran.
func (h *History) Get(ctx context.Context, job, interval string) (Record, string, error) {
	rc, info, err := h.Store.Get(ctx, recordKey(job, interval))
	if err != nil {
		return Record{}, "", fmt.Errorf("read run record %s/%s: %w", job, interval, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return Record{}, "", fmt.Errorf("read run record %s/%s: %w", job, interval, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, "", fmt.Errorf("run record %s: %w: %w", h.Store.URL(recordKey(job, interval)), ErrUnreadableRecord, err)
	}
	return r, info.ETag, nil
}

// List returns the records of job (every job when empty), by job then
// interval. A record it cannot decode does not hide the others: they are
// returned with an error wrapping ErrUnreadableRecord for each such
// record, naming it; any other error returns no records.
func (h *History) List(ctx context.Context, job string) ([]Record, error) {
	prefix := runsPrefix
	if job != "" {
		prefix += job + "/"
	}
	type key struct{ job, iv string }
	var keys []key
	if err := h.eachKey(ctx, prefix, func(job, iv string, _ cloud.ObjectInfo) {
		keys = append(keys, key{job, iv})
	}); err != nil {
		return nil, err
	}
	var out []Record
	var unreadable []error
	for _, k := range keys {
		r, _, err := h.Get(ctx, k.job, k.iv)
		if errors.Is(err, cloud.ErrNotFound) {
			continue
		}
		if errors.Is(err, ErrUnreadableRecord) {
			unreadable = append(unreadable, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := strings.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		return strings.Compare(a.Interval, b.Interval)
	})
	return out, errors.Join(unreadable...)
}

func (h *History) put(ctx context.Context, r Record, opts cloud.PutOptions) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode run record: %w", err)
	}
	info, err := h.Store.Put(ctx, recordKey(r.Job, r.Interval), bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		return "", fmt.Errorf("write run record %s/%s: %w", r.Job, r.Interval, err)
	}
	h.indexRecord(ctx, r) // never fails the write: see index.go
	return info.ETag, nil
}

// claimable tells whether an interval with the final record r may be
// claimed (a running one is claimable only once its lease expired, which
// History.leaseExpired judges).
func claimable(r Record, rerun bool) bool {
	switch r.Status {
	case StatusRunning:
		return false
	case StatusSucceeded:
		return rerun
	}
	return true
}

// claim is a held run record: every write is a compare-and-swap on the
// ETag of the last one, so a takeover by another instance shows as
// ErrLeaseLost instead of two writers.
type claim struct {
	h    *History
	mu   sync.Mutex
	rec  Record
	etag string
	lost bool
	// prev is the final record the claim replaced (a rerun's success, a
	// failure's), nil for a new interval or a taken-over one.
	prev *Record
}

// Claim writes rec (status running) as the interval's record: create-only
// when there is none, else a compare-and-swap over a record that may be
// claimed (a final status other than succeeded, succeeded with rerun, or
// a running one whose lease this process saw expire: see leaseExpired,
// with ttl this runner's lease). It returns nil and the existing record
// when another run has the interval or it is done.
func (h *History) claim(ctx context.Context, rec Record, now time.Time, ttl time.Duration, rerun bool) (*claim, *Record, error) {
	// Most claims are of a new interval: try the create first, and read
	// only when the record exists.
	if rec.Attempt == 0 {
		rec.Attempt = 1
	}
	etag, err := h.put(ctx, rec, cloud.PutOptions{IfAbsent: true})
	if err == nil {
		return &claim{h: h, rec: rec, etag: etag}, nil, nil
	}
	if !errors.Is(err, cloud.ErrPreconditionFailed) {
		return nil, nil, err
	}
	for range 3 {
		old, etag, err := h.Get(ctx, rec.Job, rec.Interval)
		opts := cloud.PutOptions{IfAbsent: true}
		var prev *Record
		switch {
		case errors.Is(err, cloud.ErrNotFound):
		case err != nil:
			return nil, nil, err
		case old.Status == StatusRunning:
			if expired, _ := h.leaseExpired(old, etag, now, ttl); !expired {
				return nil, &old, nil
			}
			opts = cloud.PutOptions{IfMatch: etag}
			rec.Attempt = old.Attempt + 1
		case !claimable(old, rerun):
			return nil, &old, nil
		default:
			opts = cloud.PutOptions{IfMatch: etag}
			rec.Attempt = old.Attempt + 1
			prev = &old
		}
		if rec.Attempt == 0 {
			rec.Attempt = 1
		}
		newTag, err := h.put(ctx, rec, opts)
		if errors.Is(err, cloud.ErrPreconditionFailed) {
			continue // another instance wrote first: look again
		}
		if err != nil {
			return nil, nil, err
		}
		h.forget(rec.Job, rec.Interval)
		return &claim{h: h, rec: rec, etag: newTag, prev: prev}, nil, nil
	}
	old, _, err := h.Get(ctx, rec.Job, rec.Interval)
	if err != nil {
		return nil, nil, err
	}
	return nil, &old, nil
}

// update changes the held record with f and writes it back, failing with
// ErrLeaseLost when another instance took it over.
func (c *claim) update(ctx context.Context, f func(*Record)) (Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost {
		return c.rec, ErrLeaseLost
	}
	next := c.rec
	f(&next)
	etag, err := c.h.put(ctx, next, cloud.PutOptions{IfMatch: c.etag})
	if errors.Is(err, cloud.ErrPreconditionFailed) {
		c.lost = true
		return c.rec, fmt.Errorf("run %s/%s: %w", c.rec.Job, c.rec.Interval, ErrLeaseLost)
	}
	if err != nil {
		return c.rec, err
	}
	c.rec, c.etag = next, etag
	return next, nil
}

// eachKey calls fn with the job and interval of every run record whose
// key starts with prefix (under runsPrefix).
func (h *History) eachKey(ctx context.Context, prefix string, fn func(job, iv string, o cloud.ObjectInfo)) error {
	err := h.Store.List(ctx, prefix, func(o cloud.ObjectInfo) error {
		if job, iv, ok := strings.Cut(strings.TrimPrefix(o.Key, runsPrefix), "/"); ok && !strings.Contains(iv, "/") {
			fn(job, iv, o)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list run records: %w", err)
	}
	return nil
}

// tag returns the ETag of the held record's last write.
func (c *claim) tag() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etag
}

func (c *claim) record() Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec
}
