package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

const hourlyPipeline = "lake: %s\njobs:\n  load:\n    schedule: \"CRON_TZ=UTC @hourly\"\n    task: {}\n"

// indexLake parses an hourly pipeline over a fresh lake of kind (local
// or s3) whose task runs fn.
func indexLake(t *testing.T, kind string, fn func(ctx context.Context, j *Job, iv Interval) (map[string]any, error)) (*Pipeline, *History, map[string]Kind) {
	t.Helper()
	kinds := map[string]Kind{"task": funcKind{run: fn}}
	p, err := Parse("p.yaml", []byte(fmt.Sprintf(hourlyPipeline, testenv.Location(t, kind))), kinds, env(nil))
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

// hour is interval n of the hourly job: [t0+n h, t0+(n+1) h).
func hour(n int) Interval {
	return Interval{Start: t0.Add(time.Duration(n) * time.Hour), End: t0.Add(time.Duration(n+1) * time.Hour)}
}

// hourOf is the n of hour(n) that rec records.
func hourOf(rec Record) int { return int(rec.Start.Sub(t0) / time.Hour) }

// listed prints an index's runs as "hour status attempt" lines.
func listed(jr JobRuns) string {
	var b strings.Builder
	for _, r := range jr.Runs {
		fmt.Fprintf(&b, "%d %s %d\n", hourOf(r), r.Status, r.Attempt)
	}
	return b.String()
}

// ranIndexedLake runs hours 0 to 39 of the hourly job through a Runner,
// each at its end on a test clock: every tenth from the 3rd fails, every
// tenth from the 7th is cancelled, the rest succeed. Then hour 0 runs
// again (--rerun) an hour after the last. It returns the history and
// what its index must list: the 30 newest intervals, and hour 0, whose
// rerun started in the last day; hours 1 to 9 neither.
func ranIndexedLake(t *testing.T, kind string) (*History, string) {
	var r *Runner
	p, h, kinds := indexLake(t, kind, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		switch hourOf(Record{Start: iv.Start}) % 10 {
		case 3:
			return nil, Permanent(fmt.Errorf("bad input in hour %s", iv.Key()))
		case 7:
			r.Cancel(RunID(ctx))
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]any{"rows": 1}, nil
	})
	clock := newFakeClock(t0)
	r = &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, Instance: "a"}
	job := p.Jobs["load"]
	status := map[int]Status{}
	for n := range 40 {
		clock.Set(hour(n).End)
		out, _ := r.RunInterval(context.Background(), job, hour(n), RunOptions{Only: true})
		if !out.Ran {
			t.Fatalf("hour %d did not run: %+v", n, out.Record)
		}
		status[n] = out.Record.Status
	}
	clock.Set(hour(40).End)
	if out, err := r.RunInterval(context.Background(), job, hour(0), RunOptions{Only: true, Rerun: true}); err != nil || out.Record.Attempt != 2 {
		t.Fatalf("rerun of hour 0: %+v, %v", out.Record, err)
	}
	var want strings.Builder
	for n := 39; n >= 10; n-- {
		fmt.Fprintf(&want, "%d %s 1\n", n, status[n])
	}
	want.WriteString("0 succeeded 2\n")
	return h, want.String()
}

// After runs that succeed, fail and are cancelled, the job's index lists
// each with its status, newest interval first: its newest 30 intervals
// and every run started in the last day (an old interval rerun now), no
// more; a failed run keeps its error. Listing the run records does not
// see the index. On local disk and on the S3 test server.
func TestRecentListsRunsNewestFirst(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			h, want := ranIndexedLake(t, kind)
			ctx := context.Background()
			jr, err := h.Recent(ctx, "load")
			if err != nil {
				t.Fatal(err)
			}
			if got := listed(jr); got != want {
				t.Fatalf("index lists\n%s\nwant\n%s", got, want)
			}
			for _, r := range jr.Runs {
				if r.Status == StatusFailed && !strings.Contains(r.Error, "bad input in hour "+r.Interval) {
					t.Errorf("failed run %s: error %q", r.Interval, r.Error)
				}
			}
			if jr.Job != "load" || jr.Updated.IsZero() {
				t.Errorf("index names job %q, updated %v", jr.Job, jr.Updated)
			}
			recs, err := h.List(ctx, "")
			if err != nil || len(recs) != 40 {
				t.Errorf("List sees %d records (%v), want the 40 run records and no index", len(recs), err)
			}
			all, err := h.RecentAll(ctx, []string{"load", "load"})
			if err != nil || len(all) != 1 || listed(all["load"]) != want {
				t.Errorf("RecentAll: %v, %v", all, err)
			}
		})
	}
}

// A missing index, and one that is not JSON, are rebuilt from the run
// records by Recent, and written back.
func TestRecentRebuildsAMissingOrUnreadableIndex(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			h, want := ranIndexedLake(t, kind)
			ctx := context.Background()
			for _, damage := range []string{"missing", "unreadable"} {
				var err error
				if damage == "missing" {
					err = h.Store.Delete(ctx, indexKey("load"))
				} else {
					_, err = h.Store.Put(ctx, indexKey("load"), strings.NewReader("{not json"), -1, cloud.PutOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
				jr, err := h.Recent(ctx, "load")
				if err != nil || listed(jr) != want {
					t.Fatalf("%s index: Recent lists\n%s(%v), want\n%s", damage, listed(jr), err, want)
				}
				if back, _, err := h.readIndex(ctx, "load"); err != nil || listed(back) != want {
					t.Fatalf("%s index: the rebuilt one was not written back: %v", damage, err)
				}
			}
		})
	}
}

// An index made stale (records written straight to the store, as a crash
// between a record's write and its index's leaves it) is corrected by
// RebuildIndex: a changed record and a new one show.
func TestRebuildIndexCorrectsAStaleIndex(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) {
			h, want := ranIndexedLake(t, kind)
			ctx := context.Background()
			rec, _, err := h.Get(ctx, "load", hour(39).Key())
			if err != nil {
				t.Fatal(err)
			}
			rec.Status, rec.Attempt, rec.Error = StatusFailed, 2, "failed on the second attempt"
			added := Record{Job: "load", Interval: hour(41).Key(), Start: hour(41).Start, End: hour(41).End, ID: "new", Attempt: 1,
				Status: StatusRunning, Started: hour(66).End}
			for _, r := range []Record{rec, added} {
				data, _ := json.Marshal(r)
				if _, err := h.Store.Put(ctx, recordKey(r.Job, r.Interval), bytes.NewReader(data), int64(len(data)), cloud.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if jr, err := h.Recent(ctx, "load"); err != nil || listed(jr) != want {
				t.Fatalf("before the rebuild, the index should be the stale one: %v\n%s", err, listed(jr))
			}
			jr, err := h.RebuildIndex(ctx, "load")
			if err != nil {
				t.Fatal(err)
			}
			// Hour 41 started a day after hour 0's rerun: the rerun left
			// the last day, and hour 10 the newest 30 intervals.
			fresh := "41 running 1\n39 failed 2\n" + strings.Join(strings.Split(want, "\n")[1:29], "\n") + "\n"
			if got := listed(jr); got != fresh {
				t.Fatalf("rebuilt index lists\n%s\nwant\n%s", got, fresh)
			}
			if again, err := h.Recent(ctx, "load"); err != nil || listed(again) != fresh {
				t.Fatalf("Recent after the rebuild: %v\n%s", err, listed(again))
			}
		})
	}
}

// Two runners on one lake (two processes: a History each) backfill the
// same 24 hours of one job, four at a time, their writes to the job's
// index racing, each update written with its record or by a batch writer
// (flushing every millisecond, then closed): every interval is in the
// index, succeeded.
func TestTwoRunnersLoseNoIndexUpdate(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batched=%v", kind, batched), func(t *testing.T) {
				twoRunnersBackfill(t, kind, batched)
			})
		}
	}
}

func twoRunnersBackfill(t *testing.T, kind string, batched bool) {
	p, h, kinds := indexLake(t, kind, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	clock := newFakeClock(hour(24).End)
	errs := make(chan error, 2)
	for i := range 2 {
		hi := &History{Store: h.Store}
		if batched {
			hi.batchIndex(time.Millisecond)
		}
		r := &Runner{Pipeline: p, Kinds: kinds, History: hi, Clock: clock, Instance: fmt.Sprintf("i%d", i)}
		go func() {
			_, err := r.Backfill(context.Background(), p.Jobs["load"], hour(0).Start, hour(24).Start, 4, RunOptions{})
			errs <- errors.Join(err, hi.Close(context.Background()))
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	jr, _, err := h.readIndex(context.Background(), "load") // as written, not rebuilt
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for n := 23; n >= 0; n-- {
		fmt.Fprintf(&want, "%d succeeded 1\n", n)
	}
	if got := listed(jr); got != want.String() {
		t.Fatalf("index lists\n%s\nwant\n%s", got, want.String())
	}
}

// Serve rebuilds every job's index at its start: a stale one (a record
// written past it) is corrected before the server is ready.
func TestServeRebuildsIndexesAtStart(t *testing.T) {
	p, h, kinds := indexLake(t, testenv.Local, func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) { return nil, nil })
	ctx := context.Background()
	rec := Record{Job: "load", Interval: hour(0).Key(), Start: hour(0).Start, End: hour(0).End, ID: "x", Attempt: 1,
		Status: StatusSucceeded, Started: hour(0).End, Ended: hour(0).End}
	stale := JobRuns{Job: "load"}
	if err := h.writeIndex(ctx, &stale, ""); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rec)
	if _, err := h.Store.Put(ctx, recordKey("load", rec.Interval), bytes.NewReader(data), int64(len(data)), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	clock := newFakeClock(hour(0).End.Add(30 * time.Minute))
	written := make(chan struct{}, 1)
	served := &History{Store: notifyIndex{h.Store, written}}
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: served, Clock: clock, Instance: "a"}}
	done := make(chan error)
	go func() { done <- s.Serve(sctx) }()
	<-s.Ready()
	<-written // nothing else writes the index: hour 0 is done, the next tick not come
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	jr, err := h.Recent(ctx, "load")
	if err != nil || !strings.Contains(listed(jr), "0 succeeded 1\n") {
		t.Fatalf("after serve's start the index lists\n%s(%v); want hour 0 succeeded", listed(jr), err)
	}
}

// What the index keeps of a job's runs, and which of two writes of one
// interval wins.
func TestIndexMergeAndTrim(t *testing.T) {
	at := func(n int, st Status, attempt int, started time.Time) Record {
		return Record{Job: "load", Interval: hour(n).Key(), Start: hour(n).Start, Status: st, Attempt: attempt, Started: started}
	}
	now := t0.Add(1000 * time.Hour)
	t.Run("600 runs of the last day keep the newest 500 intervals", func(t *testing.T) {
		var runs []Record
		for n := range 600 {
			runs = append(runs, at(n, StatusSucceeded, 1, now))
		}
		got := trimRuns(runs)
		if len(got) != 500 || hourOf(got[0]) != 599 || hourOf(got[499]) != 100 {
			t.Fatalf("kept %d, from hour %d to %d", len(got), hourOf(got[0]), hourOf(got[len(got)-1]))
		}
	})
	t.Run("old runs keep the newest 30 intervals", func(t *testing.T) {
		var runs []Record
		for n := range 50 {
			runs = append(runs, at(n, StatusSucceeded, 1, now.Add(time.Duration(n-50)*24*time.Hour)))
		}
		got := trimRuns(runs)
		if len(got) != 30 || hourOf(got[0]) != 49 || hourOf(got[29]) != 20 {
			t.Fatalf("kept %d, from hour %d to %d", len(got), hourOf(got[0]), hourOf(got[len(got)-1]))
		}
	})
	for _, c := range []struct {
		name      string
		have, put Record
		keep      Status
		changed   bool
	}{
		{"a late running write does not undo the final one", at(1, StatusSucceeded, 1, now), at(1, StatusRunning, 1, now), StatusSucceeded, false},
		{"a takeover's higher attempt replaces a final record", at(1, StatusFailed, 1, now), at(1, StatusRunning, 2, now), StatusRunning, true},
		{"a lower attempt never replaces", at(1, StatusRunning, 3, now), at(1, StatusFailed, 2, now), StatusRunning, false},
		{"at equal attempts the final write replaces the running one", at(1, StatusRunning, 1, now), at(1, StatusFailed, 1, now), StatusFailed, true},
		{"at equal attempts and both final, the later write wins", at(1, StatusSucceeded, 1, now), at(1, StatusFailed, 1, now), StatusFailed, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := mergeRun([]Record{at(2, StatusSucceeded, 1, now), c.have}, c.put)
			if len(got) != 2 || got[1].Status != c.keep || changed != c.changed || hourOf(got[0]) != 2 {
				t.Fatalf("merged %+v (changed %v); want hour 1 %s, changed %v", got, changed, c.keep, c.changed)
			}
		})
	}
}

// A failing index write never fails the record's write.
func TestIndexFailureDoesNotFailTheRecord(t *testing.T) {
	_, h, _ := indexLake(t, testenv.Local, nil)
	h.Store = refuseIndex{h.Store}
	rec := Record{Job: "load", Interval: hour(0).Key(), Start: hour(0).Start, End: hour(0).End, ID: "x", Attempt: 1, Status: StatusRunning, Started: hour(0).End}
	if _, err := h.put(context.Background(), rec, cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("record write failed with its index: %v", err)
	}
	if _, _, err := h.Get(context.Background(), "load", rec.Interval); err != nil {
		t.Fatal(err)
	}
}

// refuseIndex is a store that fails every write of a run index.
type refuseIndex struct{ cloud.Store }

func (s refuseIndex) Put(ctx context.Context, key string, r io.Reader, size int64, opts cloud.PutOptions) (cloud.ObjectInfo, error) {
	if strings.HasPrefix(key, runIndexPrefix) {
		return cloud.ObjectInfo{}, errors.New("index writes refused")
	}
	return s.Store.Put(ctx, key, r, size, opts)
}

// notifyIndex is a store that signals each write of a run index.
type notifyIndex struct {
	cloud.Store
	written chan<- struct{}
}

func (s notifyIndex) Put(ctx context.Context, key string, r io.Reader, size int64, opts cloud.PutOptions) (cloud.ObjectInfo, error) {
	info, err := s.Store.Put(ctx, key, r, size, opts)
	if err == nil && strings.HasPrefix(key, runIndexPrefix) {
		select {
		case s.written <- struct{}{}:
		default:
		}
	}
	return info, err
}
