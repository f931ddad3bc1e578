package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// skewedClock is another machine's view of a fakeClock: its wall clock
// reads by off from the base, while durations pass at the same rate.
type skewedClock struct {
	*fakeClock
	off time.Duration
}

func (c skewedClock) Now() time.Time { return c.fakeClock.Now().Add(c.off) }

func (c skewedClock) AfterFuncAt(at time.Time, f func()) func() bool {
	return c.fakeClock.AfterFuncAt(at.Add(-c.off), f)
}

// Two instances whose clocks disagree: a lease is judged on the taker's
// own clock, by whether the holder's record changes, never by comparing
// the holder's lease_until with the taker's wall clock. One instance
// runs an interval for two minutes; another, its clock 25s ahead and a
// 30s lease, looks at the interval every second: it never runs it
// (before, it took the interval over within ten seconds, and both ran
// it). And a dead holder's interval is taken over a lease after first
// sight by an instance whose clock is an hour behind (before, an hour
// later).
func TestLeaseIsJudgedOnTheTakersClock(t *testing.T) {
	const ttl = 30 * time.Second
	t.Run("a clock 25s ahead does not take a live run over", func(t *testing.T) {
		var runs atomic.Int32
		release, started := make(chan struct{}), make(chan struct{})
		p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
			if runs.Add(1) > 1 {
				return nil, nil // a second run: the bug this test pins
			}
			close(started)
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		base := newFakeClock(t0)
		a := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: base, Instance: "a", LeaseTTL: ttl}
		// b has a History of its own, as another process has.
		b := &Runner{Pipeline: p, Kinds: kinds, History: &History{Store: h.Store}, Clock: skewedClock{base, 25 * time.Second}, Instance: "b", LeaseTTL: ttl}
		job := p.Jobs["load"]
		iv := job.Schedule.Latest(t0)
		done := wait(func() error {
			_, err := a.RunInterval(context.Background(), job, iv, RunOptions{Only: true})
			return err
		})
		<-started
		ctx := context.Background()
		for s := range 120 {
			if err := base.WaitTimers(ctx, 1); err != nil { // a's heartbeat waits: its last renewal is written
				t.Fatal(err)
			}
			out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true})
			if err != nil || out.Ran {
				t.Fatalf("%ds into a's run, b (25s ahead) took it over: %+v, %v", s, out.Record, err)
			}
			base.Advance(time.Second)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("a's run: %v", err)
		}
		rec, _, err := h.Get(ctx, "load", iv.Key())
		if err != nil || rec.Status != StatusSucceeded || rec.Instance != "a" || rec.Attempt != 1 || runs.Load() != 1 {
			t.Fatalf("record %+v, %v; job ran %d times; want succeeded once by a", rec, err, runs.Load())
		}
	})
	t.Run("a clock an hour behind takes a dead run over a lease after first sight", func(t *testing.T) {
		var runs atomic.Int32
		p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
			runs.Add(1)
			return nil, nil
		})
		job := p.Jobs["load"]
		iv := job.Schedule.Latest(t0)
		ctx := context.Background()
		dead := Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "dead", Attempt: 1, Instance: "dead",
			Status: StatusRunning, Started: t0, LeaseUntil: t0.Add(ttl), LeaseSeconds: ttl.Seconds()}
		if _, err := h.put(ctx, dead, cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		base := newFakeClock(t0)
		b := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: skewedClock{base, -time.Hour}, Instance: "b", LeaseTTL: ttl}
		for s := 0; ; s++ {
			out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true})
			if err != nil {
				t.Fatal(err)
			}
			if out.Ran {
				if s != 30 || out.Record.Attempt != 2 || runs.Load() != 1 {
					t.Fatalf("taken over %ds after first sight (attempt %d, %d runs); want at 30s, attempt 2, once", s, out.Record.Attempt, runs.Load())
				}
				return
			}
			if s > 120 {
				t.Fatal("a dead run was not taken over in two minutes by a clock an hour behind")
			}
			base.Advance(time.Second)
		}
	})
	t.Run("a holder with a longer lease is given its own", func(t *testing.T) {
		p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
		job := p.Jobs["load"]
		iv := job.Schedule.Latest(t0)
		ctx := context.Background()
		long := Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "long", Attempt: 1, Instance: "long",
			Status: StatusRunning, Started: t0, LeaseSeconds: (5 * time.Minute).Seconds()}
		if _, err := h.put(ctx, long, cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		base := newFakeClock(t0)
		b := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: base, Instance: "b", LeaseTTL: ttl}
		for _, at := range []time.Duration{0, ttl, 5*time.Minute - time.Second} {
			base.Set(t0.Add(at))
			if out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true}); err != nil || out.Ran {
				t.Fatalf("%s after first sight of a 5m lease: ran=%v err=%v; want left alone", at, out.Ran, err)
			}
		}
		base.Set(t0.Add(5 * time.Minute))
		if out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true}); err != nil || !out.Ran {
			t.Fatalf("5m after first sight: ran=%v err=%v; want taken over", out.Ran, err)
		}
	})
}

// A one-shot run (sluice run, backfill) that finds its interval running
// elsewhere watches the record: renewed, the run is left to its instance
// and reported running elsewhere as soon as the renewal is seen;
// unchanged for a lease, the interval is taken over.
func TestAwaitLease(t *testing.T) {
	const ttl = 40 * time.Second
	ctx := context.Background()
	t.Run("a renewed record is left running elsewhere", func(t *testing.T) {
		release, started := make(chan struct{}), make(chan struct{})
		p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
			close(started)
			<-release
			return nil, nil
		})
		clock := newFakeClock(t0)
		job := p.Jobs["load"]
		iv := job.Schedule.Latest(t0)
		a := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "a", LeaseTTL: ttl}
		done := wait(func() error { _, err := a.RunInterval(ctx, job, iv, RunOptions{Only: true}); return err })
		<-started
		b := &Runner{Pipeline: p, Kinds: kinds, History: &History{Store: h.Store}, Clock: clock, Instance: "b", LeaseTTL: ttl}
		got := wait(func() Outcome {
			out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true, AwaitLease: true})
			if err != nil {
				t.Error(err)
			}
			return out
		})
		out := drive(clock, 2, got)
		if out.Ran || out.Record.Status != StatusRunning || out.Record.Instance != "a" {
			t.Fatalf("b's outcome %+v; want a's run left running", out)
		}
		if waited := clock.Now().Sub(t0); waited >= ttl {
			t.Errorf("b waited %s, a whole lease, to see a live holder's renewal (every %s)", waited, ttl/3)
		}
		close(release)
		<-done
	})
	t.Run("an unchanged record is taken over after a lease", func(t *testing.T) {
		p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
		job := p.Jobs["load"]
		iv := job.Schedule.Latest(t0)
		dead := Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "dead", Attempt: 1, Instance: "dead",
			Status: StatusRunning, Started: t0, LeaseSeconds: ttl.Seconds()}
		if _, err := h.put(ctx, dead, cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		clock := newFakeClock(t0)
		b := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "b", LeaseTTL: ttl}
		got := wait(func() Outcome {
			out, err := b.RunInterval(ctx, job, iv, RunOptions{Only: true, AwaitLease: true})
			if err != nil {
				t.Error(err)
			}
			return out
		})
		out := drive(clock, 1, got)
		if !out.Ran || out.Record.Status != StatusSucceeded || out.Record.Attempt != 2 {
			t.Fatalf("b's outcome %+v; want the interval taken over, succeeded on attempt 2", out)
		}
		if waited := clock.Now().Sub(t0); waited < ttl {
			t.Errorf("taken over after %s, less than a lease", waited)
		}
	})
}

// drive advances clock a second at a time, each once n timers wait on it
// (or a moment passed: the code under test may be between waits), until
// ch yields.
func drive[T any](clock *fakeClock, n int, ch <-chan T) T {
	for {
		select {
		case v := <-ch:
			return v
		default:
		}
		wctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_ = clock.WaitTimers(wctx, n) // a poll, not an assertion: the loop looks at ch again either way
		cancel()
		clock.Advance(time.Second)
	}
}
