package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// dispatches counts a server's dispatch events by interval.
type dispatches struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    map[string]int
}

func newDispatches() *dispatches {
	d := &dispatches{n: map[string]int{}}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *dispatches) hook(job string, iv Interval, _ []Outcome, _ error) {
	d.mu.Lock()
	d.n[job+"/"+iv.Key()]++
	d.mu.Unlock()
	d.cond.Broadcast()
}

// wait blocks until job's interval iv was dispatched n times.
func (d *dispatches) wait(job string, iv Interval, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.n[job+"/"+iv.Key()] < n {
		d.cond.Wait()
	}
}

const everyTenSeconds = "lake: %s\njobs:\n  load:\n    schedule: \"@every 10s\"\n    task: {}\n%s"

// serveLake parses an @every 10s pipeline over the given lake location.
func serveLake(t *testing.T, lakeLoc, extra string, fn func(ctx context.Context, j *Job, iv Interval) (map[string]any, error)) (*Pipeline, *History, map[string]Kind) {
	t.Helper()
	kinds := map[string]Kind{"task": funcKind{run: fn}}
	p, err := Parse("p.yaml", []byte(fmt.Sprintf(everyTenSeconds, lakeLoc, extra)), kinds, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloud.Open(context.Background(), p.Lake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return p, &History{Store: st}, kinds
}

// Two serve instances on one lake, 30 intervals of a job: each interval
// ran exactly once, and the history agrees. On local disk and on the S3
// test server.
func TestServeTwoInstancesRunEachIntervalOnce(t *testing.T) {
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string]int{}
			p, h, kinds := serveLake(t, testenv.Location(t, kind), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
				mu.Lock()
				ran[iv.Key()]++
				mu.Unlock()
				return nil, nil
			})
			clock := newFakeClock(t0.Add(5 * time.Second))
			d := newDispatches()
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 2)
			for i := range 2 {
				r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: fmt.Sprintf("i%d", i)}
				s := &Server{Runner: r, OnDispatch: d.hook}
				go func() { served <- s.Serve(ctx) }()
				<-s.Ready() // the first ran the latest interval; the second finds it done
			}
			sched := p.Jobs["load"].Schedule
			for i := 1; i <= 30; i++ {
				clock.Advance(10 * time.Second)
				d.wait("load", sched.Latest(clock.Now()), 2)
			}
			cancel()
			for range 2 {
				if err := <-served; err != nil {
					t.Fatal(err)
				}
			}
			if len(ran) != 31 {
				t.Errorf("%d intervals ran, want 31", len(ran))
			}
			for k, n := range ran {
				if n != 1 {
					t.Errorf("interval %s ran %d times", k, n)
				}
			}
			recs, err := h.List(context.Background(), "load")
			if err != nil || len(recs) != 31 {
				t.Fatalf("history: %d records, %v", len(recs), err)
			}
			for _, rec := range recs {
				if rec.Status != StatusSucceeded || rec.Attempt != 1 || ran[rec.Interval] != 1 {
					t.Errorf("record %+v; the job ran it %d times", rec, ran[rec.Interval])
				}
			}
		})
	}
}

// overlap: skip records the tick that came while the job still ran;
// overlap: queue runs it after.
func TestServeOverlap(t *testing.T) {
	for _, policy := range []string{"skip", "queue"} {
		t.Run(policy, func(t *testing.T) {
			release, started := make(chan struct{}), make(chan struct{})
			var calls atomic.Int32
			p, h, kinds := serveLake(t, t.TempDir(), "    overlap: "+policy+"\n", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
				if calls.Add(1) == 2 { // the first tick's run blocks
					close(started)
					<-release
				}
				return nil, nil
			})
			clock := newFakeClock(t0.Add(5 * time.Second))
			d := newDispatches()
			s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, OnDispatch: d.hook}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx) }()
			<-s.Ready()
			sched := p.Jobs["load"].Schedule
			clock.Advance(10 * time.Second)
			first := sched.Latest(clock.Now())
			<-started
			clock.Advance(10 * time.Second) // the first tick's run still runs
			second := sched.Latest(clock.Now())
			if policy == "skip" {
				d.wait("load", second, 1)
			}
			close(release)
			d.wait("load", first, 1)
			if policy == "queue" {
				d.wait("load", second, 1)
			}
			cancel()
			<-served
			rec, _, err := h.Get(context.Background(), "load", second.Key())
			want := map[string]Status{"skip": StatusSkipped, "queue": StatusSucceeded}[policy]
			if err != nil || rec.Status != want {
				t.Fatalf("second interval: %+v, %v; want %s", rec, err, want)
			}
			if n := map[string]int32{"skip": 2, "queue": 3}[policy]; calls.Load() != n {
				t.Errorf("the job ran %d times, want %d", calls.Load(), n)
			}
		})
	}
}

// After downtime at most catchup missed intervals run, oldest first; the
// older ones are recorded skipped.
func TestServeCatchUp(t *testing.T) {
	var mu sync.Mutex
	var order []string
	p, h, kinds := serveLake(t, t.TempDir(), "    catchup: 3\n", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		mu.Lock()
		order = append(order, iv.Start.Format("15:04:05"))
		mu.Unlock()
		return nil, nil
	})
	sched := p.Jobs["load"].Schedule
	last := sched.Latest(t0) // the last interval that ran before the downtime
	if _, err := h.put(context.Background(), Record{Job: "load", Interval: last.Key(), Start: last.Start, End: last.End,
		Status: StatusSucceeded, Attempt: 1}, cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(t0.Add(100 * time.Second)) // 10 intervals missed
	d := newDispatches()
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, OnDispatch: d.hook}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	d.wait("load", sched.Latest(clock.Now()), 1)
	cancel()
	<-served
	if want := []string{"00:01:10", "00:01:20", "00:01:30"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("ran %v, want %v", order, want)
	}
	recs, _ := h.List(context.Background(), "load")
	count := map[Status]int{}
	for _, r := range recs {
		count[r.Status]++
	}
	if count[StatusSkipped] != 7 || count[StatusSucceeded] != 4 {
		t.Errorf("history %v: want 7 skipped, 4 succeeded", count)
	}
}

// SIGTERM during a run: no new runs, the running one may finish within
// the grace; one that does not is cancelled then, recorded cancelled, and
// its interval may be claimed again by the next start.
func TestServeShutdownGraceThenCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	clock := newFakeClock(t0.Add(5 * time.Second))
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, Grace: 30 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	<-started
	stoppedAt := clock.Now()
	cancel()
	for waiting := true; waiting; {
		select {
		case err := <-served:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		default:
			clock.Advance(time.Second)
		}
	}
	if waited := clock.Now().Sub(stoppedAt); waited < 30*time.Second {
		t.Errorf("cancelled after %s, want the 30s grace first", waited)
	}
	iv := p.Jobs["load"].Schedule.Latest(stoppedAt)
	rec, _, err := h.Get(context.Background(), "load", iv.Key())
	if err != nil || rec.Status != StatusCancelled || !errors.Is(errors.New(rec.Error), nil) && rec.Error == "" {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if !claimable(rec, false) {
		t.Errorf("a cancelled interval is not claimable again")
	}
	select {
	case <-started:
		t.Errorf("a run started after shutdown")
	default:
	}
}
