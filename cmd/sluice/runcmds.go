package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/jobs"
	"github.com/sluice-data/sluice/scheduler"
)

// runnerFlags are what every command that runs jobs shares.
type runnerFlags struct {
	config   string
	instance string
	leaseTTL time.Duration
	rerun    bool
	only     bool
}

func (f *runnerFlags) add(cmd *cobra.Command, running bool) {
	cmd.Flags().StringVar(&f.config, "config", "", "the pipeline file (required)")
	if !running {
		return
	}
	cmd.Flags().StringVar(&f.instance, "instance", "", "this instance's name in run records (default: SLUICE_INSTANCE, else host and pid)")
	cmd.Flags().DurationVar(&f.leaseTTL, "lease-ttl", scheduler.DefaultLeaseTTL, "how long a run's claim holds without a heartbeat: another instance takes the interval over once it has seen the run's record unchanged that long, on its own clock (run and backfill wait that long on an interval running elsewhere whose record does not change)")
}

// addOnly gives run and backfill --only; serve always runs the jobs after
// a job, so it has none.
func (f *runnerFlags) addOnly(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.only, "only", false, "run the job alone, not the jobs after it")
}

func instanceName(flag string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv("SLUICE_INSTANCE"); v != "" {
		return v
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// runner loads the pipeline and opens its lake's run history.
func (a *app) runner(cmd *cobra.Command, f *runnerFlags) (*scheduler.Runner, func(), error) {
	p, err := a.loadPipeline(cmd, f.config)
	if err != nil {
		return nil, nil, err
	}
	if f.leaseTTL <= 0 && cmd.Flags().Lookup("lease-ttl") != nil {
		return nil, nil, usageError{cmd: cmd.Name(), err: fmt.Errorf("%s: --lease-ttl must be positive", cmd.Name())}
	}
	st, err := cloud.Open(cmd.Context(), p.Lake)
	if err != nil {
		return nil, nil, fmt.Errorf("open lake: %w", err)
	}
	// The runner's lines name their run themselves; a.logger names this
	// process's, which a line about a job's run must not repeat.
	logger := a.logger
	if a.logHandler != nil && cmd.Name() != "serve" {
		logger = slog.New(a.logHandler)
	}
	r := &scheduler.Runner{Pipeline: p, Kinds: a.jobKinds(logger), History: &scheduler.History{Store: st},
		Instance: instanceName(f.instance), LeaseTTL: f.leaseTTL, Logger: logger}
	return r, func() { st.Close() }, nil
}

// tune sets the process's memory limit once, for every job of r's
// pipeline running parallel intervals at once: a job never sets it while
// another runs beside it.
func tune(r *scheduler.Runner, parallel int) {
	jobs.Tune(jobs.PipelineBudget(r.Pipeline, r.Kinds, parallel))
}

// parseWhen reads a DATE (YYYY-MM-DD, midnight in loc) or an RFC 3339
// time; date tells which it was.
func parseWhen(s string, loc *time.Location) (t time.Time, date bool, err error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, true, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, fmt.Errorf("%q: want a date (2024-05-01) or an RFC 3339 time (2024-05-01T02:00:00Z)", s)
}

// reportRuns prints outcomes, one line each, and sets the --json summary.
func (a *app) reportRuns(command string, job *scheduler.Job, outs []scheduler.Outcome) {
	runs := []map[string]any{}
	counts := map[string]int{}
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	for _, o := range outs {
		rec := o.Record
		state := string(rec.Status)
		switch {
		case !o.Ran && rec.Status == scheduler.StatusRunning:
			state = "running elsewhere (" + rec.Instance + ")"
			counts["elsewhere"]++
		case !o.Ran:
			state = "already " + state
			counts["already_done"]++
		default:
			counts[string(rec.Status)]++
		}
		if !a.jsonOut {
			line := fmt.Sprintf("%s\t%s\t%s\tattempt %d", textName(rec.Job), rec.Start.Format(time.RFC3339), state, rec.Attempt)
			if rec.Error != "" && o.Ran {
				line += "\t" + textName(rec.Error)
			}
			fmt.Fprintln(tw, line)
		}
		runs = append(runs, runJSON(rec, o.Ran))
	}
	tw.Flush()
	a.summary(map[string]any{"command": command, "job": job.Name, "runs": runs, "ran": len(outs) - counts["already_done"] - counts["elsewhere"],
		"succeeded": counts[string(scheduler.StatusSucceeded)], "failed": counts[string(scheduler.StatusFailed)] + counts[string(scheduler.StatusUpstreamFailed)] + counts[string(scheduler.StatusCancelled)],
		"already_done": counts["already_done"], "running_elsewhere": counts["elsewhere"]})
}

func runJSON(rec scheduler.Record, ran bool) map[string]any {
	m := map[string]any{"id": rec.ID, "job": rec.Job, "interval": rec.Interval, "interval_start": rec.Start, "interval_end": rec.End,
		"attempt": rec.Attempt, "instance": rec.Instance, "status": rec.Status, "trigger": rec.Trigger}
	// A run given back before its start (a shutdown while it was claimed
	// ahead) never started: no started, no seconds.
	if !rec.Started.IsZero() {
		m["started"] = rec.Started
	}
	if !rec.Ended.IsZero() {
		m["ended"] = rec.Ended
		if !rec.Started.IsZero() {
			m["seconds"] = rec.Ended.Sub(rec.Started).Seconds()
		}
	}
	if rec.Error != "" {
		m["error"] = rec.Error
	}
	if rec.Summary != nil {
		m["summary"] = rec.Summary
	}
	if ran {
		m["ran"] = true
	}
	return m
}

// runInterval is the interval run runs of job: the last one complete
// now, or as --at says (at, when not empty).
func runInterval(job *scheduler.Job, at string) (scheduler.Interval, error) {
	if at == "" {
		return job.Schedule.Latest(time.Now()), nil
	}
	t, date, err := parseWhen(at, job.Schedule.Location())
	if err != nil {
		return scheduler.Interval{}, usageError{cmd: "run", err: fmt.Errorf("--at %w", err)}
	}
	if !date {
		return job.Schedule.Latest(t), nil
	}
	ivs := job.Schedule.Intervals(t, t.AddDate(0, 0, 1))
	if len(ivs) == 0 {
		return scheduler.Interval{}, fmt.Errorf("run %s: no interval of its schedule starts on %s", job.Name, at)
	}
	return ivs[0], nil
}

func (a *app) runCommand() *cobra.Command {
	var f runnerFlags
	var at string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run --config pipeline.yaml JOB [--at TIME]",
		Short: "Run one interval of a job, then the jobs after it",
		Long: `Run one data interval of JOB: the last one complete now, or with --at a
DATE the interval starting that day (in the job's zone), or with --at a TIME
the last one complete at that time. The run claims the interval in the
lake's run history (<lake>/_sluice/runs/JOB/INTERVAL) with a create-only
write, so a cron or Kubernetes CronJob that fires twice runs it once; an
interval already done is left alone unless --rerun. Then the jobs after JOB
(after: in the file) run for the same interval, unless --only.

--dry-run prints the interval and the chain of jobs it would run, each with
what its record says (already succeeded: left alone without --rerun), and
claims, writes and runs nothing.

Exit 1 when a run failed; its record holds the error.`,
		Example: `  sluice run --config pipeline.yaml ingest-events
  sluice run --config pipeline.yaml rollup-lists --at 2024-05-01 --rerun --json
  sluice run --config pipeline.yaml ingest-events --dry-run`,
		Args: exactArgs(1, "JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			job, err := r.Pipeline.Job(args[0])
			if err != nil {
				return usageError{cmd: "run", err: err}
			}
			iv, err := runInterval(job, at)
			if err != nil {
				return err
			}
			if dryRun {
				return a.dryRun(cmd, r, job, iv, f)
			}
			tune(r, 1)
			outs, runErr := r.Run(cmd.Context(), job, iv, scheduler.RunOptions{Rerun: f.rerun, Only: f.only, Trigger: "run", AwaitLease: true})
			a.reportRuns("run", job, outs)
			return runErr
		},
	}
	f.add(cmd, true)
	f.addOnly(cmd)
	cmd.Flags().StringVar(&at, "at", "", "the interval starting on this DATE, or the last one complete at this TIME (default: now)")
	cmd.Flags().BoolVar(&f.rerun, "rerun", false, "run the interval even if it already succeeded")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the interval and the jobs it would run; claim, write and run nothing")
	return cmd
}

func (a *app) backfillCommand() *cobra.Command {
	var f runnerFlags
	var from, to string
	var parallel int
	cmd := &cobra.Command{
		Use:   "backfill --config pipeline.yaml JOB --from DATE --to DATE [--rerun] [--parallel N]",
		Short: "Run every interval of a job in a range, once",
		Long: `Run every data interval of JOB that starts from --from through --to
(inclusive days in the job's zone, or RFC 3339 times), oldest first, each
followed by the jobs after JOB for the same interval (unless --only). Each
interval is claimed as 'sluice run' claims it: one already done is left
alone, so a second backfill of the same range does nothing; --rerun does it
again. --parallel N runs up to N intervals at once, where the job's
parallel: in the file allows that many.`,
		Example: `  sluice backfill --config pipeline.yaml rollup-lists --from 2024-05-01 --to 2024-05-30`,
		Args:    exactArgs(1, "JOB"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := countsAtLeastOne(cmd, "parallel"); err != nil {
				return err
			}
			if from == "" || to == "" {
				return usageError{cmd: "backfill", err: errors.New("backfill: --from and --to are required")}
			}
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			job, err := r.Pipeline.Job(args[0])
			if err != nil {
				return usageError{cmd: "backfill", err: err}
			}
			if parallel > job.Parallel {
				return usageError{cmd: "backfill", err: fmt.Errorf("backfill: --parallel %d: job %s allows %d (its parallel: in %s)", parallel, job.Name, job.Parallel, r.Pipeline.File)}
			}
			loc := job.Schedule.Location()
			start, _, err := parseWhen(from, loc)
			if err != nil {
				return usageError{cmd: "backfill", err: fmt.Errorf("--from %w", err)}
			}
			end, date, err := parseWhen(to, loc)
			if err != nil {
				return usageError{cmd: "backfill", err: fmt.Errorf("--to %w", err)}
			}
			if date {
				end = end.AddDate(0, 0, 1)
			} else {
				end = end.Add(time.Nanosecond)
			}
			if !end.After(start) {
				return usageError{cmd: "backfill", err: fmt.Errorf("backfill: --to %s is before --from %s", to, from)}
			}
			tune(r, parallel)
			outs, runErr := r.Backfill(cmd.Context(), job, start, end, parallel, scheduler.RunOptions{Rerun: f.rerun, Only: f.only, Trigger: "backfill", AwaitLease: true})
			a.reportRuns("backfill", job, outs)
			if runErr != nil {
				return fmt.Errorf("backfill %s: %w", job.Name, runErr)
			}
			return nil
		},
	}
	f.add(cmd, true)
	f.addOnly(cmd)
	cmd.Flags().StringVar(&from, "from", "", "first day (or time) whose interval runs (required)")
	cmd.Flags().StringVar(&to, "to", "", "last day (or time), inclusive (required)")
	cmd.Flags().BoolVar(&f.rerun, "rerun", false, "run intervals that already succeeded again")
	cmd.Flags().IntVar(&parallel, "parallel", 1, "intervals run at once, >= 1 (at most the job's parallel:)")
	return cmd
}

func (a *app) runsCommand() *cobra.Command {
	var f runnerFlags
	var job, status string
	cmd := &cobra.Command{
		Use:   "runs --config pipeline.yaml [--job JOB] [--status STATUS]",
		Short: "List the run history kept in the lake",
		Long: `List the run records under <lake>/_sluice/runs/: for each job and
interval its status (running, succeeded, failed, cancelled, upstream_failed,
skipped), attempt, instance, start, end, error and the job's summary (with
--json). Sorted by job, then interval.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, closeLake, err := a.runner(cmd, &f)
			if err != nil {
				return err
			}
			defer closeLake()
			if job != "" {
				if _, err := r.Pipeline.Job(job); err != nil {
					return usageError{cmd: "runs", err: err}
				}
			}
			recs, err := r.History.List(cmd.Context(), job)
			// A damaged record is named and skipped: it must not hide
			// the history an on-call engineer came to read.
			unreadable := []string{}
			if errors.Is(err, scheduler.ErrUnreadableRecord) {
				unreadable, err = strings.Split(err.Error(), "\n"), nil
				for _, u := range unreadable {
					a.logger.Warn("skipped an unreadable run record", "error", u)
				}
			}
			if err != nil {
				return err
			}
			runs := []map[string]any{}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			if !a.jsonOut {
				fmt.Fprintln(tw, "JOB\tINTERVAL\tSTATUS\tATTEMPT\tINSTANCE\tSTARTED\tSECONDS\tERROR")
			}
			for _, rec := range recs {
				if status != "" && string(rec.Status) != status {
					continue
				}
				runs = append(runs, runJSON(rec, false))
				if a.jsonOut {
					continue
				}
				started, secs := "-", "-"
				if !rec.Started.IsZero() {
					started = rec.Started.UTC().Format(time.RFC3339)
					if !rec.Ended.IsZero() {
						secs = fmt.Sprintf("%.1f", rec.Ended.Sub(rec.Started).Seconds())
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", textName(rec.Job), rec.Start.Format(time.RFC3339), rec.Status,
					rec.Attempt, textName(rec.Instance), started, secs, textName(rec.Error))
			}
			tw.Flush()
			return a.summary(map[string]any{"command": "runs", "runs": runs, "unreadable": unreadable})
		},
	}
	f.add(cmd, false)
	cmd.Flags().StringVar(&job, "job", "", "only this job's runs")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status")
	return cmd
}

// chain is the jobs a run of job runs, in the order Runner.Run takes
// them: job, then each job after it (Pipeline.Downstream), depth first,
// each once; job alone with only.
func chain(p *scheduler.Pipeline, job *scheduler.Job, only bool) []*scheduler.Job {
	out := []*scheduler.Job{job}
	if only {
		return out
	}
	seen := map[string]bool{job.Name: true}
	var walk func(name string)
	walk = func(name string) {
		for _, d := range p.Downstream(name) {
			if !seen[d.Name] {
				seen[d.Name] = true
				out = append(out, d)
				walk(d.Name)
			}
		}
	}
	walk(job.Name)
	return out
}

// dryRun prints what run would do with job's interval iv: the interval,
// and each job of the chain with its record's status. It reads the
// records and nothing else.
func (a *app) dryRun(cmd *cobra.Command, r *scheduler.Runner, job *scheduler.Job, iv scheduler.Interval, f runnerFlags) error {
	loc := job.Schedule.Location()
	start, end := iv.Start.In(loc).Format(time.RFC3339), iv.End.In(loc).Format(time.RFC3339)
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	if !a.jsonOut {
		fmt.Fprintf(a.stdout, "interval %s: %s to %s (%s); nothing is claimed, written or run\n", iv.Key(), start, end, loc)
		fmt.Fprintln(tw, "JOB\tSTATUS\tWOULD RUN")
	}
	jobs := []map[string]any{}
	for _, j := range chain(r.Pipeline, job, f.only) {
		rec, _, err := r.History.Get(cmd.Context(), j.Name, iv.Key())
		var status any
		wouldRun, why := true, "yes"
		switch {
		case errors.Is(err, cloud.ErrNotFound):
		case err != nil:
			return fmt.Errorf("run --dry-run: %w", err)
		default:
			status = rec.Status
			switch {
			case rec.Status == scheduler.StatusSucceeded && !f.rerun:
				wouldRun, why = false, "no: already succeeded (--rerun runs it again)"
			case rec.Status == scheduler.StatusRunning:
				wouldRun, why = false, "no: running (instance "+textName(rec.Instance)+")"
			}
		}
		jobs = append(jobs, map[string]any{"job": j.Name, "interval": iv.Key(), "would_run": wouldRun, "status": status})
		if !a.jsonOut {
			shown := "-"
			if status != nil {
				shown = string(rec.Status)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", textName(j.Name), shown, why)
		}
	}
	tw.Flush()
	return a.summary(map[string]any{"command": "run", "dry_run": true, "job": job.Name,
		"interval": map[string]any{"key": iv.Key(), "start": start, "end": end, "zone": loc.String()}, "chain": jobs})
}
