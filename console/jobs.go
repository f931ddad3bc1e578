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

// Geometry of the duration trend, in SVG user units.
const trendW, trendH = 120, 24

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
	Jobs []jobRow
	// Timeline is drawn when the template reaches it, after the jobs
	// table has left: the page's first bytes do not wait for it.
	Timeline timelineOf
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
	d.Timeline = timelineOf{jobs: p.Order, runs: runs, now: now}
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
