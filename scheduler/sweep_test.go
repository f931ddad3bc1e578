package scheduler

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// The upstream's run of an interval succeeded and its instance died
// before it ran the job after it: two serve instances started on the
// lake find the interval and run the downstream job once between them.
func TestServeRunsDownstreamLeftByADeadInstance(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	p, h, kinds := serveLake(t, t.TempDir(), "  publish:\n    after: [load]\n    task: {}\n", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		mu.Lock()
		ran[j.Name+"/"+iv.Key()]++
		mu.Unlock()
		return nil, nil
	})
	sched := p.Jobs["load"].Schedule
	left := sched.Latest(t0.Add(5 * time.Second))
	if _, err := h.put(context.Background(), Record{Job: "load", Interval: left.Key(), Start: left.Start, End: left.End,
		ID: "dead", Attempt: 1, Instance: "dead", Status: StatusSucceeded, Started: left.End, Ended: left.End.Add(time.Second)},
		cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(t0.Add(5 * time.Second))
	d := newDispatches()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 2)
	var servers []*Server
	for i := range 2 {
		s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: fmt.Sprintf("i%d", i), LeaseTTL: time.Hour}, OnDispatch: d.hook}
		servers = append(servers, s)
		go func() { served <- s.Serve(ctx) }()
	}
	// Both instances swept. The first to find the interval without a
	// record dispatched it; the other, had it looked after that run wrote
	// its record, found nothing to do, so only one dispatch is sure.
	for _, s := range servers {
		<-s.Ready()
	}
	d.wait("publish", left, 1)
	cancel()
	for range 2 {
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
	rec, _, err := h.Get(context.Background(), "publish", left.Key())
	if err != nil || rec.Status != StatusSucceeded || rec.Trigger != "upstream" || rec.Attempt != 1 {
		t.Fatalf("downstream record %+v, %v; want succeeded on attempt 1, trigger upstream", rec, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := ran["publish/"+left.Key()]; n != 1 {
		t.Errorf("the downstream job ran the interval %d times, want once", n)
	}
	if n := ran["load/"+left.Key()]; n != 0 {
		t.Errorf("the upstream ran again %d times", n)
	}
}

// An instance died while it ran an interval that is long past the job's
// latest (its run retried for a while, or every instance was down): an
// instance started after the death, which never saw that run, finds its
// record running, sees it unchanged for a lease (a sweep later), and
// takes the interval over once, on attempt 2.
func TestServeTakesOverARunLeftBeforeItStarted(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		mu.Lock()
		ran[iv.Key()]++
		mu.Unlock()
		return nil, nil
	})
	now := t0.Add(2 * time.Hour)
	sched := p.Jobs["load"].Schedule
	left := sched.Latest(t0.Add(25 * time.Second)) // 700 intervals before the latest
	if _, err := h.put(context.Background(), Record{Job: "load", Interval: left.Key(), Start: left.Start, End: left.End,
		ID: "dead", Attempt: 1, Instance: "dead", Status: StatusRunning, Started: left.End, LeaseUntil: left.End.Add(time.Second)},
		cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(now)
	d := newDispatches()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "late", LeaseTTL: time.Hour}, OnDispatch: d.hook}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	taken := make(chan struct{})
	go func() { d.wait("load", left, 1); close(taken) }()
	<-s.Ready() // the first sweep saw the record running
	select {
	case <-taken:
		t.Fatal("the interval left running was taken over at first sight, before a lease passed")
	default:
	}
	clock.Advance(time.Hour) // a lease later, the next sweep finds it unchanged
	select {
	case <-taken:
	case <-time.After(time.Minute): // a bound on a hang, not a timing
		t.Fatal("the interval left running was never taken over")
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	rec, _, err := h.Get(context.Background(), "load", left.Key())
	if err != nil || rec.Status != StatusSucceeded || rec.Attempt != 2 || rec.Instance != "late" {
		t.Fatalf("record %+v, %v; want succeeded on attempt 2 by instance late", rec, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := ran[left.Key()]; n != 1 {
		t.Errorf("the interval left running ran %d times, want once", n)
	}
}

// An instance that starts while another serves the job (a run of it holds
// a live lease) records none of the intervals the other has not claimed
// yet as skipped: nothing was missed while no instance ran.
func TestServeStartedBesideALiveInstanceSkipsNothing(t *testing.T) {
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	sched := p.Jobs["load"].Schedule
	at := func(end time.Duration) Interval { return sched.Latest(t0.Add(end)) }
	now := t0.Add(65 * time.Second)
	for _, rec := range []Record{
		{Start: at(10 * time.Second).Start, End: at(10 * time.Second).End, Status: StatusSucceeded, Instance: "other", Ended: t0.Add(11 * time.Second)},
		{Start: at(50 * time.Second).Start, End: at(50 * time.Second).End, Status: StatusRunning, Instance: "other", LeaseUntil: now.Add(time.Hour)},
	} {
		rec.Interval = Interval{Start: rec.Start, End: rec.End}.Key()
		rec.Job, rec.ID, rec.Attempt = "load", "r-"+rec.Interval, 1
		if _, err := h.put(context.Background(), rec, cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
	}
	d := newDispatches()
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: newFakeClock(now), Instance: "late", LeaseTTL: time.Hour}, OnDispatch: d.hook}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	d.wait("load", at(60*time.Second), 1) // the catch-up of the latest interval ran
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	recs, err := h.List(context.Background(), "load")
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Status == StatusSkipped {
			t.Errorf("interval %s recorded skipped by %s beside a live instance", rec.Interval, rec.Instance)
		}
	}
}

// countingStore counts the reads of run records.
type countingStore struct {
	cloud.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, cloud.ObjectInfo, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// The sweep reads a final run record once: a later sweep lists the
// records and reads again only one whose ETag changed (a rerun).
func TestSweepReadsAFinalRecordOnce(t *testing.T) {
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	cs := &countingStore{Store: h.Store}
	h.Store = cs
	now := t0.Add(time.Hour)
	sched := p.Jobs["load"].Schedule
	var recs []Record
	for iv, n := sched.Latest(now), 0; n < 30; iv, n = sched.IntervalEnding(iv.Start), n+1 {
		rec := Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "done-" + iv.Key(), Attempt: 1,
			Instance: "other", Status: StatusSucceeded, Started: iv.End, Ended: iv.End.Add(time.Second)}
		if _, err := h.put(context.Background(), rec, cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: newFakeClock(now), Instance: "me", LeaseTTL: time.Hour}}
	sweeps := []int64{}
	sweep := func() {
		before := cs.gets.Load()
		s.sweep(context.Background())
		sweeps = append(sweeps, cs.gets.Load()-before)
	}
	sweep()
	sweep()
	rerun := recs[7]
	rerun.ID, rerun.Attempt = "rerun", 2
	if _, err := h.put(context.Background(), rerun, cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sweep()
	if sweeps[0] != 30 || sweeps[1] != 0 || sweeps[2] != 1 {
		t.Errorf("records read by three sweeps: %v; want 30 (all), 0 (none changed), 1 (the rerun)", sweeps)
	}
}

// The sweep lists a job's run records by day, or by hour for a dense job,
// covering every interval it looks at and no more than a day of them.
func TestSweepListsByDayOrHour(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"@every 5m", []string{"20260302", "20260301"}},
		{"@daily", []string{"20260301"}}, // the day before ended over 24 hours ago
		{"@every 1s", []string{"20260302T00", "20260301T23"}},
	} {
		sched, err := ParseSchedule(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		ivs := sweepIntervalsOf(&Job{Schedule: sched}, now)
		got := keyPrefixes(ivs)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: prefixes %v, want %v", c.spec, got, c.want)
		}
		for _, iv := range ivs {
			if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(iv.Key(), p) }) {
				t.Errorf("%s: interval %s under no prefix of %v", c.spec, iv.Key(), got)
			}
		}
	}
}
