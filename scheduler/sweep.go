package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// How far back the upstream sweep looks: the intervals of a job with
// after: that ended in the last sweepWindow, at most sweepIntervals of
// them, newest first.
const (
	sweepWindow    = 24 * time.Hour
	sweepIntervals = 200
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

// sweep finds the intervals of jobs with after: whose upstreams all
// succeeded but which have no run record, and runs them. The upstreams'
// instance runs such an interval right after them; one that died between
// leaves it to no one, since a job with after: has no trigger of its
// own. Two instances that both find it run it once: the claim decides.
func (s *Server) sweep(ctx context.Context) {
	r := s.Runner
	now := r.clock().Now()
	for _, name := range r.Pipeline.Order {
		job := r.Pipeline.Jobs[name]
		if len(job.After) == 0 {
			continue
		}
		iv := job.Schedule.Latest(now)
		for n := 0; n < sweepIntervals && !iv.Start.IsZero() && iv.End.After(now.Add(-sweepWindow)); n++ {
			if ctx.Err() != nil {
				return
			}
			if s.pending(ctx, job, iv) {
				r.log().Info("upstreams succeeded, no run yet: running", "job", job.Name, "interval", iv.String())
				s.dispatch(job, dispatch{iv: iv, trigger: "upstream"})
			}
			iv = job.Schedule.IntervalEnding(iv.Start)
		}
	}
}

// pending tells whether job's interval iv has no record while every
// upstream's run of it succeeded.
func (s *Server) pending(ctx context.Context, job *Job, iv Interval) bool {
	h := s.Runner.History
	if _, _, err := h.Get(ctx, job.Name, iv.Key()); !errors.Is(err, cloud.ErrNotFound) {
		if err != nil {
			s.Runner.log().Warn("upstream sweep: read run record", "job", job.Name, "interval", iv.String(), "error", err)
		}
		return false
	}
	for _, up := range job.After {
		rec, _, err := h.Get(ctx, up, iv.Key())
		if err != nil || rec.Status != StatusSucceeded {
			return false
		}
	}
	return true
}
