package ingest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// instantTimer fires at once, so that the schedule is read without waiting.
type instantTimer struct{ c chan time.Time }

func (t *instantTimer) Start(time.Duration) { t.c <- time.Time{} }
func (t *instantTimer) Stop()               {}
func (t *instantTimer) C() <-chan time.Time { return t.c }

// The group offsets are tried five times while the group rebalances,
// waiting 200ms longer before each retry, and not again once the commit's
// deadline has passed.
func TestGroupCommitRetriesFiveTimesWaitingLongerEachTime(t *testing.T) {
	var attempts int
	var waits []time.Duration
	errRebalance := errors.New("rebalance in progress")
	err := backoff.RetryNotifyWithTimer(func() error { attempts++; return errRebalance },
		groupCommitBackOff(context.Background()),
		func(_ error, d time.Duration) { waits = append(waits, d) },
		&instantTimer{c: make(chan time.Time, 1)})
	if !errors.Is(err, errRebalance) || attempts != 5 {
		t.Fatalf("got %v after %d attempts, want the last failure after 5", err, attempts)
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond, 800 * time.Millisecond}
	if !slices.Equal(waits, want) {
		t.Fatalf("waited %v, want %v", waits, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	attempts = 0
	err = backoff.RetryNotifyWithTimer(func() error { attempts++; return errRebalance },
		groupCommitBackOff(ctx), nil, &instantTimer{c: make(chan time.Time, 1)})
	if !errors.Is(err, context.Canceled) || attempts != 1 {
		t.Fatalf("after the deadline: got %v after %d attempts, want context.Canceled after 1", err, attempts)
	}
}
