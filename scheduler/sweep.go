package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// How far back the sweep looks: the intervals of every job that ended in
// the last sweepWindow, at most sweepIntervals of them a job, newest
// first. A run record the sweep read once and found final is not read
// again while its ETag is unchanged (a --rerun changes it), so a sweep
// costs one listing a job and a day (an hour for a job run more than
// every minute or so), plus one read of each record written
// since the last sweep by another instance.
const (
	sweepWindow    = 24 * time.Hour
	sweepIntervals = 5000
	denseIntervals = 1000
)

// sweepLoop runs sweep now and then every lease TTL until ctx ends;
// first is called after the first sweep dispatched what it found. The
// next sweep is due a TTL after this one began, not after it ended: a
// slow sweep does not stretch the period, and a clock that moves while
// it runs (a fake one in tests) is not missed.
func (s *Server) sweepLoop(ctx context.Context, first func()) {
	r := s.Runner
	next := r.clock().Now().Add(r.ttl())
	s.sweep(ctx)
	first()
	for sleepUntil(ctx, r.clock(), next) == nil {
		next = r.clock().Now().Add(r.ttl())
		s.sweep(ctx)
	}
}

// sweep finds the intervals no instance will run unless this one does,
// and runs them: those of a job with after: whose upstreams all succeeded
// but which have no run record (the upstreams' instance runs such an
// interval right after them; one that died between leaves it to no one,
// since a job with after: has no trigger of its own), and those whose run
// record is still running with its lease expired (its instance died; an
// instance takes over only what it saw running itself, so one started
// after the death would leave it forever, however long ago the dead run
// started). Two instances that both find an interval run it once: the
// claim decides.
func (s *Server) sweep(ctx context.Context) {
	r := s.Runner
	now := r.clock().Now()
	s.finals.prune(now.Add(-sweepWindow))
	listed := map[string]map[string]string{} // job → interval key → ETag
	list := func(job *Job, ivs []Interval) map[string]string {
		if l, ok := listed[job.Name]; ok {
			return l
		}
		l, err := r.History.keys(ctx, job.Name, keyPrefixes(ivs))
		if err != nil {
			r.log().Warn("sweep: list run records", "job", job.Name, "error", err)
			l = nil
		}
		listed[job.Name] = l
		return l
	}
	for _, name := range r.Pipeline.Order {
		job := r.Pipeline.Jobs[name]
		ivs := sweepIntervalsOf(job, now)
		have := list(job, ivs)
		if have == nil {
			continue
		}
		for _, iv := range ivs {
			if ctx.Err() != nil {
				return
			}
			etag, ok := have[iv.Key()]
			switch {
			case !ok:
				if len(job.After) > 0 && s.upstreamsSucceeded(ctx, job, iv, list, ivs) {
					r.log().Info("upstreams succeeded, no run yet: running", "job", job.Name, "interval", iv.String())
					s.dispatch(job, dispatch{iv: iv, trigger: "upstream"})
				}
			default:
				rec, etag, ok := s.known(ctx, job.Name, iv, etag)
				if !ok || rec.Status != StatusRunning {
					continue
				}
				if expired, _ := r.History.leaseExpired(rec, etag, now, r.ttl()); expired {
					r.log().Info("run left with its lease expired: taking over", "job", job.Name, "interval", iv.String(), "instance", rec.Instance)
					s.dispatch(job, dispatch{iv: iv, trigger: "takeover"})
				}
			}
		}
	}
}

// sweepIntervalsOf returns the intervals of job the sweep looks at,
// newest first.
func sweepIntervalsOf(job *Job, now time.Time) []Interval {
	var ivs []Interval
	iv := job.Schedule.Latest(now)
	for len(ivs) < sweepIntervals && !iv.Start.IsZero() && iv.End.After(now.Add(-sweepWindow)) {
		ivs = append(ivs, iv)
		iv = job.Schedule.IntervalEnding(iv.Start)
	}
	return ivs
}

// keyPrefixes returns the distinct key prefixes that cover ivs: their
// days, or for a dense job (more than denseIntervals of them) their hours,
// so that listing them costs about as many keys as ivs has.
func keyPrefixes(ivs []Interval) []string {
	n := len("20060102")
	if len(ivs) > denseIntervals {
		n = len("20060102T15")
	}
	var out []string
	for _, iv := range ivs {
		p := iv.Key()[:n]
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// known returns job's record of iv and its etag: only its status when
// the record is known final with the listed etag, else as read (and
// remembered when final); ok false when it could not be read.
func (s *Server) known(ctx context.Context, job string, iv Interval, listed string) (rec Record, etag string, ok bool) {
	if st, ok := s.finals.status(job, iv.Key(), listed); ok {
		return Record{Job: job, Interval: iv.Key(), Status: st}, listed, true
	}
	rec, etag, err := s.Runner.History.Get(ctx, job, iv.Key())
	if err != nil {
		if !errors.Is(err, cloud.ErrNotFound) {
			s.Runner.log().Warn("sweep: read run record", "job", job, "interval", iv.String(), "error", err)
		}
		return Record{}, "", false
	}
	s.finals.note(rec, etag)
	return rec, etag, true
}

// upstreamsSucceeded tells whether every upstream's run of iv succeeded.
func (s *Server) upstreamsSucceeded(ctx context.Context, job *Job, iv Interval, list func(*Job, []Interval) map[string]string, ivs []Interval) bool {
	for _, up := range job.After {
		etag, ok := list(s.Runner.Pipeline.Jobs[up], ivs)[iv.Key()]
		if !ok {
			return false
		}
		if rec, _, ok := s.known(ctx, up, iv, etag); !ok || rec.Status != StatusSucceeded {
			return false
		}
	}
	return true
}

// finals remembers the run records known to be final (not running), by
// job and interval, with the ETag they were read or written with.
type finals struct {
	mu sync.Mutex
	m  map[string]final
}

type final struct {
	etag   string
	status Status
	end    time.Time
}

// note remembers rec if it is final.
func (f *finals) note(rec Record, etag string) {
	if rec.Status == StatusRunning || etag == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]final{}
	}
	f.m[rec.Job+"/"+rec.Interval] = final{etag: etag, status: rec.Status, end: rec.End}
}

// status returns the final status of job's interval if its record is
// known and still has etag.
func (f *finals) status(job, interval, etag string) (Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.m[job+"/"+interval]
	if !ok || x.etag != etag {
		return "", false
	}
	return x.status, true
}

// prune forgets records of intervals that ended before t.
func (f *finals) prune(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, x := range f.m {
		if x.end.Before(t) {
			delete(f.m, k)
		}
	}
}

// keys returns the interval keys of job's run records that begin with
// one of prefixes, with their ETags.
func (h *History) keys(ctx context.Context, job string, prefixes []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range prefixes {
		if err := h.eachKey(ctx, runsPrefix+job+"/"+p, func(_, iv string, o cloud.ObjectInfo) { out[iv] = o.ETag }); err != nil {
			return nil, err
		}
	}
	return out, nil
}
