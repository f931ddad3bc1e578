package console

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/scheduler"
)

// maxRunRows bounds the rows of the runs page: the newest that match.
const maxRunRows = 500

// statuses are the run statuses, for the filter.
var statuses = []scheduler.Status{scheduler.StatusRunning, scheduler.StatusSucceeded, scheduler.StatusFailed,
	scheduler.StatusCancelled, scheduler.StatusUpstreamFailed, scheduler.StatusSkipped}

type runRow struct {
	scheduler.Record
	Duration string
	// Cancel: the run runs on this instance, and may be cancelled here.
	Cancel bool
}

type runsData struct {
	Jobs     []string
	Statuses []scheduler.Status
	Job      string
	Status   string
	Rows     []runRow
	// Matched counts the runs that match, of which Rows are the newest.
	Matched int
	Error   string
}

// runList is the runs the index holds (each job's last 30 intervals and
// last day's runs), newest start first, filtered by job and status.
func (c *Console) runList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := runsData{Jobs: c.Server.Runner.Pipeline.Order, Statuses: statuses, Job: q.Get("job"), Status: q.Get("status")}
	runs, err := c.recent(r.Context())
	if err != nil {
		d.Error = err.Error()
	}
	here := map[string]bool{}
	for _, rec := range c.Server.Runner.Running() {
		here[rec.ID] = true
	}
	var recs []scheduler.Record
	for _, job := range d.Jobs {
		if d.Job != "" && job != d.Job {
			continue
		}
		for _, rec := range runs[job].Runs {
			if d.Status == "" || string(rec.Status) == d.Status {
				recs = append(recs, rec)
			}
		}
	}
	slices.SortStableFunc(recs, func(a, b scheduler.Record) int { return startOf(b).Compare(startOf(a)) })
	d.Matched = len(recs)
	now := c.now()
	for _, rec := range recs[:min(len(recs), maxRunRows)] {
		d.Rows = append(d.Rows, runRow{Record: rec, Duration: roundDur(duration(rec, now)),
			Cancel: rec.Status == scheduler.StatusRunning && here[rec.ID]})
	}
	c.render(w, http.StatusOK, "runs", c.newPage(w, r, "Runs", "runs", d))
}

// startOf is when rec's run started, or, when it never did, ended.
func startOf(rec scheduler.Record) time.Time {
	if rec.Started.IsZero() {
		return rec.Ended
	}
	return rec.Started
}

type runData struct {
	Job, Interval string
	Record        *scheduler.Record
	ETag          string
	Duration      string
	Summary       string
	Cancel        bool
	Error         string
}

// runPage is one run's record, read from the lake.
func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	d := runData{Job: r.PathValue("job"), Interval: r.PathValue("interval")}
	code := http.StatusOK
	rec, etag, err := c.Server.Runner.History.Get(r.Context(), d.Job, d.Interval)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		code, d.Error = http.StatusNotFound, "No run record for job "+d.Job+", interval "+d.Interval+": it never ran."
	case err != nil:
		code, d.Error = http.StatusInternalServerError, err.Error()
	default:
		d.Record, d.ETag = &rec, etag
		d.Duration = roundDur(duration(rec, c.now()))
		d.Summary = prettyJSON(rec.Summary)
		for _, x := range c.Server.Runner.Running() {
			d.Cancel = d.Cancel || (x.ID == rec.ID && rec.Status == scheduler.StatusRunning)
		}
	}
	c.render(w, code, "run", c.newPage(w, r, "Run "+d.Job+" "+d.Interval, "runs", d))
}
