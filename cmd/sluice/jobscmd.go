package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/scheduler"
)

// nextTicks is how many coming ticks jobs shows a job.
const nextTicks = 3

func (a *app) jobsCommand() *cobra.Command {
	var f runnerFlags
	cmd := &cobra.Command{
		Use:   "jobs --config pipeline.yaml",
		Short: "List the pipeline's jobs: schedule, next ticks, dependencies and last run",
		Long: `List the jobs of the pipeline file, in file order: each one's kind, schedule
and time zone, its next three ticks (in its zone), the jobs it runs after, and
its last run (interval, status, attempt, when, the error's first line).

The last run comes from the lake's run index (<lake>/_sluice/runindex/), one
read a job, never from every run record; a job whose index is missing has it
rebuilt from its records once.`,
		Example: `  sluice jobs --config pipeline.yaml
  sluice jobs --config pipeline.yaml --json`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			recent, err := r.History.RecentAll(cmd.Context(), r.Pipeline.Order)
			if err != nil {
				return fmt.Errorf("jobs: %w", err)
			}
			now := time.Now()
			jobs := []map[string]any{}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			if !a.jsonOut {
				fmt.Fprintln(tw, "JOB\tKIND\tSCHEDULE\tZONE\tNEXT\tAFTER\tLAST RUN")
			}
			for _, name := range r.Pipeline.Order {
				job := r.Pipeline.Jobs[name]
				loc := job.Schedule.Location()
				ticks := []string{}
				for t, i := now, 0; i < nextTicks; i++ {
					if t = job.Schedule.Next(t); t.IsZero() {
						break
					}
					ticks = append(ticks, t.In(loc).Format(time.RFC3339))
				}
				last := lastRun(recent[name].Runs)
				var lastJSON any
				if last != nil {
					lastJSON = lastRunJSON(*last, loc)
				}
				jobs = append(jobs, map[string]any{"job": name, "kind": job.Kind, "schedule": job.Spec, "zone": loc.String(),
					"next_ticks": ticks, "after": orEmpty(job.After), "last_run": lastJSON})
				if a.jsonOut {
					continue
				}
				after := make([]string, len(job.After))
				for i, u := range job.After {
					after[i] = textName(u)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", textName(name), job.Kind, textName(job.Spec), loc, strings.Join(ticks, " "),
					orDash(strings.Join(after, ",")), lastRunText(last, loc))
			}
			tw.Flush()
			return a.summary(map[string]any{"command": "jobs", "jobs": jobs})
		},
	}
	f.add(cmd, false)
	return cmd
}

// lastRun is the run of runs (an index's) that started last: a rerun of
// an old interval is a job's last run too. nil when there is none.
func lastRun(runs []scheduler.Record) *scheduler.Record {
	var last *scheduler.Record
	for i := range runs {
		if last == nil || runStart(runs[i]).After(runStart(*last)) {
			last = &runs[i]
		}
	}
	return last
}

// runStart is when rec's run started, or ended for one that never started
// (given back before its start).
func runStart(rec scheduler.Record) time.Time {
	if rec.Started.IsZero() {
		return rec.Ended
	}
	return rec.Started
}

// firstLine is an error's first line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastRunJSON(rec scheduler.Record, loc *time.Location) map[string]any {
	m := map[string]any{"interval": rec.Interval, "interval_start": rec.Start.In(loc).Format(time.RFC3339),
		"status": rec.Status, "attempt": rec.Attempt}
	if !rec.Started.IsZero() {
		m["started"] = rec.Started
	}
	if !rec.Ended.IsZero() {
		m["ended"] = rec.Ended
	}
	if rec.Error != "" {
		m["error"] = firstLine(rec.Error)
	}
	return m
}

func lastRunText(rec *scheduler.Record, loc *time.Location) string {
	if rec == nil {
		return "-"
	}
	at := "started " + rec.Started.In(loc).Format(time.RFC3339)
	if !rec.Ended.IsZero() {
		at = "ended " + rec.Ended.In(loc).Format(time.RFC3339)
	}
	s := fmt.Sprintf("%s %s attempt %d, %s", rec.Interval, rec.Status, rec.Attempt, at)
	if rec.Error != "" {
		s += ": " + textName(firstLine(rec.Error))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
