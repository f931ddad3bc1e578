package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// serve claims a tick's interval claimAhead before the tick and starts the
// job's work at the tick, not before; a shutdown while the claim is held
// gives it back (recorded cancelled, and nothing recorded for the job
// after it), and the next start runs the interval and the job after it.
func TestServeClaimsAheadOfTheTick(t *testing.T) {
	var mu sync.Mutex
	calls := map[string][]time.Time{} // interval → the clock when the job ran
	var clock *fakeClock
	p, h, kinds := serveLake(t, t.TempDir(), "  publish:\n    after: [load]\n    task: {}\n", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if j.Name != "load" {
			return nil, nil
		}
		mu.Lock()
		calls[iv.Key()] = append(calls[iv.Key()], clock.Now())
		mu.Unlock()
		return nil, nil
	})
	sched := p.Jobs["load"].Schedule
	clock = newFakeClock(t0.Add(5 * time.Second))
	d := newDispatches()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, OnDispatch: d.hook}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	<-s.Ready()

	// Half a second before the tick at t0+10s: claimed, not run.
	clock.Set(t0.Add(9500 * time.Millisecond))
	// The held run's wait, its heartbeat and the trigger's next wake.
	if err := clock.WaitTimers(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	tick := sched.IntervalEnding(t0.Add(10 * time.Second))
	rec, _, err := h.Get(context.Background(), "load", tick.Key())
	if err != nil || rec.Status != StatusRunning || !rec.Started.Equal(tick.End) {
		t.Fatalf("before the tick: record %+v, %v; want running, started at the tick", rec, err)
	}
	mu.Lock()
	if n := len(calls[tick.Key()]); n != 0 {
		t.Errorf("the job ran %d times before its tick", n)
	}
	mu.Unlock()
	clock.Set(tick.End)
	d.wait("load", tick, 1)
	mu.Lock()
	if got := calls[tick.Key()]; len(got) != 1 || got[0].Before(tick.End) {
		t.Errorf("the job ran at %v, want once, at or after %v", got, tick.End)
	}
	mu.Unlock()
	if rec, _, err := h.Get(context.Background(), "load", tick.Key()); err != nil || rec.Status != StatusSucceeded {
		t.Fatalf("after the tick: record %+v, %v", rec, err)
	}

	// Claimed ahead of the next tick, then shut down: given back.
	next := sched.IntervalEnding(t0.Add(20 * time.Second))
	clock.Set(t0.Add(19500 * time.Millisecond))
	if err := clock.WaitTimers(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	rec, _, err = h.Get(context.Background(), "load", next.Key())
	if err != nil || rec.Status != StatusCancelled {
		t.Fatalf("shut down while held: record %+v, %v; want cancelled", rec, err)
	}
	if rec, _, err := h.Get(context.Background(), "publish", next.Key()); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("shut down while held: the job after it has record %+v, %v; want none", rec, err)
	}

	// The next start, after the interval ended, runs it.
	clock.Set(t0.Add(25 * time.Second))
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	s = &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, OnDispatch: d.hook}
	go func() { served <- s.Serve(ctx) }()
	<-s.Ready()
	cancel()
	<-served
	rec, _, err = h.Get(context.Background(), "load", next.Key())
	if err != nil || rec.Status != StatusSucceeded || rec.Attempt != 2 {
		t.Fatalf("after the restart: record %+v, %v; want succeeded, attempt 2", rec, err)
	}
	if rec, _, err := h.Get(context.Background(), "publish", next.Key()); err != nil || rec.Status != StatusSucceeded {
		t.Fatalf("after the restart: the job after it has record %+v, %v; want succeeded", rec, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(calls[next.Key()]); n != 1 {
		t.Errorf("the given-back interval ran %d times, want 1", n)
	}
}

// An interval whose instance died is taken over after its lease even
// when this instance's run of the same job is busy then: it is queued
// and runs after that run, once.
func TestServeTakeoverWhileTheJobIsBusy(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	ran := map[string]int{}
	busy := Interval{Start: t0, End: t0.Add(10 * time.Second)}
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		mu.Lock()
		ran[iv.Key()]++
		mu.Unlock()
		if iv == busy {
			close(started)
			<-release
		}
		return nil, nil
	})
	sched := p.Jobs["load"].Schedule
	dead := sched.Latest(t0.Add(5 * time.Second)) // ends at t0
	if _, err := h.put(context.Background(), Record{Job: "load", Interval: dead.Key(), Start: dead.Start, End: dead.End,
		ID: "dead", Attempt: 1, Instance: "dead", Status: StatusRunning, Started: dead.End, LeaseUntil: t0.Add(35 * time.Second)},
		cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(t0.Add(5 * time.Second))
	d := newDispatches()
	// Its record is first seen at t0+5s, at start: a 30s lease runs out
	// at t0+35s on this instance's clock.
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: 30 * time.Second}, OnDispatch: d.hook}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	<-s.Ready() // the dead instance's interval: found running, looked at after its lease
	d.wait("load", dead, 1)
	clock.Set(busy.End) // the job's next run starts, and blocks
	<-started
	clock.Set(t0.Add(40 * time.Second)) // past the dead lease: the takeover comes while busy
	for queued := false; !queued; {
		time.Sleep(time.Millisecond) // the takeover's look runs on its own goroutine
		s.mu.Lock()
		for _, q := range s.jobs["load"].queue {
			queued = queued || q.iv == dead && q.trigger == "takeover"
		}
		s.mu.Unlock()
	}
	close(release)
	d.wait("load", dead, 2)
	cancel()
	<-served
	rec, _, err := h.Get(context.Background(), "load", dead.Key())
	if err != nil || rec.Status != StatusSucceeded || rec.Attempt != 2 {
		t.Fatalf("taken-over interval: %+v, %v; want succeeded on attempt 2", rec, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ran[dead.Key()] != 1 {
		t.Errorf("the taken-over interval ran %d times here, want 1", ran[dead.Key()])
	}
}
