package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/scheduler"
)

// stripLen is how many runs a job's strip and trend show.
const stripLen = 30

// Geometry of the drawings, in SVG user units.
const (
	trendW, trendH = 120, 24
	laneLabelW     = 180
	laneW          = 820
	laneH          = 18
	laneGap        = 4
	axisH          = 20
	minBarW        = 3.0
)

// recent returns every job's index, read at most once per runsTTL.
// Runs this instance has going are laid over it: they are newer than
// any index read.
func (c *Console) recent(ctx context.Context) (map[string]scheduler.JobRuns, error) {
	c.runsMu.Lock()
	defer c.runsMu.Unlock()
	if c.runs == nil || time.Since(c.runsAt) >= runsTTL {
		runs, err := c.Server.Runner.History.RecentAll(ctx, c.Server.Runner.Pipeline.Order)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read the run index: %w", ctx.Err())
		}
		c.runs, c.runErr, c.runsAt = runs, err, time.Now()
	}
	out := make(map[string]scheduler.JobRuns, len(c.runs))
	for k, v := range c.runs {
		out[k] = v
	}
	for _, rec := range c.Server.Runner.Running() {
		jr := out[rec.Job]
		jr.Job = rec.Job
		runs := slices.Clone(jr.Runs)
		if i := slices.IndexFunc(runs, func(x scheduler.Record) bool { return x.Interval == rec.Interval }); i >= 0 {
			runs[i] = rec
		} else {
			runs = append([]scheduler.Record{rec}, runs...)
			slices.SortStableFunc(runs, func(a, b scheduler.Record) int { return strings.Compare(b.Interval, a.Interval) })
		}
		jr.Runs = runs
		out[rec.Job] = jr
	}
	return out, c.runErr
}

// forgetRuns makes the next page read the index again (after an action).
func (c *Console) forgetRuns() {
	c.runsMu.Lock()
	c.runs = nil
	c.runsMu.Unlock()
}

// jobRow is one job on the jobs page.
type jobRow struct {
	Name, Kind, Schedule, Next string
	After                      []string
	// Status is the newest interval's ("" when it never ran).
	Status string
	Strip  []scheduler.Record // oldest first
	Trend  trend
}

// trend is a job's durations drawn as a polyline.
type trend struct {
	W, H   int
	Points string
	Label  string
}

type indexData struct {
	Jobs     []jobRow
	Timeline timeline
	Error    string
}

func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	runs, err := c.recent(r.Context())
	now := c.now()
	d := indexData{}
	if err != nil {
		d.Error = err.Error()
	}
	p := c.Server.Runner.Pipeline
	for _, name := range p.Order {
		d.Jobs = append(d.Jobs, c.jobRow(p.Jobs[name], runs[name].Runs, now))
	}
	d.Timeline = drawTimeline(p.Order, runs, now)
	c.render(w, http.StatusOK, "index", c.newPage(w, r, "Jobs", "jobs", d))
}

func (c *Console) jobRow(j *scheduler.Job, runs []scheduler.Record, now time.Time) jobRow {
	row := jobRow{Name: j.Name, Kind: j.Kind, Schedule: j.Spec, After: j.After}
	if j.Schedule != nil {
		loc := j.Schedule.Location()
		if loc == nil {
			loc = time.UTC
		}
		if next := j.Schedule.Next(now); !next.IsZero() {
			row.Next = next.In(loc).Format("2006-01-02 15:04:05 MST")
		}
	}
	if len(runs) > 0 {
		row.Status = string(runs[0].Status)
	}
	strip := runs[:min(len(runs), stripLen)]
	row.Strip = make([]scheduler.Record, len(strip))
	for i, rec := range strip {
		row.Strip[len(strip)-1-i] = rec
	}
	row.Trend = drawTrend(row.Strip, now)
	return row
}

// duration is how long rec ran (so far, when it runs).
func duration(rec scheduler.Record, now time.Time) time.Duration {
	if rec.Started.IsZero() {
		return 0
	}
	end := rec.Ended
	if end.IsZero() {
		end = now
	}
	return max(end.Sub(rec.Started), 0)
}

func drawTrend(runs []scheduler.Record, now time.Time) trend {
	t := trend{W: trendW, H: trendH, Label: "no runs yet"}
	if len(runs) == 0 {
		return t
	}
	var longest time.Duration
	ds := make([]time.Duration, len(runs))
	for i, rec := range runs {
		ds[i] = duration(rec, now)
		longest = max(longest, ds[i])
	}
	var pts strings.Builder
	step := float64(trendW-2) / float64(max(stripLen-1, 1))
	for i, d := range ds {
		y := float64(trendH - 2)
		if longest > 0 {
			y = 2 + float64(trendH-4)*(1-float64(d)/float64(longest))
		}
		fmt.Fprintf(&pts, "%.1f,%.1f ", 1+step*float64(i), y)
	}
	t.Points = strings.TrimSpace(pts.String())
	shortest := slices.Min(ds)
	t.Label = fmt.Sprintf("durations of the last %d runs, oldest first: shortest %s, longest %s, latest %s",
		len(ds), roundDur(shortest), roundDur(longest), roundDur(ds[len(ds)-1]))
	return t
}

// timeline is the last day's runs, a lane per job that ran then.
type timeline struct {
	W, H     int
	From, To string
	Lanes    []lane
	Ticks    []tick
}

type lane struct {
	Job    string
	Y      int
	LabelY int
	Bars   []bar
}

type bar struct {
	Job, Interval, Status string
	X, W                  string
	Y, H                  int
	Title                 string
}

type tick struct {
	X     string
	Label string
}

// drawTimeline lays out the runs of jobs (in order) that ran in the day
// before now: a bar from a run's start to its end (now, while it runs).
func drawTimeline(jobs []string, runs map[string]scheduler.JobRuns, now time.Time) timeline {
	from := now.Add(-24 * time.Hour)
	t := timeline{W: laneLabelW + laneW, From: from.UTC().Format(time.RFC3339), To: now.UTC().Format(time.RFC3339)}
	x := func(at time.Time) float64 {
		return laneLabelW + laneW*float64(at.Sub(from))/float64(24*time.Hour)
	}
	for h := 0; h <= 24; h += 3 {
		at := from.Add(time.Duration(h) * time.Hour)
		t.Ticks = append(t.Ticks, tick{X: fmt.Sprintf("%.1f", x(at)), Label: at.UTC().Format("15:04")})
	}
	y := axisH
	for _, job := range jobs {
		var bars []bar
		for _, rec := range runs[job].Runs {
			start, end := rec.Started, rec.Ended
			if start.IsZero() {
				start = end
			}
			if end.IsZero() || rec.Status == scheduler.StatusRunning {
				end = now
			}
			if start.IsZero() || end.Before(from) || start.After(now) {
				continue
			}
			// A short run still gets a bar one can see and point at, kept
			// inside the drawing (a run that just ended is at its edge).
			x0, x1 := x(later(start, from)), x(earlier(end, now))
			w := max(x1-x0, minBarW)
			x0 = min(x0, laneLabelW+laneW-w)
			bars = append(bars, bar{Job: job, Interval: rec.Interval, Status: string(rec.Status),
				X: fmt.Sprintf("%.1f", x0), W: fmt.Sprintf("%.1f", w), Y: y + 2, H: laneH - 4, Title: barTitle(rec, now)})
		}
		if len(bars) == 0 {
			continue
		}
		t.Lanes = append(t.Lanes, lane{Job: job, Y: y, LabelY: y + laneH - 5, Bars: bars})
		y += laneH + laneGap
	}
	t.H = y + 4
	return t
}

// barTitle is what hovering a bar shows.
func barTitle(rec scheduler.Record, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s attempt %d instance %s", rec.Job, rec.Interval, statusText(string(rec.Status)), rec.Attempt, rec.Instance)
	fmt.Fprintf(&b, "\nstarted %s, %s", fmtTime(rec.Started), roundDur(duration(rec, now)))
	if rec.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", clip(rec.Error, 300))
	}
	if len(rec.Summary) > 0 {
		fmt.Fprintf(&b, "\nsummary: %s", clip(string(rec.Summary), 300))
	}
	return b.String()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
