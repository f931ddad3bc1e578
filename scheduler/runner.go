package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
)

type runIDKey struct{}

// RunID returns the ID of the run whose job ctx belongs to ("" outside
// one): a kind records it as the writer of what it commits.
func RunID(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

// DefaultLeaseTTL is how long a run's claim holds without a heartbeat.
const DefaultLeaseTTL = time.Minute

// Runner runs intervals of a pipeline's jobs, each exactly once per lake.
type Runner struct {
	Pipeline *Pipeline
	Kinds    map[string]Kind
	// History is the lake's run records.
	History *History
	// Clock: RealClock when nil.
	Clock Clock
	// Instance names this process in the records (host and pid, say).
	Instance string
	// LeaseTTL: DefaultLeaseTTL when zero. A heartbeat renews the lease
	// every third of it.
	LeaseTTL time.Duration
	// Logger: none when nil.
	Logger *slog.Logger
	// Jitter returns a number in [0, 1) for retry backoff; math/rand's
	// when nil.
	Jitter func() float64
	// OnFinish, when set, is called with every final record this runner
	// writes (metrics hang here).
	OnFinish func(Record)
	// noteFinal, when set, is called with every final record this runner
	// writes and its ETag (the sweep's memory of what is done).
	noteFinal func(Record, string)

	mu      sync.Mutex
	running map[string]*active // by record ID

	// held are the NotBefore of the runs holding a claim until their
	// start (see startsFirst); heldMoved is closed when one leaves.
	heldMu    sync.Mutex
	held      map[*time.Time]struct{}
	heldMoved chan struct{}
}

type active struct {
	rec    Record
	cancel context.CancelCauseFunc
}

// RunOptions says how to run an interval.
type RunOptions struct {
	// Rerun runs an interval that already succeeded.
	Rerun bool
	// Only runs the job alone; otherwise the jobs after it follow, for
	// the same interval, once their upstreams succeeded.
	Only bool
	// Trigger is recorded: schedule, run, backfill, api, catchup.
	Trigger string
	// NotBefore, when set, is when the job's work may start: the
	// interval is claimed at once and the run waits, holding the lease,
	// until then. serve claims each tick's interval a moment ahead so
	// that the claim's record write is not in the way of the work. The
	// jobs after it are not held.
	NotBefore time.Time
	// Hold, with NotBefore, ends the wait: a run whose Hold ends before
	// NotBefore gives its claim back, recorded cancelled, without running
	// the job (shutdown).
	Hold context.Context
	// AwaitLease makes a run that finds its interval running elsewhere
	// watch the record for up to a lease: a record that does not change
	// (its instance died) is taken over then; one renewed meanwhile is
	// left running elsewhere. For one-shot commands, which have no later
	// look of their own (serve looks again by itself).
	AwaitLease bool
}

// Outcome is what RunInterval did with one job's interval.
type Outcome struct {
	Record Record
	// Ran says this runner ran it (or recorded it upstream_failed); when
	// false, Record is the interval's existing record: done, or running
	// elsewhere.
	Ran bool
}

func (r *Runner) clock() Clock {
	if r.Clock == nil {
		return RealClock{}
	}
	return r.Clock
}

func (r *Runner) ttl() time.Duration {
	if r.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return r.LeaseTTL
}

func (r *Runner) log() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r.Logger
}

// Running returns the records of the runs this runner has going.
func (r *Runner) Running() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, a := range r.running {
		out = append(out, a.rec)
	}
	return out
}

// Cancel cancels the running run with this ID; it reports whether one was.
func (r *Runner) Cancel(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.running[id]
	if ok {
		a.cancel(ErrCancelled)
	}
	return ok
}

// Run runs job's interval iv and, unless o.Only, the jobs after it. It
// returns one Outcome per job it looked at. The error is the first run
// that did not succeed (or could not be claimed for a reason other than
// being done or running elsewhere).
func (r *Runner) Run(ctx context.Context, job *Job, iv Interval, o RunOptions) ([]Outcome, error) {
	out, err := r.RunInterval(ctx, job, iv, o)
	if err != nil && !out.Ran {
		return nil, err
	}
	outs := []Outcome{out}
	if o.Only || out.Record.Status != StatusSucceeded && out.Record.Status != StatusFailed &&
		out.Record.Status != StatusUpstreamFailed && out.Record.Status != StatusCancelled {
		return outs, err
	}
	if out.Record.Status == StatusCancelled && out.Record.Started.IsZero() {
		// Given back before its start (a shutdown while claimed ahead):
		// the interval has not run, and whoever runs it runs the jobs
		// after it then; recording them upstream_failed now would say
		// they failed.
		return outs, err
	}
	o.NotBefore, o.Hold = time.Time{}, nil
	for _, d := range r.Pipeline.Downstream(job.Name) {
		more, derr := r.Run(ctx, d, iv, o)
		if errors.Is(derr, ErrUpstreamPending) {
			continue // another upstream still runs; its own cascade runs d
		}
		outs = append(outs, more...)
		if err == nil {
			err = derr
		}
	}
	return outs, err
}

// upstream returns why job's run of iv cannot be done, and the status
// that records it: upstream_failed for the first upstream whose run of iv
// failed, else skipped when one was skipped (a skipped interval is not a
// failure, and neither is what follows from it). It returns
// ErrUpstreamPending when an upstream has not finished.
func (r *Runner) upstream(ctx context.Context, job *Job, iv Interval) (why string, status Status, err error) {
	for _, up := range job.After {
		rec, _, err := r.History.Get(ctx, up, iv.Key())
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			return "", "", fmt.Errorf("%s after %s, interval %s: %w", job.Name, up, iv, ErrUpstreamPending)
		case err != nil:
			return "", "", err
		case rec.Status == StatusRunning:
			return "", "", fmt.Errorf("%s after %s, interval %s: %w", job.Name, up, iv, ErrUpstreamPending)
		case rec.Status == StatusSkipped:
			if why == "" {
				why, status = fmt.Sprintf("upstream %s: skipped", up), StatusSkipped
			}
		case rec.Status != StatusSucceeded:
			return fmt.Sprintf("upstream %s: %s", up, rec.Status), StatusUpstreamFailed, nil
		}
	}
	return why, status, nil
}

// RunInterval claims job's interval iv and runs it, with retries, a
// timeout and a heartbeat on the claim's lease. A run that is done or
// running elsewhere is left alone (Outcome.Ran false, no error).
func (r *Runner) RunInterval(ctx context.Context, job *Job, iv Interval, o RunOptions) (Outcome, error) {
	failedUp, upStatus, err := r.upstream(ctx, job, iv)
	if err != nil {
		return Outcome{}, err
	}
	now := r.clock().Now()
	rec := Record{Job: job.Name, Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: uuid.NewString(),
		Instance: r.Instance, Status: StatusRunning, Trigger: o.Trigger, Started: later(now, o.NotBefore),
		LeaseUntil: now.Add(r.ttl()), LeaseSeconds: r.ttl().Seconds()}
	c, existing, err := r.History.claim(ctx, rec, now, r.ttl(), o.Rerun)
	if err != nil {
		return Outcome{}, err
	}
	if c == nil && o.AwaitLease && existing.Status == StatusRunning {
		if c, existing, err = r.awaitLease(ctx, rec, o); err != nil {
			return Outcome{}, err
		}
	}
	if c == nil {
		return Outcome{Record: *existing}, nil
	}
	log := r.log().With("job", job.Name, "run", rec.ID, "interval", iv.String())
	if failedUp != "" {
		final, err := c.update(ctx, func(x *Record) {
			x.Status, x.Error, x.Ended, x.LeaseUntil = upStatus, failedUp, r.clock().Now(), time.Time{}
		})
		r.finished(final, c.tag())
		if upStatus == StatusSkipped {
			log.Info("skipped: an upstream was", "reason", failedUp)
			return Outcome{Record: final, Ran: true}, err
		}
		log.Warn("upstream failed", "error", failedUp)
		return Outcome{Record: final, Ran: true}, errors.Join(err, fmt.Errorf("%s %s: %s", job.Name, iv, failedUp))
	}
	runCtx, cancel := context.WithCancelCause(context.WithValue(ctx, runIDKey{}, rec.ID))
	defer cancel(nil)
	r.track(c.record(), cancel, true)
	defer r.track(rec, nil, false)
	stopBeat := r.heartbeat(runCtx, c, cancel)
	var summary any
	var status Status
	started, runErr := r.hold(runCtx, o)
	if runErr != nil {
		status = StatusCancelled
		log.Info("shut down before the interval's start; claim given back")
	} else {
		summary, status, runErr = r.attempts(runCtx, c, job, iv, log)
	}
	stopBeat()
	if errors.Is(context.Cause(runCtx), ErrLeaseLost) {
		log.Error("lease lost; another instance runs the interval")
		return Outcome{Record: c.record(), Ran: true}, fmt.Errorf("%s %s: %w", job.Name, iv, ErrLeaseLost)
	}
	// The final write outlives a cancelled run: its record says so.
	r.startsFirst(ctx)
	final, err := c.update(context.WithoutCancel(ctx), func(x *Record) {
		if status == StatusCancelled && c.prev != nil && c.prev.Status == StatusSucceeded {
			// A cancelled rerun changed nothing a reader relies on: the
			// jobs commit atomically, and one that committed before the
			// cancel redid the same interval. The success stands;
			// recording cancelled would make the interval look undone.
			id, attempt := x.ID, x.Attempt
			*x = *c.prev
			x.ID, x.Attempt = id, attempt
			x.Note = fmt.Sprintf("rerun (attempt %d, instance %s) cancelled at %s: %s; the success of %s stands",
				attempt, r.Instance, r.clock().Now().UTC().Format(time.RFC3339), cloud.OneLine(fmt.Sprint(runErr), 500), c.prev.Ended.UTC().Format(time.RFC3339))
			return
		}
		x.Status, x.Summary, x.Ended, x.LeaseUntil = status, encodeSummary(summary, log), r.clock().Now(), time.Time{}
		x.Started, x.Error, x.ErrorClass, x.Note = started, "", "", ""
		if runErr != nil {
			x.Error, x.ErrorClass = cloud.OneLine(runErr.Error(), 2000), errorClass(runErr)
		}
	})
	if err != nil {
		return Outcome{Record: final, Ran: true}, err
	}
	log.Info("run finished", "status", status, "attempt", final.Attempt, "seconds", final.Ended.Sub(final.Started).Seconds())
	r.finished(final, c.tag())
	if runErr != nil {
		return Outcome{Record: final, Ran: true}, fmt.Errorf("%s %s: %w", job.Name, iv, runErr)
	}
	return Outcome{Record: final, Ran: true}, nil
}

// awaitLease watches rec's interval, which another instance holds, until
// its record changes (the holder lives: the interval is left to it) or
// stays unchanged for a full lease (the holder died: the interval is
// claimed). It polls every quarter lease, on this runner's clock.
func (r *Runner) awaitLease(ctx context.Context, rec Record, o RunOptions) (*claim, *Record, error) {
	seen := r.History.sighted(rec.Job, rec.Interval)
	for {
		if err := sleep(ctx, r.clock(), r.ttl()/4); err != nil {
			return nil, nil, err
		}
		now := r.clock().Now()
		rec.LeaseUntil = now.Add(r.ttl())
		c, existing, err := r.History.claim(ctx, rec, now, r.ttl(), o.Rerun)
		if err != nil || c != nil || existing.Status != StatusRunning || r.History.sighted(rec.Job, rec.Interval) != seen {
			return c, existing, err
		}
	}
}

// hold waits, holding the claim, until o.NotBefore (if set), and returns
// when the job's work starts; ErrCancelled when ctx or o.Hold ended first.
func (r *Runner) hold(ctx context.Context, o RunOptions) (time.Time, error) {
	if !o.NotBefore.IsZero() {
		hctx := ctx
		if o.Hold != nil {
			var stop context.CancelFunc
			hctx, stop = context.WithCancel(ctx)
			defer stop()
			defer context.AfterFunc(o.Hold, stop)()
		}
		leave := r.holdFor(o.NotBefore)
		err := sleepUntil(hctx, r.clock(), o.NotBefore)
		leave()
		if err != nil {
			return time.Time{}, fmt.Errorf("%w before the interval's start", ErrCancelled)
		}
	}
	return r.clock().Now(), nil
}

// holdFor registers a held run starting at t, until leave.
func (r *Runner) holdFor(t time.Time) (leave func()) {
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	if r.held == nil {
		r.held, r.heldMoved = map[*time.Time]struct{}{}, make(chan struct{})
	}
	k := &t
	r.held[k] = struct{}{}
	return func() {
		r.heldMu.Lock()
		defer r.heldMu.Unlock()
		delete(r.held, k)
		close(r.heldMoved)
		r.heldMoved = make(chan struct{})
	}
}

// startsFirst waits while a held run's start has come and its work has
// not started yet. A run's final record write, which on a local lake
// costs a file created and synced, then comes after the work of the runs
// due at the same tick (200 jobs on one schedule all start at once),
// not before it. The wait is short: a due run's timer has fired.
func (r *Runner) startsFirst(ctx context.Context) {
	for {
		r.heldMu.Lock()
		now, due := r.clock().Now(), false
		for t := range r.held {
			if !t.After(now) {
				due = true
				break
			}
		}
		moved := r.heldMoved
		r.heldMu.Unlock()
		if !due {
			return
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (r *Runner) finished(rec Record, etag string) {
	if r.OnFinish != nil {
		r.OnFinish(rec)
	}
	if r.noteFinal != nil {
		r.noteFinal(rec, etag)
	}
}

func (r *Runner) track(rec Record, cancel context.CancelCauseFunc, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[string]*active{}
	}
	if on {
		r.running[rec.ID] = &active{rec: rec, cancel: cancel}
	} else {
		delete(r.running, rec.ID)
	}
}

// encodeSummary is a kind's result as the run record keeps it: JSON,
// nothing when there is none or it cannot be encoded (logged: the run's
// status stands).
func encodeSummary(summary any, log *slog.Logger) json.RawMessage {
	if summary == nil {
		return nil
	}
	b, err := json.Marshal(summary)
	if err != nil {
		log.Error("the job's summary cannot be encoded; the record keeps none", "error", err)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	return b
}

// attempts runs the job up to 1+Retries.Max times, waiting a capped,
// jittered exponential backoff between attempts. A cancelled run is not
// retried, nor one whose error is permanent.
func (r *Runner) attempts(ctx context.Context, c *claim, job *Job, iv Interval, log *slog.Logger) (any, Status, error) {
	kind := r.Kinds[job.Kind]
	for n := 0; ; n++ {
		summary, err := r.attempt(ctx, kind, job, iv)
		if err == nil {
			return summary, StatusSucceeded, nil
		}
		if cause := context.Cause(ctx); cause != nil {
			if errors.Is(cause, ErrLeaseLost) {
				return summary, StatusFailed, cause
			}
			return summary, StatusCancelled, fmt.Errorf("%w: %w", ErrCancelled, err)
		}
		if n >= job.Retries.Max || errors.Is(err, ErrPermanent) {
			return summary, StatusFailed, err
		}
		wait := r.backoff(job.Retries, n)
		log.Warn("attempt failed; retrying", "attempt", c.record().Attempt, "error", err, "wait", wait)
		if _, uerr := c.update(ctx, func(x *Record) { x.Attempt++; x.Error = cloud.OneLine(err.Error(), 2000) }); uerr != nil {
			return summary, StatusFailed, uerr
		}
		if serr := sleep(ctx, r.clock(), wait); serr != nil {
			return summary, StatusCancelled, fmt.Errorf("%w: %w", ErrCancelled, err)
		}
	}
}

// attempt runs the job once under its timeout.
func (r *Runner) attempt(ctx context.Context, kind Kind, job *Job, iv Interval) (any, error) {
	if job.Timeout <= 0 {
		return kind.Run(ctx, r.Pipeline, job, iv)
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := r.clock().AfterFunc(job.Timeout, func() { cancel(ErrTimeout) })
	defer stop()
	summary, err := kind.Run(actx, r.Pipeline, job, iv)
	if err != nil && errors.Is(context.Cause(actx), ErrTimeout) && ctx.Err() == nil {
		return summary, Transient(fmt.Errorf("%w after %s: %w", ErrTimeout, job.Timeout, err))
	}
	return summary, err
}

// backoff is the wait after failed attempt n (0-based): Backoff doubled
// n times, at most MaxBackoff, then jittered into [d/2, d).
func (r *Runner) backoff(p Retries, n int) time.Duration {
	d := p.Backoff
	for range n {
		d *= 2
		if d >= p.MaxBackoff {
			d = p.MaxBackoff
			break
		}
	}
	j := rand.Float64
	if r.Jitter != nil {
		j = r.Jitter
	}
	return d/2 + time.Duration(j()*float64(d/2))
}

// heartbeat renews c's lease every third of the TTL until stopped; when
// another instance took the interval over, it cancels the run.
func (r *Runner) heartbeat(ctx context.Context, c *claim, cancel context.CancelCauseFunc) (stop func()) {
	ctx, done := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sleep(ctx, r.clock(), r.ttl()/3) == nil {
			until := r.clock().Now().Add(r.ttl())
			if _, err := c.update(ctx, func(x *Record) { x.LeaseUntil = until }); errors.Is(err, ErrLeaseLost) {
				cancel(ErrLeaseLost)
				return
			}
		}
	}()
	return func() { done(); wg.Wait() }
}

// Backfill runs every interval of job that starts in [from, to), in
// order, at most parallel at once, then (unless o.Only) the jobs after
// it. A done interval is left alone unless o.Rerun.
func (r *Runner) Backfill(ctx context.Context, job *Job, from, to time.Time, parallel int, o RunOptions) ([]Outcome, error) {
	ivs := job.Schedule.Intervals(from, to)
	outs := make([][]Outcome, len(ivs))
	errs := make([]error, len(ivs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for i, iv := range ivs {
		g.Go(func() error {
			outs[i], errs[i] = r.Run(gctx, job, iv, o)
			return nil
		})
	}
	_ = g.Wait()
	var all []Outcome
	for _, o := range outs {
		all = append(all, o...)
	}
	return all, errors.Join(errs...)
}
