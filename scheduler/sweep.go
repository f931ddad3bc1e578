package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// How far back the sweep looks: for a job with after:, the intervals that
// ended in the last sweepWindow, at most sweepIntervals of them, newest
// first; for every other job its last sweepRecent intervals, where a run
// an instance left when it died is found (older ones were looked at by
// earlier sweeps).
const (
	sweepWindow    = 24 * time.Hour
	sweepIntervals = 200
	sweepRecent    = 3
)

// sweepLoop runs sweep now and then every lease TTL until ctx ends;
// first is called after the first sweep dispatched what it found.
func (s *Server) sweepLoop(ctx context.Context, first func()) {
	r := s.Runner
	s.sweep(ctx)
	first()
	for Sleep(ctx, r.clock(), r.ttl()) == nil {
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
// after the death would leave it forever). Two instances that both find
// an interval run it once: the claim decides.
func (s *Server) sweep(ctx context.Context) {
	r := s.Runner
	now := r.clock().Now()
	for _, name := range r.Pipeline.Order {
		job := r.Pipeline.Jobs[name]
		limit := sweepRecent
		if len(job.After) > 0 {
			limit = sweepIntervals
		}
		iv := job.Schedule.Latest(now)
		for n := 0; n < limit && !iv.Start.IsZero() && iv.End.After(now.Add(-sweepWindow)); n++ {
			if ctx.Err() != nil {
				return
			}
			s.sweepOne(ctx, job, iv, now)
			iv = job.Schedule.IntervalEnding(iv.Start)
		}
	}
}

// sweepOne runs job's interval iv if no instance will (see sweep).
func (s *Server) sweepOne(ctx context.Context, job *Job, iv Interval, now time.Time) {
	r := s.Runner
	rec, _, err := r.History.Get(ctx, job.Name, iv.Key())
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		if len(job.After) > 0 && s.upstreamsSucceeded(ctx, job, iv) {
			r.log().Info("upstreams succeeded, no run yet: running", "job", job.Name, "interval", iv.String())
			s.dispatch(job, dispatch{iv: iv, trigger: "upstream"})
		}
	case err != nil:
		r.log().Warn("sweep: read run record", "job", job.Name, "interval", iv.String(), "error", err)
	case rec.Status == StatusRunning && now.After(rec.LeaseUntil):
		r.log().Info("run left with its lease expired: taking over", "job", job.Name, "interval", iv.String(), "instance", rec.Instance)
		s.dispatch(job, dispatch{iv: iv, trigger: "takeover"})
	}
}

// upstreamsSucceeded tells whether every upstream's run of iv succeeded.
func (s *Server) upstreamsSucceeded(ctx context.Context, job *Job, iv Interval) bool {
	for _, up := range job.After {
		rec, _, err := s.Runner.History.Get(ctx, up, iv.Key())
		if err != nil || rec.Status != StatusSucceeded {
			return false
		}
	}
	return true
}
