package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/scheduler"
)

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

// jobKinds are the kinds a pipeline file may name.
func jobKinds() map[string]scheduler.Kind {
	ks := []*commandKind{
		{name: "ingest", positional: "table", tables: []string{"table", "quarantine"}, locations: []string{"from"},
			required: []string{"table", "from"}, command: (*app).ingestCommand, interval: ingestInterval},
		{name: "compact", positional: "table", tables: []string{"table"}, required: []string{"table"}, extra: compactScope,
			command: (*app).compactCommand, interval: compactInterval},
		{name: "rollup", positional: "out", tables: []string{"out", "source"}, locations: []string{"snapshot"},
			required: []string{"out", "source", "snapshot", "key", "time", "measure"},
			command:  (*app).rollupCommand, interval: rollupInterval, checkJob: rollupZone},
		{name: "publish", positional: "table", tables: []string{"table"}, required: []string{"table", "to", "as"},
			command: (*app).publishCommand},
		{name: "vacuum", positional: "table", tables: []string{"table"}, required: []string{"table"},
			command: (*app).vacuumCommand},
	}
	out := map[string]scheduler.Kind{}
	for _, k := range ks {
		out[k.name] = k
	}
	return out
}

// ingestInterval stops the ingest at the interval's end (unless the job
// gives until): a rerun of an interval takes the same files and records.
func ingestInterval(j *scheduler.Job, iv scheduler.Interval) []string {
	if _, ok := j.Option("until"); ok {
		return nil
	}
	return []string{"--until", iv.End.UTC().Format(time.RFC3339Nano)}
}

// compactInterval compacts the UTC days the interval touches, the
// current one included when the interval reaches into it.
func compactInterval(j *scheduler.Job, iv scheduler.Interval) []string {
	var args []string
	if _, ok := j.Option("partition"); ok {
		return nil
	}
	if o, ok := j.Option("scope"); ok && o.Value == "all" {
		return nil
	}
	last := iv.End.Add(-time.Nanosecond).UTC()
	for d := iv.Start.UTC().Truncate(24 * time.Hour); !d.After(last); d = d.AddDate(0, 0, 1) {
		args = append(args, "--partition", "date="+d.Format(time.DateOnly))
	}
	if _, ok := j.Option("include_current"); !ok {
		args = append(args, "--include-current")
	}
	return args
}

// compactScope is compact's one option beyond its flags: scope:
// interval (the default) compacts the UTC days the interval touches;
// scope: all compacts every partition, as the command does.
func compactScope(o scheduler.Option) (bool, string) {
	if o.Key != "scope" {
		return false, ""
	}
	if o.IsList || (o.Value != "interval" && o.Value != "all") {
		return true, "want interval or all"
	}
	return true, ""
}

// rollupInterval rolls up through the interval's day, in the job's one
// zone: the zone its schedule ticks in (CRON_TZ=, else the host's, by
// name), which becomes --tz unless the job's tz option names it already
// (rollupZone refuses a tz that differs). A daily job scheduled at 01:00
// on a host in America/New_York rolls up New York days through the day
// before the tick; counted in UTC, as before, it stopped a day short
// wherever the local day and the UTC one differ at the tick.
func rollupInterval(j *scheduler.Job, iv scheduler.Interval) []string {
	var args []string
	loc := j.Schedule.Location()
	if _, ok := j.Option("tz"); !ok {
		args = append(args, "--tz", loc.String())
	}
	if _, ok := j.Option("through"); !ok {
		args = append(args, "--through", iv.Start.In(loc).Format(time.DateOnly))
	}
	return args
}

// rollupZone refuses a rollup job whose tz option differs from the zone
// its schedule ticks in: one zone per job, or its intervals and its days
// would not line up.
func rollupZone(j *scheduler.Job) []*scheduler.OptionError {
	o, ok := j.Option("tz")
	if !ok || j.Schedule == nil {
		return nil
	}
	tz, err := time.LoadLocation(o.Value)
	if err != nil {
		return nil // the flag's own check names it
	}
	sched := j.Schedule.Location()
	if tz.String() == sched.String() {
		return nil
	}
	where := "CRON_TZ=" + sched.String()
	if !j.Schedule.ZoneGiven() {
		where = "the host's zone, " + sched.String() + ", as it has no CRON_TZ"
	}
	return []*scheduler.OptionError{{Key: "tz", Msg: fmt.Sprintf("%s differs from the zone the job's schedule ticks in (%s): give the schedule CRON_TZ=%s, or drop tz (one zone per job, for its intervals and its days)", o.Value, where, o.Value)}}
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
	if k.name == "ingest" {
		if err := createTable(ctx, p, j); err != nil {
			return nil, err
		}
	}
	args := k.args(p, j, iv)
	if id := scheduler.RunID(ctx); id != "" {
		args = append(args, "--run-id", id)
	}
	summary, err := runInProcess(ctx, args)
	if err == nil && k.name != "publish" {
		pos, _ := j.Option(k.positional)
		if n, serr := smallFiles(ctx, p.Tables[pos.Value].Location); serr == nil && summary != nil {
			summary[scheduler.SmallFilesKey] = map[string]any{pos.Value: float64(n)}
		}
	}
	return summary, err
}

// smallFiles counts the files of the table's current version under a
// quarter of its target file size: what compaction would merge. /metrics
// shows it per table after each job that wrote the table.
func smallFiles(ctx context.Context, location string) (int, error) {
	t, err := catalog.Open(ctx, location, catalog.Options{})
	if err != nil {
		return 0, err
	}
	defer t.Close()
	m, err := t.Latest(ctx)
	if err != nil {
		return 0, err
	}
	files, err := t.Files(ctx, m)
	if err != nil {
		return 0, err
	}
	n, limit := 0, m.TargetFileSize()/4
	for _, f := range files {
		if f.Bytes < limit {
			n++
		}
	}
	return n, nil
}

// createTable creates the ingest job's table when the file gives its
// schema and it does not exist yet.
func createTable(ctx context.Context, p *scheduler.Pipeline, j *scheduler.Job) error {
	o, _ := j.Option("table")
	t := p.Tables[o.Value]
	if t.Schema == "" {
		return nil
	}
	args := []string{"init", t.Location, "--schema", t.Schema}
	if t.PartitionBy != "" {
		args = append(args, "--partition-by", t.PartitionBy)
	}
	if t.TargetFileSize != "" {
		args = append(args, "--target-file-size", t.TargetFileSize)
	}
	if _, err := runInProcess(ctx, args); err != nil && !errors.Is(err, catalog.ErrTableExists) {
		return fmt.Errorf("create table %s: %w", t.Name, err)
	}
	return nil
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
