package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// DefaultGrace is how long shutdown waits for running runs before it
// cancels them.
const DefaultGrace = 30 * time.Second

// claimAhead is how long before a tick serve claims the tick's interval
// (at most half the interval): the claim's record write, which on a
// local lake is a file created and synced, then happens while the job
// waits, and the job's work starts at the tick. A job still running then
// claims at the tick instead.
const claimAhead = time.Second

// maxSkippedRecords bounds how many missed intervals one start records
// as skipped: a job down for a year on @every 1s would otherwise write
// millions.
const maxSkippedRecords = 1000

// Server is the long-running scheduler: a trigger per job that has its
// own schedule (jobs after another run in its cascade), overlap, catch-up
// after downtime, lease takeover of intervals another instance left, and
// a graceful shutdown.
type Server struct {
	Runner *Runner
	// Grace: DefaultGrace when zero.
	Grace time.Duration
	// OnDispatch, when set, is called after each dispatched interval has
	// been handled (run, found done, skipped or queued): tests and
	// metrics hang here.
	OnDispatch func(job string, iv Interval, outs []Outcome, err error)

	mu     sync.Mutex
	idle   *sync.Cond // on mu: a job's state stopped running
	ready  chan struct{}
	jobs   map[string]*jobState
	runs   sync.WaitGroup
	runCx  context.Context // the runs': outlives a shutdown by the grace
	stopCx context.Context // Serve's: ends at shutdown
	finals finals          // run records known final (see sweep)
}

type jobState struct {
	running bool
	queue   []dispatch
}

type dispatch struct {
	iv      Interval
	trigger string
	rerun   bool
	// notBefore: claimed ahead, the work starts then (RunOptions.NotBefore).
	notBefore time.Time
}

// stopping tells whether Serve is shutting down (or not running).
func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopCx == nil || s.stopCx.Err() != nil
}

// Serve runs until ctx ends, then stops starting runs, waits up to the
// grace period for running ones and cancels the rest (recorded
// cancelled, so the next start runs their intervals again).
func (s *Server) Serve(ctx context.Context) error {
	r := s.Runner
	runCtx, cancelRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelRuns(nil)
	s.mu.Lock()
	s.jobs, s.runCx, s.stopCx = map[string]*jobState{}, runCtx, ctx
	r.noteFinal = s.finals.note
	s.idle = sync.NewCond(&s.mu)
	ready := s.readyChan()
	s.mu.Unlock()
	var triggers, caughtUp sync.WaitGroup
	// A crash between a record's write and its index's left the index
	// stale: rebuild every job's, beside the start's other work.
	triggers.Add(1)
	go func() {
		defer triggers.Done()
		s.rebuildIndexes(ctx)
	}()
	for _, name := range r.Pipeline.Order {
		job := r.Pipeline.Jobs[name]
		if len(job.After) > 0 {
			continue
		}
		s.mu.Lock()
		s.jobs[name] = &jobState{}
		s.mu.Unlock()
		triggers.Add(1)
		caughtUp.Add(1)
		go func() {
			defer triggers.Done()
			s.trigger(ctx, job, caughtUp.Done)
		}()
	}
	triggers.Add(1)
	go func() {
		defer triggers.Done()
		caughtUp.Wait()
		s.sweepLoop(ctx, func() { close(ready) })
	}()
	triggers.Wait()
	r.log().Info("shutting down: waiting for running runs", "grace", s.grace().String(), "running", len(r.Running()))
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	stop := r.clock().AfterFunc(s.grace(), func() { cancelRuns(fmt.Errorf("shutdown: %w", ErrCancelled)) })
	<-done
	stop()
	return nil
}

func (s *Server) grace() time.Duration {
	if s.Grace <= 0 {
		return DefaultGrace
	}
	return s.Grace
}

// Ready is closed once every job's catch-up has run and the first
// upstream sweep has dispatched what it found (see sweep).
func (s *Server) Ready() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyChan()
}

func (s *Server) readyChan() chan struct{} {
	if s.ready == nil {
		s.ready = make(chan struct{})
	}
	return s.ready
}

// trigger is one job's loop: catch up (and call caughtUp once its runs
// are done), then each tick.
func (s *Server) trigger(ctx context.Context, job *Job, caughtUp func()) {
	r := s.Runner
	now := r.clock().Now()
	for _, d := range s.missed(ctx, job, now) {
		s.dispatch(job, d)
	}
	stopWake := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.idle.Broadcast()
		s.mu.Unlock()
	})
	s.mu.Lock()
	for st := s.jobs[job.Name]; st.running && ctx.Err() == nil; {
		s.idle.Wait()
	}
	s.mu.Unlock()
	stopWake()
	caughtUp()
	next := job.Schedule.Next(now)
	for !next.IsZero() {
		iv := job.Schedule.IntervalEnding(next)
		ahead := min(claimAhead, iv.End.Sub(iv.Start)/2)
		if err := sleepUntil(ctx, r.clock(), next.Add(-ahead)); err != nil {
			return
		}
		if !s.dispatchAhead(job, dispatch{iv: iv, trigger: "schedule", notBefore: next}) {
			if err := sleepUntil(ctx, r.clock(), next); err != nil {
				return
			}
			s.dispatch(job, dispatch{iv: iv, trigger: "schedule"})
		}
		next = job.Schedule.Next(next)
	}
}

// dispatchAhead starts a run that claims d's interval now and starts its
// work at d.notBefore, if the job runs nothing now; else it reports
// false, and the tick is dispatched when it comes.
func (s *Server) dispatchAhead(job *Job, d dispatch) bool {
	s.mu.Lock()
	st := s.jobs[job.Name]
	if st.running || s.stopCx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	st.running = true
	s.runs.Add(1)
	s.mu.Unlock()
	go s.run(job, st, d)
	return true
}

// missed returns the intervals to run at start: those that ended since
// the job's last recorded interval, at most Catchup of them (the
// latest, oldest first). The older ones are recorded skipped.
func (s *Server) missed(ctx context.Context, job *Job, now time.Time) []dispatch {
	r := s.Runner
	latest := job.Schedule.Latest(now)
	if latest.Start.IsZero() {
		return nil
	}
	last, err := r.History.List(ctx, job.Name)
	if err != nil {
		r.log().Error("catch-up: read history", "job", job.Name, "error", err) // unreadable records are skipped, the rest read
	}
	// Another instance that holds a live lease on one of the job's runs
	// serves the job: nothing was missed while no instance ran, and the
	// older intervals it has not claimed yet are its to run, not this
	// one's to skip.
	servedElsewhere := false
	for _, rec := range last {
		if rec.Status == StatusRunning && rec.Instance != r.Instance && now.Before(rec.LeaseUntil) {
			servedElsewhere = true
		}
	}
	// A cancelled run (a shutdown's) does not count: its interval runs
	// again. Nor does one still running: its instance may be gone, and
	// looking at it again takes it over once its lease ends.
	var lastEnd time.Time
	for i := len(last) - 1; i >= 0; i-- {
		if st := last[i].Status; st != StatusCancelled && st != StatusRunning {
			lastEnd = last[i].End
			break
		}
	}
	var ivs []Interval // newest first
	for iv := latest; !iv.Start.IsZero() && iv.End.After(lastEnd) && len(ivs) < job.Catchup+maxSkippedRecords; iv = job.Schedule.IntervalEnding(iv.Start) {
		ivs = append(ivs, iv)
		if lastEnd.IsZero() && len(ivs) >= job.Catchup {
			break // never ran: only the catch-up window
		}
	}
	var out []dispatch
	for i := len(ivs) - 1; i >= 0; i-- {
		if i >= job.Catchup {
			if !servedElsewhere {
				s.skip(ctx, job, ivs[i], "missed while no instance ran; older than catchup allows")
			}
			continue
		}
		out = append(out, dispatch{iv: ivs[i], trigger: "catchup"})
	}
	return out
}

// skip records iv skipped, unless it has a record already.
func (s *Server) skip(ctx context.Context, job *Job, iv Interval, why string) {
	r := s.Runner
	now := r.clock().Now()
	rec := Record{Job: job.Name, Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "skipped-" + iv.Key(),
		Instance: r.Instance, Status: StatusSkipped, Error: why, Started: now, Ended: now}
	etag, err := r.History.put(ctx, rec, cloud.PutOptions{IfAbsent: true})
	switch {
	case errors.Is(err, cloud.ErrPreconditionFailed):
		return // it has a record: not skipped by this instance
	case err != nil:
		r.log().Error("record skipped interval", "job", job.Name, "interval", iv.String(), "error", err)
		return
	}
	r.log().Info("interval skipped", "job", job.Name, "interval", iv.String(), "reason", why)
	r.finished(rec, etag)
}

// dispatch starts a run of job's interval, or skips or queues it when the
// job's previous run still runs.
func (s *Server) dispatch(job *Job, d dispatch) {
	s.mu.Lock()
	st := s.jobs[job.Name]
	if st == nil {
		st = &jobState{}
		s.jobs[job.Name] = st
	}
	if st.running {
		// Catch-up intervals run one after another, whatever overlap
		// says; so does an interval taken over from a dead instance (its
		// record says running: a skip could not be recorded, and the
		// interval would be lost) or one whose upstreams' instance died
		// before it ran it (see sweep).
		if job.Overlap == OverlapQueue || d.trigger == "catchup" || d.trigger == "takeover" || d.trigger == "upstream" {
			st.queue = append(st.queue, d)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.skip(s.runCx, job, d.iv, "the previous run was still running (overlap: skip)")
		s.notify(job.Name, d.iv, nil, nil)
		return
	}
	st.running = true
	s.runs.Add(1)
	s.mu.Unlock()
	go s.run(job, st, d)
}

func (s *Server) notify(job string, iv Interval, outs []Outcome, err error) {
	if s.OnDispatch != nil {
		s.OnDispatch(job, iv, outs, err)
	}
}

// run runs d and then the job's queued intervals, one at a time.
func (s *Server) run(job *Job, st *jobState, d dispatch) {
	defer s.runs.Done()
	r := s.Runner
	for {
		outs, err := r.Run(s.runCx, job, d.iv, RunOptions{Trigger: d.trigger, Rerun: d.rerun, NotBefore: d.notBefore, Hold: s.stopCx})
		if err != nil && !errors.Is(err, ErrUpstreamPending) {
			r.log().Warn("run did not succeed", "job", job.Name, "interval", d.iv.String(), "error", err)
		}
		if len(outs) > 0 && !outs[0].Ran && outs[0].Record.Status == StatusRunning {
			s.takeoverLater(job, d.iv)
		}
		s.mu.Lock()
		if len(st.queue) == 0 || s.stopCx.Err() != nil {
			st.running = false
			s.idle.Broadcast()
			s.mu.Unlock()
			s.notify(job.Name, d.iv, outs, err)
			return
		}
		prev := d
		d, st.queue = st.queue[0], st.queue[1:]
		s.mu.Unlock()
		s.notify(job.Name, prev.iv, outs, err)
	}
}

// takeoverLater looks at an interval another instance runs again once its
// lease would have ended, judged on this instance's clock from when it
// first saw the record's current generation: done by then, or renewed,
// it is left alone (or looked at again); else this instance takes it
// over.
func (s *Server) takeoverLater(job *Job, iv Interval) {
	r := s.Runner
	rec, etag, err := r.History.Get(s.stopCx, job.Name, iv.Key())
	if err != nil || rec.Status != StatusRunning {
		return
	}
	_, until := r.History.leaseExpired(rec, etag, r.clock().Now(), r.ttl())
	s.lookAt(job, iv, until)
}

// lookAt calls lookAgain at until, unless the server stops first.
func (s *Server) lookAt(job *Job, iv Interval, until time.Time) {
	r := s.Runner
	s.runs.Add(1)
	stop := r.clock().AfterFunc(until.Sub(r.clock().Now()), func() {
		s.runs.Add(1) // for the look, before this timer's Done
		go func() {
			defer s.runs.Done()
			s.lookAgain(job, iv)
		}()
		s.runs.Done()
	})
	context.AfterFunc(s.stopCx, func() {
		if stop() {
			s.runs.Done()
		}
	})
}

func (s *Server) lookAgain(job *Job, iv Interval) {
	if s.stopCx.Err() != nil {
		return
	}
	r := s.Runner
	rec, etag, err := r.History.Get(s.stopCx, job.Name, iv.Key())
	if err != nil {
		r.log().Warn("takeover: read run record", "job", job.Name, "interval", iv.String(), "error", err)
		return
	}
	if rec.Status != StatusRunning {
		r.History.forget(job.Name, iv.Key())
		return
	}
	if expired, until := r.History.leaseExpired(rec, etag, r.clock().Now(), r.ttl()); !expired {
		s.lookAt(job, iv, until) // renewed: its instance lives
		return
	}
	s.dispatch(job, dispatch{iv: iv, trigger: "takeover"}) // unchanged for a lease: the instance died
}
