package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/jobs"
)

// env is what the command's job is given: its run ID, logger, progress
// bars, and the commit observers of every table it opens.
func (a *app) env() jobs.Env {
	return jobs.Env{RunID: a.runID, Logger: a.logger, Observers: a.observers(), MirrorKeep: a.icebergVacuum, OpenFormat: openFormat, OpenCatalogTable: openCatalogTable,
		OpenRead: openRead,
		Progress: func(name string) jobs.Progress { return a.progress(name) }}
}

// runJob runs the command's job as the process's only job: its options
// checked (a bad one is a usage error, an unsafe one a failure), the
// process tuned for it, then run; its result is the --json summary, and on success, unless --json
// or -q, one line on stderr says what it did, with its warnings.
func (a *app) runJob(cmd *cobra.Command, job jobs.Job) error {
	if err := job.Validate(); err != nil {
		var bo *jobs.BadOption
		unsafe := errors.As(err, &bo) && bo.Unsafe
		err = fmt.Errorf("%s: %s", cmd.Name(), cloud.OneLine(strings.ReplaceAll(err.Error(), "\n", "; "), 0))
		if unsafe {
			return err
		}
		return usageError{cmd: cmd.Name(), err: err}
	}
	jobs.TuneFor(job)
	res, err := job.Run(cmd.Context(), a.env())
	if res != nil {
		a.summary(res)
	}
	if err != nil {
		return err
	}
	a.summaryLine(res)
	return nil
}

// summaryLine prints the job's line on stderr, with the warnings the
// observers added, unless --json or -q.
func (a *app) summaryLine(res jobs.Result) {
	if a.jsonOut || a.quiet {
		return
	}
	line := res.Line()
	for _, w := range a.warns {
		line += "; warning: " + w
	}
	fmt.Fprintln(a.stderr, line)
}

// addExtra adds key to the command's --json summary.
func (a *app) addExtra(key string, v any) {
	if a.extra == nil {
		a.extra = map[string]any{}
	}
	a.extra[key] = v
}

// observers are the commit observers of every table the command opens:
// the Iceberg mirror, reporting into the command's --json summary and
// summary line.
func (a *app) observers() []catalog.CommitObserver {
	if a.mirror == nil {
		a.mirror = &mirrorObserver{a: a, report: func(out map[string]any, warning string) {
			a.addExtra("iceberg", out)
			if warning != "" {
				a.warns = append(a.warns, warning)
			}
		}}
	}
	return []catalog.CommitObserver{a.mirror}
}

// line prints a command's summary line on stderr, unless --json or -q:
// under cron, what a success did (records quarantined, files waiting)
// must not go unnoticed.
func (a *app) line(format string, args ...any) {
	if a.jsonOut || a.quiet {
		return
	}
	fmt.Fprintf(a.stderr, strings.TrimSuffix(format, "\n")+"\n", args...)
}
