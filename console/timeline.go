package console

import (
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/scheduler"
)

// Geometry of the timeline, in SVG user units (about a pixel each at
// the page's usual width).
const (
	laneLabelW = 180
	laneW      = 820
	laneH      = 18
	laneGap    = 4
	axisH      = 20
	minBarW    = 3.0
)

// timelineSpan is how far back the timeline goes.
const timelineSpan = 24 * time.Hour

// timelineSlot is the finest time a lane tells apart: the runs that
// start in one slot are drawn as one bar. A slot is about as wide as
// the narrowest bar (laneW/288 ≈ 2.8 units), so runs it merges would
// have been drawn on top of one another anyway, and a lane never holds
// more than maxLaneBars bars however often its job runs.
const timelineSlot = 5 * time.Minute

// maxLaneBars bounds the bars of one lane.
const maxLaneBars = int(timelineSpan / timelineSlot)

// timeline is the last day's runs, a lane per job that ran then.
type timeline struct {
	W, H     int
	From, To string
	Lanes    []lane
	Ticks    []tick
	// Bars counts the bars of all lanes.
	Bars int
}

type lane struct {
	Job    string
	Y      int
	LabelY int
	// Bars is the lane's bars as SVG: drawn here rather than by the
	// template because a busy lake has tens of thousands of them, and
	// every value in it is escaped as html/template would.
	Bars template.HTML
}

// bar is one bar of a lane: a run, or the runs that started in one
// slot.
type bar struct {
	Href, Status, Title string
	X0, X1              float64
	// Runs is how many runs the bar stands for; Failed how many of them
	// failed (their upstream included).
	Runs, Failed int
}

type tick struct {
	X      string
	Label  string
	Anchor string
}

// timelineOf is what a timeline is drawn from.
type timelineOf struct {
	jobs []string
	runs map[string]scheduler.JobRuns
	now  time.Time
}

// Draw draws the timeline (the template calls it).
func (o timelineOf) Draw() timeline { return drawTimeline(o.jobs, o.runs, o.now) }

// slotted is one run placed on its lane.
type slotted struct {
	slot       int
	start, end time.Time
	rec        *scheduler.Record
}

// drawTimeline lays out the runs of jobs (in order) that ran in the day
// before now: a bar from a run's start to its end (now, while it runs),
// and, for a slot in which several runs started, one bar for them all,
// coloured by the worst status among them.
func drawTimeline(jobs []string, runs map[string]scheduler.JobRuns, now time.Time) timeline {
	from := now.Add(-timelineSpan)
	t := timeline{W: laneLabelW + laneW, From: from.UTC().Format(time.RFC3339), To: now.UTC().Format(time.RFC3339)}
	x := func(at time.Time) float64 {
		return laneLabelW + laneW*float64(at.Sub(from))/float64(timelineSpan)
	}
	for h := 0; h <= 24; h += 3 {
		at := from.Add(time.Duration(h) * time.Hour)
		anchor := "middle"
		switch h {
		case 0:
			anchor = "start"
		case 24:
			anchor = "end" // inside the drawing, not cut at its edge
		}
		t.Ticks = append(t.Ticks, tick{X: fmt.Sprintf("%.1f", x(at)), Label: at.UTC().Format("15:04"), Anchor: anchor})
	}
	y := axisH
	var placed []slotted
	var b strings.Builder
	for _, job := range jobs {
		placed = placed[:0]
		recs := runs[job].Runs
		for i := range recs {
			rec := &recs[i]
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
			start, end = later(start, from), earlier(end, now)
			slot := min(max(int(start.Sub(from)/timelineSlot), 0), maxLaneBars-1)
			placed = append(placed, slotted{slot: slot, start: start, end: end, rec: rec})
		}
		if len(placed) == 0 {
			continue
		}
		slices.SortFunc(placed, func(a, b slotted) int {
			if a.slot != b.slot {
				return a.slot - b.slot
			}
			return a.start.Compare(b.start)
		})
		b.Reset()
		for i := 0; i < len(placed); {
			j := i + 1
			for j < len(placed) && placed[j].slot == placed[i].slot {
				j++
			}
			var br bar
			if j-i == 1 {
				br = runBar(placed[i].rec, now)
			} else {
				br = slotBar(job, placed[i:j])
			}
			br.X0, br.X1 = x(placed[i].start), x(placed[i].end)
			for _, p := range placed[i:j] {
				br.X1 = max(br.X1, x(p.end))
			}
			writeBar(&b, br, y+2, laneH-4)
			t.Bars++
			i = j
		}
		t.Lanes = append(t.Lanes, lane{Job: job, Y: y, LabelY: y + laneH - 5, Bars: template.HTML(b.String())})
		y += laneH + laneGap
	}
	t.H = y + 4
	return t
}

// runBar is the bar of one run: its status, linking to its page.
func runBar(rec *scheduler.Record, now time.Time) bar {
	br := bar{Href: "/runs/" + url.PathEscape(rec.Job) + "/" + url.PathEscape(rec.Interval), Status: string(rec.Status),
		Title: barTitle(*rec, now), Runs: 1}
	if failed(rec.Status) {
		br.Failed = 1
	}
	return br
}

// slotBar is the bar of the runs in one slot: the worst status among
// them, the count of each, linking to the job's runs.
func slotBar(job string, runs []slotted) bar {
	br := bar{Href: "/runs?job=" + url.QueryEscape(job), Runs: len(runs)}
	counts := map[scheduler.Status]int{}
	worst := runs[0].rec.Status
	first := runs[0].start
	for _, p := range runs {
		st := p.rec.Status
		counts[st]++
		if failed(st) {
			br.Failed++
		}
		if severity(st) > severity(worst) {
			worst = st
		}
	}
	br.Status = string(worst)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d runs, %d failed, worst %s", job, br.Runs, br.Failed, statusText(worst))
	sts := make([]scheduler.Status, 0, len(counts))
	for st := range counts {
		sts = append(sts, st)
	}
	slices.SortFunc(sts, func(a, b scheduler.Status) int { return severity(b) - severity(a) })
	var each []string
	for _, st := range sts {
		each = append(each, fmt.Sprintf("%d %s", counts[st], statusText(st)))
	}
	fmt.Fprintf(&b, " (%s)\nstarted from %s to %s\nfollow for the job's runs", strings.Join(each, ", "),
		fmtTime(first), fmtTime(runs[len(runs)-1].start))
	br.Title = b.String()
	return br
}

// severity orders statuses for a merged bar's colour: the worst shows.
func severity(st scheduler.Status) int {
	switch st {
	case scheduler.StatusFailed:
		return 6
	case scheduler.StatusUpstreamFailed:
		return 5
	case scheduler.StatusRunning:
		return 4
	case scheduler.StatusCancelled:
		return 3
	case scheduler.StatusSkipped:
		return 2
	case scheduler.StatusSucceeded:
		return 1
	}
	return 0
}

func failed(st scheduler.Status) bool {
	return st == scheduler.StatusFailed || st == scheduler.StatusUpstreamFailed
}

// writeBar writes br as a link around a rect, the bar at least minBarW
// wide and inside the drawing (a run that just ended is at its edge).
// Every text is escaped for an attribute or an element's text.
func writeBar(b *strings.Builder, br bar, y, h int) {
	w := max(br.X1-br.X0, minBarW)
	x0 := min(br.X0, laneLabelW+laneW-w)
	esc := template.HTMLEscapeString
	st := esc(br.Status)
	fmt.Fprintf(b, `<a href="%s"><rect class="bar st-%s" data-status="%s" data-runs="%d" data-failed="%d" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect></a>`,
		esc(br.Href), st, st, br.Runs, br.Failed, x0, y, w, h, esc(br.Title))
}

// barTitle is what hovering a run's bar shows (its summary is on its
// page: tens of thousands of bars would carry it in vain).
func barTitle(rec scheduler.Record, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s attempt %d instance %s", rec.Job, rec.Interval, statusText(string(rec.Status)), rec.Attempt, rec.Instance)
	fmt.Fprintf(&b, "\nstarted %s, %s", fmtTime(rec.Started), roundDur(duration(rec, now)))
	if rec.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", clip(rec.Error, 300))
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
