package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// openLake opens p's lake and its history.
func openLake(t testing.TB, p *Pipeline) (func(), *History) {
	st, err := cloud.Open(context.Background(), p.Lake)
	if err != nil {
		t.Fatal(err)
	}
	return func() { st.Close() }, &History{Store: st}
}

// lake opens a fresh local lake and parses src as its pipeline, with the
// kind "task" running fn.
func lake(t *testing.T, src string, fn func(ctx context.Context, j *Job, iv Interval) (map[string]any, error)) (*Pipeline, *History, map[string]Kind) {
	t.Helper()
	dir := t.TempDir()
	kinds := map[string]Kind{"task": funcKind{run: fn}}
	p, err := Parse(filepath.Join(dir, "p.yaml"), []byte(src), kinds, env(nil))
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

const dailyPipeline = `
lake: lake
jobs:
  load:
    schedule: "@daily"
    task: {}
  sum:
    after: [load]
    task: {}
`

// Two runners (two instances) on one lake, racing for the same
// interval: it runs once; the other finds it claimed.
func TestRunClaimsIntervalOnce(t *testing.T) {
	var calls atomic.Int32
	release, started := make(chan struct{}), make(chan struct{}, 2)
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if j.Name == "load" {
			calls.Add(1)
			started <- struct{}{}
			<-release
		}
		return map[string]any{"rows": 1}, nil
	})
	iv := p.Jobs["load"].Schedule.Latest(t0)
	var wg sync.WaitGroup
	outs := make([]Outcome, 2)
	for i := range 2 {
		r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: fmt.Sprintf("i%d", i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _ = r.RunInterval(context.Background(), p.Jobs["load"], iv, RunOptions{})
		}()
	}
	// One of them is running the job; the other returns at once.
	<-started
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("the job ran %d times, want 1", calls.Load())
	}
	if outs[0].Ran == outs[1].Ran {
		t.Fatalf("ran: %v and %v; want exactly one", outs[0].Ran, outs[1].Ran)
	}
	rec, _, err := h.Get(context.Background(), "load", iv.Key())
	if err != nil || rec.Status != StatusSucceeded || rec.Attempt != 1 || summaryOf(t, rec)["rows"] != float64(1) {
		t.Fatalf("record = %+v, %v", rec, err)
	}
}

// A backfill of 30 days runs each day's interval of the job and of the
// one after it, in dependency order; a second backfill does nothing, and
// --rerun does it again.
func TestBackfillTwiceDoesNothing(t *testing.T) {
	var mu sync.Mutex
	var order []string
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, j.Name+"@"+iv.Start.Format(time.DateOnly))
		return nil, nil
	})
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "a"}
	from, to := t0, t0.AddDate(0, 0, 30)
	outs, err := r.Backfill(context.Background(), p.Jobs["load"], from, to, 1, RunOptions{Trigger: "backfill"})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 60 || len(outs) != 60 {
		t.Fatalf("%d runs, %d outcomes; want 60 (30 days, two jobs)", len(order), len(outs))
	}
	for i := 0; i < 60; i += 2 {
		day := t0.AddDate(0, 0, i/2).Format(time.DateOnly)
		if order[i] != "load@"+day || order[i+1] != "sum@"+day {
			t.Fatalf("runs %d,%d = %s, %s: want load then sum of %s", i, i+1, order[i], order[i+1], day)
		}
	}
	order = nil
	outs, err = r.Backfill(context.Background(), p.Jobs["load"], from, to, 4, RunOptions{})
	if err != nil || len(order) != 0 {
		t.Fatalf("second backfill ran %d jobs (%v)", len(order), err)
	}
	for _, o := range outs {
		if o.Ran || o.Record.Status != StatusSucceeded {
			t.Fatalf("second backfill: %+v", o)
		}
	}
	if _, err := r.Backfill(context.Background(), p.Jobs["load"], from, from.AddDate(0, 0, 2), 1, RunOptions{Rerun: true}); err != nil || len(order) != 4 {
		t.Fatalf("rerun of 2 days ran %d jobs (%v), want 4", len(order), err)
	}
	recs, err := h.List(context.Background(), "load")
	if err != nil || len(recs) != 30 || recs[0].Attempt != 2 || recs[2].Attempt != 1 {
		t.Fatalf("history: %d records (%v); first %+v", len(recs), err, recs[0])
	}
}

// A failed upstream records the downstream upstream_failed, not silence;
// a later run of the failed interval can claim it again.
func TestUpstreamFailedIsRecorded(t *testing.T) {
	fail := true
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if j.Name == "load" && fail {
			return nil, errors.New("landing prefix unreadable")
		}
		return nil, nil
	})
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "a"}
	iv := p.Jobs["load"].Schedule.Latest(t0)
	outs, err := r.Run(context.Background(), p.Jobs["load"], iv, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "landing prefix unreadable") {
		t.Fatalf("err = %v", err)
	}
	if len(outs) != 2 || outs[0].Record.Status != StatusFailed || outs[1].Record.Status != StatusUpstreamFailed ||
		outs[1].Record.Error != "upstream load: failed" {
		t.Fatalf("outcomes: %+v", outs)
	}
	fail = false
	outs, err = r.Run(context.Background(), p.Jobs["load"], iv, RunOptions{})
	if err != nil || outs[0].Record.Status != StatusSucceeded || outs[0].Record.Attempt != 2 || outs[1].Record.Status != StatusSucceeded {
		t.Fatalf("second run: %+v, %v", outs, err)
	}
	// Run alone, a downstream whose upstream has not run waits for it.
	p2, h2, kinds2 := lake(t, dailyPipeline, nil)
	r2 := &Runner{Pipeline: p2, Kinds: kinds2, History: h2}
	if _, err := r2.Run(context.Background(), p2.Jobs["sum"], iv, RunOptions{}); !errors.Is(err, ErrUpstreamPending) {
		t.Fatalf("sum before load: %v, want ErrUpstreamPending", err)
	}
}

// wait runs fn in a goroutine and returns a channel of its result.
func wait[T any](fn func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	return ch
}

// Retries wait a capped exponential backoff on the clock: with no
// jitter, 5s, 10s, then 15s (the cap), and the attempt count is recorded.
func TestRetriesBackOffOnTheClock(t *testing.T) {
	src := "lake: lake\njobs:\n  load:\n    schedule: \"@daily\"\n    task: {}\n    retries: {max: 3, backoff: 10s, max_backoff: 30s}\n"
	var attempts atomic.Int32
	p, h, kinds := lake(t, src, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if attempts.Add(1) < 4 {
			return nil, errors.New("flaky")
		}
		return nil, nil
	})
	clock := newFakeClock(t0)
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Jitter: func() float64 { return 0 }, LeaseTTL: time.Hour}
	done := wait(func() error {
		_, err := r.RunInterval(context.Background(), p.Jobs["load"], p.Jobs["load"].Schedule.Latest(t0), RunOptions{})
		return err
	})
	ctx := context.Background()
	for _, want := range []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second} {
		// The heartbeat's timer and the backoff's.
		if err := clock.WaitTimers(ctx, 2); err != nil {
			t.Fatal(err)
		}
		before := attempts.Load()
		clock.Advance(want - time.Millisecond)
		if attempts.Load() != before {
			t.Fatalf("retried before its %s backoff", want)
		}
		clock.Advance(time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec, _, _ := h.Get(ctx, "load", p.Jobs["load"].Schedule.Latest(t0).Key())
	if rec.Status != StatusSucceeded || rec.Attempt != 4 || attempts.Load() != 4 {
		t.Fatalf("record %+v after %d attempts", rec, attempts.Load())
	}
}

// A timeout cancels the job's context; the run is recorded failed with
// the timeout as its error.
func TestTimeoutCancelsTheJob(t *testing.T) {
	src := "lake: lake\njobs:\n  load:\n    schedule: \"@hourly\"\n    task: {}\n    timeout: 30m\n"
	started := make(chan struct{})
	p, h, kinds := lake(t, src, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	clock := newFakeClock(t0)
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: 24 * time.Hour}
	iv := p.Jobs["load"].Schedule.Latest(t0)
	done := wait(func() error {
		_, err := r.RunInterval(context.Background(), p.Jobs["load"], iv, RunOptions{})
		return err
	})
	<-started
	clock.WaitTimers(context.Background(), 2)
	clock.Advance(30 * time.Minute)
	err := <-done
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	rec, _, _ := h.Get(context.Background(), "load", iv.Key())
	if rec.Status != StatusFailed || !strings.Contains(rec.Error, "timed out after 30m0s") {
		t.Fatalf("record %+v", rec)
	}
}

// Cancel ends a running run's context; it is recorded cancelled, and the
// interval may be claimed again.
func TestCancelARun(t *testing.T) {
	started := make(chan struct{})
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if j.Name == "load" {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, nil
	})
	r := &Runner{Pipeline: p, Kinds: kinds, History: h}
	iv := p.Jobs["load"].Schedule.Latest(t0)
	done := wait(func() []Outcome { o, _ := r.Run(context.Background(), p.Jobs["load"], iv, RunOptions{}); return o })
	<-started
	running := r.Running()
	if len(running) != 1 || !r.Cancel(running[0].ID) {
		t.Fatalf("running = %+v", running)
	}
	outs := <-done
	if outs[0].Record.Status != StatusCancelled || outs[1].Record.Status != StatusUpstreamFailed {
		t.Fatalf("outcomes %+v", outs)
	}
	if r.Cancel(running[0].ID) {
		t.Errorf("Cancel of a finished run reported true")
	}
}

// An instance that died mid-run leaves a running record that nobody
// renews: another instance takes the interval over once it has seen the
// record unchanged for a full lease on its own clock, not before, as
// attempt 2. The dead instance's lease_until, written on its clock, is
// not read: here it lies a day in the future.
func TestLeaseTakeoverAfterTTL(t *testing.T) {
	var runs atomic.Int32
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		runs.Add(1)
		return nil, nil
	})
	iv := p.Jobs["load"].Schedule.Latest(t0)
	dead := Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "dead", Attempt: 1,
		Instance: "killed", Status: StatusRunning, Started: t0, LeaseUntil: t0.Add(24 * time.Hour)}
	if _, err := h.put(context.Background(), dead, cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock(t0)
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "b", LeaseTTL: time.Minute}
	for _, wait := range []time.Duration{0, 59 * time.Second} {
		clock.Set(t0.Add(wait))
		out, err := r.RunInterval(context.Background(), p.Jobs["load"], iv, RunOptions{Only: true})
		if err != nil || out.Ran || runs.Load() != 0 {
			t.Fatalf("%s after first seeing it: ran=%v runs=%d err=%v", wait, out.Ran, runs.Load(), err)
		}
	}
	clock.Set(t0.Add(time.Minute))
	out, err := r.RunInterval(context.Background(), p.Jobs["load"], iv, RunOptions{Only: true})
	if err != nil || !out.Ran || runs.Load() != 1 || out.Record.Attempt != 2 || out.Record.Instance != "b" {
		t.Fatalf("a lease after first seeing it: %+v runs=%d err=%v", out, runs.Load(), err)
	}
}

// An instance whose lease was taken over stops its run with
// ErrLeaseLost and does not overwrite the new owner's record.
func TestLeaseLostStopsTheRun(t *testing.T) {
	started := make(chan struct{})
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	clock := newFakeClock(t0)
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "a", LeaseTTL: 3 * time.Minute}
	iv := p.Jobs["load"].Schedule.Latest(t0)
	done := wait(func() error {
		_, err := r.RunInterval(context.Background(), p.Jobs["load"], iv, RunOptions{Only: true})
		return err
	})
	<-started
	clock.WaitTimers(context.Background(), 1)
	// Another instance, believing the lease expired, takes it over.
	rec, etag, _ := h.Get(context.Background(), "load", iv.Key())
	rec.Instance, rec.Attempt = "b", 2
	if _, err := h.put(context.Background(), rec, cloud.PutOptions{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // the heartbeat finds out
	if err := <-done; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("err = %v, want ErrLeaseLost", err)
	}
	if now, _, _ := h.Get(context.Background(), "load", iv.Key()); now.Instance != "b" || now.Status != StatusRunning {
		t.Fatalf("record after the loser stopped: %+v", now)
	}
}

// A job after a skipped interval is skipped too, with the reason: a skip
// is no failure, and upstream_failed would count one.
func TestDownstreamOfASkippedIntervalIsSkipped(t *testing.T) {
	ran := false
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		ran = true
		return nil, nil
	})
	iv := p.Jobs["load"].Schedule.Latest(t0)
	if _, err := h.put(context.Background(), Record{Job: "load", Interval: iv.Key(), Start: iv.Start, End: iv.End, ID: "skipped-" + iv.Key(),
		Instance: "a", Status: StatusSkipped, Error: "missed while no instance ran", Started: t0, Ended: t0}, cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "b"}
	outs, err := r.Run(context.Background(), p.Jobs["sum"], iv, RunOptions{})
	if err != nil || len(outs) != 1 || outs[0].Record.Status != StatusSkipped || outs[0].Record.Error != "upstream load: skipped" || ran {
		t.Fatalf("outcomes %+v, %v (job ran: %v); want sum skipped, not run, no error", outs, err, ran)
	}
}

// A rerun of a succeeded interval that is cancelled (the admin API, a
// shutdown) leaves the success standing, with a note: before, the record
// said cancelled, and the interval looked undone though its data was
// there.
func TestCancelledRerunKeepsTheSuccess(t *testing.T) {
	var calls atomic.Int32
	started := make(chan struct{}, 1)
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if calls.Add(1) == 1 {
			return map[string]any{"rows": float64(7)}, nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "a"}
	job := p.Jobs["load"]
	iv := job.Schedule.Latest(t0)
	first, err := r.RunInterval(context.Background(), job, iv, RunOptions{Only: true})
	if err != nil || first.Record.Status != StatusSucceeded {
		t.Fatalf("first run: %+v, %v", first, err)
	}
	done := wait(func() error {
		_, err := r.RunInterval(context.Background(), job, iv, RunOptions{Only: true, Rerun: true})
		return err
	})
	<-started
	running := r.Running()
	if len(running) != 1 || !r.Cancel(running[0].ID) {
		t.Fatalf("no rerun to cancel: %+v", running)
	}
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Fatalf("rerun: %v, want ErrCancelled", err)
	}
	rec, _, err := h.Get(context.Background(), "load", iv.Key())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusSucceeded || summaryOf(t, rec)["rows"] != float64(7) || !rec.Ended.Equal(first.Record.Ended) || rec.Attempt != 2 ||
		!strings.Contains(rec.Note, "rerun (attempt 2, instance a) cancelled") {
		t.Fatalf("record after a cancelled rerun: %+v; want the first success, attempt 2, a note", rec)
	}
	// The interval is done: a plain run leaves it alone.
	if out, err := r.RunInterval(context.Background(), job, iv, RunOptions{Only: true}); err != nil || out.Ran {
		t.Fatalf("a run after the cancelled rerun: ran=%v err=%v; want it found done", out.Ran, err)
	}
}

// One damaged run record does not hide the history: List returns the
// others and an error naming the damaged one.
func TestListSkipsAnUnreadableRecord(t *testing.T) {
	p, h, kinds := lake(t, dailyPipeline, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "a"}
	job := p.Jobs["load"]
	ctx := context.Background()
	for d := range 3 {
		if _, err := r.RunInterval(ctx, job, job.Schedule.Latest(t0.AddDate(0, 0, -d)), RunOptions{Only: true}); err != nil {
			t.Fatal(err)
		}
	}
	bad := job.Schedule.Latest(t0.AddDate(0, 0, -1)).Key()
	data := []byte(`{"job": "load", "status": "succ`)
	if _, err := h.Store.Put(ctx, runsPrefix+"load/"+bad, bytes.NewReader(data), int64(len(data)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err := h.List(ctx, "")
	if !errors.Is(err, ErrUnreadableRecord) || !strings.Contains(err.Error(), "load/"+bad) {
		t.Fatalf("List error %v; want ErrUnreadableRecord naming load/%s", err, bad)
	}
	if len(recs) != 2 {
		t.Fatalf("List returned %d records, want the 2 readable ones", len(recs))
	}
	for _, rec := range recs {
		if rec.Interval == bad {
			t.Fatalf("the unreadable record %s was listed", bad)
		}
	}
}

// A job's error says what the scheduler may do: a permanent one (bad
// input, a verification failure) fails the run at its first attempt,
// retries or not; a transient one is retried. The record names the class.
func TestPermanentErrorsAreNotRetried(t *testing.T) {
	src := "lake: lake\njobs:\n  load:\n    schedule: \"@daily\"\n    task: {}\n    retries: {max: 3, backoff: 1ms, max_backoff: 1ms}\n"
	for _, c := range []struct {
		err      error
		attempts int32
		class    string
	}{
		{Permanent(errors.New("verify: checksum differs")), 1, "permanent"},
		{Transient(errors.New("store: SlowDown")), 4, "transient"},
		{errors.New("unclassified"), 4, "transient"},
	} {
		var attempts atomic.Int32
		p, h, kinds := lake(t, src, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
			attempts.Add(1)
			return nil, c.err
		})
		r := &Runner{Pipeline: p, Kinds: kinds, History: h, Instance: "a", Jitter: func() float64 { return 0 }}
		out, err := r.RunInterval(context.Background(), p.Jobs["load"], p.Jobs["load"].Schedule.Latest(t0), RunOptions{Only: true})
		if err == nil || attempts.Load() != c.attempts || out.Record.Status != StatusFailed || out.Record.ErrorClass != c.class {
			t.Errorf("%v: %d attempts, record %s/%s, err %v; want %d attempts, failed, %s", c.err, attempts.Load(), out.Record.Status, out.Record.ErrorClass, err, c.attempts, c.class)
		}
		if c.class == "permanent" && !errors.Is(err, ErrPermanent) {
			t.Errorf("the run's error %v does not say it is permanent", err)
		}
	}
}
