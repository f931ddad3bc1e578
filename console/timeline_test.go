package console

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sluice-data/sluice/scheduler"
)

// A job that runs every 20 seconds has thousands of runs in a day: its
// lane draws at most maxLaneBars bars, which account for every run; the
// slot holding its one failed run shows as failed, in colour and in
// text; a run alone in its slot keeps its own bar, hover and link, its
// error shown as text.
func TestTimelineBoundsABusyLane(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	from := now.Add(-timelineSpan)
	const every = 20 * time.Second
	lonely := from.Add(6 * time.Hour) // a gap of an hour around it
	failedAt := from.Add(15*time.Hour + 40*time.Second)
	var recs []scheduler.Record
	add := func(start time.Time, st scheduler.Status, errText string) {
		iv := scheduler.Interval{Start: start, End: start.Add(every)}
		rec := scheduler.Record{Job: "busy", Interval: iv.Key(), Start: iv.Start, End: iv.End, Attempt: 1, Instance: "node-7",
			Status: st, Error: errText, Started: iv.End, Ended: iv.End.Add(2 * time.Second)}
		if st == scheduler.StatusRunning {
			rec.Ended = time.Time{}
		}
		recs = append([]scheduler.Record{rec}, recs...) // newest first, as the index holds them
	}
	for at := from; at.Before(now.Add(-every)); at = at.Add(every) {
		switch {
		case at.After(lonely.Add(-30*time.Minute)) && at.Before(lonely.Add(30*time.Minute)):
		case at.Equal(failedAt):
			add(at, scheduler.StatusFailed, "read landing file: connection reset")
		default:
			add(at, scheduler.StatusSucceeded, "")
		}
	}
	add(lonely, scheduler.StatusFailed, "bad input <script>alert(1)</script>")
	if len(recs) < 4000 {
		t.Fatalf("the lane has %d runs; the test wants thousands", len(recs))
	}

	tl := drawTimeline([]string{"busy"}, map[string]scheduler.JobRuns{"busy": {Job: "busy", Runs: recs}}, now)
	if len(tl.Lanes) != 1 {
		t.Fatalf("%d lanes, want 1", len(tl.Lanes))
	}
	svg := string(tl.Lanes[0].Bars)
	if strings.Contains(svg, "<script>") {
		t.Errorf("a run's error text reached the page as markup")
	}
	doc, err := html.Parse(strings.NewReader("<svg>" + svg + "</svg>"))
	if err != nil {
		t.Fatal(err)
	}
	bars := find(doc, sel("rect", "class", "bar"))
	if len(bars) > maxLaneBars || len(bars) != tl.Bars {
		t.Errorf("%d bars (counted %d) for %d runs; want at most %d", len(bars), tl.Bars, len(recs), maxLaneBars)
	}
	var runs int
	var failedBars []string
	for _, bar := range bars {
		n, err := strconv.Atoi(attr(bar, "data-runs"))
		if err != nil || n < 1 {
			t.Fatalf("bar %v: data-runs %q", bar.Attr, attr(bar, "data-runs"))
		}
		runs += n
		st, href, title := attr(bar, "data-status"), attr(bar.Parent, "href"), text(one(t, "title", find(bar, sel("title"))))
		if !hasClass(bar, "st-"+st) || !strings.Contains(title, st) {
			t.Errorf("bar %v titled %q: its status is not both its class and in its text", bar.Attr, title)
		}
		if st == "failed" {
			failedBars = append(failedBars, href+" "+title)
		}
	}
	if runs != len(recs) {
		t.Errorf("the bars stand for %d runs, the lane has %d", runs, len(recs))
	}
	if len(failedBars) != 2 {
		t.Fatalf("failed bars %q, want the merged slot and the lone run", failedBars)
	}
	merged, alone := failedBars[1], failedBars[0]
	if !strings.HasPrefix(merged, "/runs?job=busy ") || !strings.Contains(merged, " runs, 1 failed") || !strings.Contains(merged, "1 failed, ") {
		t.Errorf("the merged slot's failed bar: %q; want a link to the job's runs, saying N runs, 1 failed", merged)
	}
	want := fmt.Sprintf("/runs/busy/%s busy %s failed attempt 1 instance node-7", scheduler.Interval{Start: lonely}.Key(), scheduler.Interval{Start: lonely}.Key())
	if !strings.HasPrefix(alone, want) || !strings.Contains(alone, "error: bad input <script>alert(1)</script>") {
		t.Errorf("the lone run's bar: %q; want it to start %q and show its error as text", alone, want)
	}
}
