package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/jobs"
	"github.com/sluice-data/sluice/scheduler"
)

// jobKinds are the kinds a pipeline file may name: jobs' typed calls,
// given the process's logger (each run's lines name it) and the Iceberg
// mirror's observer, whose failures the log reports; vacuum, not yet a
// typed call, runs its command in process.
func (a *app) jobKinds(logger *slog.Logger) map[string]scheduler.Kind {
	mirror := &mirrorObserver{a: a, report: func(map[string]any, string) {}}
	out := jobs.Kinds(jobs.Env{Logger: logger, Observers: []catalog.CommitObserver{mirror}})
	out["vacuum"] = &commandKind{name: "vacuum", positional: "table", tables: []string{"table"}, required: []string{"table"},
		command: (*app).vacuumCommand, checkJob: vacuumRetain}
	return out
}

// vacuumRetain refuses a negative retain, which every run would refuse.
func vacuumRetain(j *scheduler.Job) []*scheduler.OptionError {
	o, ok := j.Option("retain")
	if !ok {
		return nil
	}
	if d, err := time.ParseDuration(o.Value); err == nil && d < 0 {
		return []*scheduler.OptionError{{Key: "retain", Msg: fmt.Sprintf("%s: %v", o.Value, catalog.ErrNegativeRetention)}}
	}
	return nil
}

// commandKind is a job kind run as its own command, in process: its
// options are the command's flags in snake_case, so a job takes exactly
// what the command takes and means the same by it.
type commandKind struct {
	name string
	// positional is the option that names the command's TABLE/OUT
	// argument; tables are the options naming tables of the file;
	// locations those that are locations (made relative to the file).
	positional string
	tables     []string
	locations  []string
	required   []string
	// managed are flags the scheduler sets from the interval unless the
	// job gives them.
	// extra are the kind's options that are no flag of its command:
	// each checks its option and reports whether it knows the key.
	extra func(o scheduler.Option) (known bool, msg string)
	// checkJob checks what spans options and the job (its schedule).
	checkJob func(j *scheduler.Job) []*scheduler.OptionError
	command  func(a *app) *cobra.Command
	interval func(j *scheduler.Job, iv scheduler.Interval) []string
}

func kebab(key string) string { return strings.ReplaceAll(key, "_", "-") }

// globalFlags are the root's flags, which the scheduler sets itself.
var globalFlags = []string{"json", "verbose", "run-id", "cpuprofile", "help", "version"}

func (k *commandKind) flags() *pflag.FlagSet { return k.command(newApp()).Flags() }

// Check validates a job's options against the command's flags.
func (k *commandKind) Check(p *scheduler.Pipeline, j *scheduler.Job) []*scheduler.OptionError {
	var errs []*scheduler.OptionError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &scheduler.OptionError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	fs := k.flags()
	for _, o := range j.Options {
		if slices.Contains(k.tables, o.Key) {
			if o.IsList {
				bad(o.Key, "names one table, not a list")
			} else if _, ok := p.Tables[o.Value]; !ok {
				bad(o.Key, "unknown table %q (the file declares %s)", o.Value, strings.Join(tableNames(p), ", "))
			}
			continue
		}
		if k.extra != nil {
			if known, msg := k.extra(o); known {
				if msg != "" {
					bad(o.Key, "%s", msg)
				}
				continue
			}
		}
		if strings.Contains(o.Key, "-") {
			bad(o.Key, "unknown option: options are snake_case (%s)", strings.ReplaceAll(o.Key, "-", "_"))
			continue
		}
		f := fs.Lookup(kebab(o.Key))
		if f == nil || slices.Contains(globalFlags, f.Name) {
			bad(o.Key, "unknown option for %s (it takes %s)", k.name, strings.Join(k.optionNames(), ", "))
			continue
		}
		multi := strings.HasSuffix(f.Value.Type(), "Slice") || strings.HasSuffix(f.Value.Type(), "Array")
		if o.IsList && !multi {
			bad(o.Key, "takes one value, not a list")
			continue
		}
		for _, v := range o.Values() {
			if err := f.Value.Set(v); err != nil {
				bad(o.Key, "bad value: want a %s", strings.TrimSuffix(strings.TrimSuffix(f.Value.Type(), "Slice"), "Array"))
				break
			}
		}
	}
	for _, req := range k.required {
		if _, ok := j.Option(req); !ok {
			bad(req, "missing: %s needs %s", k.name, strings.Join(k.required, ", "))
		}
	}
	if k.checkJob != nil {
		errs = append(errs, k.checkJob(j)...)
	}
	return errs
}

func (k *commandKind) optionNames() []string {
	names := slices.Clone(k.tables)
	k.flags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(globalFlags, f.Name) {
			names = append(names, strings.ReplaceAll(f.Name, "-", "_"))
		}
	})
	return names
}

func tableNames(p *scheduler.Pipeline) []string {
	var names []string
	for n := range p.Tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// args builds the command line that runs one interval of j.
func (k *commandKind) args(p *scheduler.Pipeline, j *scheduler.Job, iv scheduler.Interval) []string {
	pos, _ := j.Option(k.positional)
	args := []string{k.name, p.Tables[pos.Value].Location}
	fs := k.flags()
	for _, o := range j.Options {
		switch {
		case o.Key == k.positional:
			continue
		case k.extra != nil:
			if known, _ := k.extra(o); known {
				continue
			}
		case slices.Contains(k.tables, o.Key):
			args = append(args, "--"+kebab(o.Key)+"="+p.Tables[o.Value].Location)
			continue
		}
		for _, v := range o.Values() {
			if slices.Contains(k.locations, o.Key) {
				v = p.Resolve(v)
			}
			if f := fs.Lookup(kebab(o.Key)); f != nil && f.Value.Type() == "bool" && v == "true" {
				args = append(args, "--"+kebab(o.Key))
				continue
			}
			args = append(args, "--"+kebab(o.Key)+"="+v)
		}
	}
	if k.interval != nil {
		args = append(args, k.interval(j, iv)...)
	}
	return args
}

// Run runs one interval of j as its command, in process, and returns the
// command's --json summary.
func (k *commandKind) Run(ctx context.Context, p *scheduler.Pipeline, j *scheduler.Job, iv scheduler.Interval) (any, error) {
	args := k.args(p, j, iv)
	if id := scheduler.RunID(ctx); id != "" {
		args = append(args, "--run-id", id)
	}
	return runInProcess(ctx, args)
}

// runInProcess runs one sluice command line with --json and returns its
// summary and error, as the command would print and exit with.
func runInProcess(ctx context.Context, args []string) (map[string]any, error) {
	var out bytes.Buffer
	a := newApp()
	// The job's own warnings go to stderr, where the scheduler's lines go,
	// tagged with the run ID it is given.
	a.stdout = &out
	root := a.rootCommand()
	root.SetArgs(append(slices.Clone(args), "--json"))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	cmd, err := root.ExecuteContextC(ctx)
	err = redactErr(err)
	if cmd == nil {
		cmd = root
	}
	msg := ""
	if err != nil {
		msg = cloud.OneLine(err.Error(), 0)
	}
	var ue usageError
	_ = a.printSummary(cmd, msg, errors.As(err, &ue))
	var summary map[string]any
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &summary); jerr != nil && err == nil {
			err = fmt.Errorf("%s: read its summary: %w", args[0], jerr)
		}
	}
	delete(summary, "error")
	delete(summary, "usage")
	return summary, err
}
