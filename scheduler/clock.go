package scheduler

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is where the scheduler reads the time and waits. Tests drive a
// fakeClock; everything else uses RealClock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed (f must not block); stop
	// cancels it and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// sleep waits d on c, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	stop := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// sleepUntil waits until c reads t, or until ctx ends. With a clock that
// can register a deadline itself (fakeClock), reading the time and
// registering are one step, so a tick is never moved by an Advance that
// comes between them.
func sleepUntil(ctx context.Context, c Clock, t time.Time) error {
	at, ok := c.(interface {
		AfterFuncAt(t time.Time, f func()) func() bool
	})
	if !ok {
		return sleep(ctx, c, t.Sub(c.Now()))
	}
	done := make(chan struct{})
	stop := at.AfterFuncAt(t, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// fakeClock is a Clock that moves only when Advance or Set says. Timers
// due fire in order of their deadlines.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	waiting chan struct{}
}

type fakeTimer struct {
	at   time.Time
	f    func()
	dead bool
}

// newFakeClock returns a fakeClock reading t.
func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t, waiting: make(chan struct{})} }

// Now returns the fake time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run once the fake time reaches now+d.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at(c.now.Add(d), f)
}

// AfterFuncAt registers f to run once the fake time reaches at.
func (c *fakeClock) AfterFuncAt(at time.Time, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at(at, f)
}

func (c *fakeClock) at(at time.Time, f func()) func() bool {
	t := &fakeTimer{at: at, f: f}
	if !at.After(c.now) {
		go f()
		t.dead = true
		return func() bool { return false }
	}
	c.timers = append(c.timers, t)
	close(c.waiting)
	c.waiting = make(chan struct{})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.dead
		t.dead = true
		return was
	}
}

// Advance moves the time forward by d, firing the timers it passes, each
// with the clock reading its deadline.
func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the time to t (never backwards), firing the timers it passes.
func (c *fakeClock) Set(t time.Time) {
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *fakeTimer
		for len(c.timers) > 0 {
			first := c.timers[0]
			if first.dead {
				c.timers = c.timers[1:]
				continue
			}
			if !first.at.After(t) {
				due = first
				c.timers = c.timers[1:]
				due.dead = true
				if due.at.After(c.now) {
					c.now = due.at
				}
			}
			break
		}
		if due == nil {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		due.f()
	}
}

// Timers returns how many timers are pending.
func (c *fakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.dead {
			n++
		}
	}
	return n
}

// WaitTimers blocks until at least n timers are pending or ctx ends: a
// test's way to know the code under test is waiting on the clock.
func (c *fakeClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		w := c.waiting
		c.mu.Unlock()
		if c.Timers() >= n {
			return nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
