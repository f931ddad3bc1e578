package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/scheduler"
)

// kind is a job kind as a pipeline file names it: how its options map to
// the Job's, what the scheduler sets from the interval, and what runs
// around it.
type kind struct {
	name string
	new  func() Job
	// target is the option that names the table the job writes (the
	// command's TABLE or OUT argument); tables are the options naming
	// tables of the file (the target among them); locations those that
	// are locations, relative to the file.
	target    string
	tables    []string
	locations []string
	required  []string
	// extra is the kind's options that are no flag: each checks its
	// option and reports whether it knows the key.
	extra func(o scheduler.Option) (known bool, msg string)
	// checkJob checks what spans options and the job (its schedule).
	checkJob func(j *scheduler.Job) []*scheduler.OptionError
	// interval sets what the scheduler sets from the interval, unless
	// the job's options give it.
	interval func(job Job, j *scheduler.Job, iv scheduler.Interval)
	// small: after a run, count the target's small files for /metrics.
	small bool
	// formats: the kind runs on a table of another format, its --format
	// flag naming the table's (compact, vacuum).
	formats bool
	// reads are the keys of tables the kind only reads, which may be
	// Delta tables, found by their log (rollup's source, publish's
	// table). Other kinds and keys refuse a table of another format.
	reads []string
	env   Env
}

// targeted is a Job that writes one table, named by its TABLE argument.
type targeted interface{ targetTable() *string }

func (o *Create) targetTable() *string  { return &o.Table }
func (o *Ingest) targetTable() *string  { return &o.Table }
func (o *Compact) targetTable() *string { return &o.Table }
func (o *Publish) targetTable() *string { return &o.Table }
func (o *Rollup) targetTable() *string  { return &o.Out }
func (o *Vacuum) targetTable() *string  { return &o.Table }

// Kinds returns the kinds a pipeline file may name, each running its Job
// in process with env (its RunID and a logger line's run set per run).
func Kinds(env Env) map[string]scheduler.Kind {
	ks := []*kind{
		{name: "ingest", new: func() Job { return &Ingest{} }, target: "table", tables: []string{"table", "quarantine"},
			locations: []string{"from", "tls_ca", "tls_cert", "tls_key", "sasl_password_file", "sasl_token_file"}, required: []string{"table", "from"}, interval: ingestInterval, small: true},
		{name: "compact", new: func() Job { return &Compact{} }, target: "table", tables: []string{"table"},
			required: []string{"table"}, extra: compactScope, interval: compactInterval, small: true, formats: true},
		{name: "rollup", new: func() Job { return &Rollup{} }, target: "out", tables: []string{"out", "source"},
			locations: []string{"snapshot"}, required: []string{"out", "source", "snapshot", "key", "time", "measure"},
			checkJob: rollupZone, interval: rollupInterval, small: true, reads: []string{"source"}},
		{name: "publish", new: func() Job { return &Publish{} }, target: "table", tables: []string{"table"},
			required: []string{"table", "to", "as"}, reads: []string{"table"}},
		{name: "vacuum", new: func() Job { return &Vacuum{} }, target: "table", tables: []string{"table"},
			required: []string{"table"}, formats: true},
	}
	out := map[string]scheduler.Kind{}
	for _, k := range ks {
		k.env = env
		out[k.name] = k
	}
	return out
}

func kebab(key string) string { return strings.ReplaceAll(key, "_", "-") }

// build makes the kind's Job from a job of the file, as the command line
// would: each option set through its flag. It returns the problems with
// the options themselves; Validate finds the rest.
func (k *kind) build(p *scheduler.Pipeline, j *scheduler.Job) (Job, []*scheduler.OptionError) {
	var errs []*scheduler.OptionError
	bad := func(key, format string, args ...any) {
		errs = append(errs, &scheduler.OptionError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	job := k.new()
	fs := pflag.NewFlagSet(k.name, pflag.ContinueOnError)
	job.Bind(fs)
	for _, o := range j.Options {
		if slices.Contains(k.tables, o.Key) {
			t, ok := p.Tables[o.Value]
			switch {
			case o.IsList:
				bad(o.Key, "names one table, not a list")
			case !ok:
				bad(o.Key, "unknown table %q (the file declares %s)", o.Value, strings.Join(tableNames(p), ", "))
			case t.Format != "" && t.Format != "sluice" && !k.formats && !(t.Format == "delta" && slices.Contains(k.reads, o.Key)):
				article := "a"
				if t.Format == "iceberg" {
					article = "an"
				}
				bad(o.Key, "table %s is %s %s table: %s on it is not built yet (compact and vacuum are; rollup's source and publish read a delta table)", o.Value, article, t.Format, k.name)
			case o.Key == k.target:
				if _, own := j.Option("format"); t.Format != "" && k.formats && !own {
					if err := fs.Set("format", t.Format); err != nil {
						bad(o.Key, "%v", err)
					}
				}
				*job.(targeted).targetTable() = t.Location
			default:
				if err := fs.Set(kebab(o.Key), t.Location); err != nil {
					bad(o.Key, "%v", err)
				}
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
		if f == nil {
			bad(o.Key, "unknown option for %s (it takes %s)", k.name, strings.Join(k.optionNames(), ", "))
			continue
		}
		multi := strings.HasSuffix(f.Value.Type(), "Slice") || strings.HasSuffix(f.Value.Type(), "Array")
		if o.IsList && !multi {
			bad(o.Key, "takes one value, not a list")
			continue
		}
		for _, v := range o.Values() {
			if slices.Contains(k.locations, o.Key) {
				v = p.Resolve(v)
			}
			if err := fs.Set(f.Name, v); err != nil {
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
	return job, errs
}

func (k *kind) optionNames() []string {
	names := slices.Clone(k.tables)
	fs := pflag.NewFlagSet(k.name, pflag.ContinueOnError)
	k.new().Bind(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if n := strings.ReplaceAll(f.Name, "-", "_"); !slices.Contains(names, n) {
			names = append(names, n)
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

// Check validates a job's options fully, as its command would before it
// runs: the flags' own parsing, then the Job's Validate, each problem
// under its key.
func (k *kind) Check(p *scheduler.Pipeline, j *scheduler.Job) []*scheduler.OptionError {
	job, errs := k.build(p, j)
	if len(errs) > 0 {
		return errs
	}
	return optionErrors(job.Validate())
}

// optionErrors turns Validate's errors into the file's: each BadOption
// under its key; another under the kind itself.
func optionErrors(err error) []*scheduler.OptionError {
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []*scheduler.OptionError
	for _, e := range list {
		var bo *BadOption
		if errors.As(e, &bo) {
			out = append(out, &scheduler.OptionError{Key: bo.Key(), Msg: bo.Msg})
		} else {
			out = append(out, &scheduler.OptionError{Msg: strings.TrimPrefix(e.Error(), ErrBadOption.Error()+": ")})
		}
	}
	return out
}

// Run runs one interval of j: its Job, with what the interval sets.
func (k *kind) Run(ctx context.Context, p *scheduler.Pipeline, j *scheduler.Job, iv scheduler.Interval) (any, error) {
	job, errs := k.build(p, j)
	if len(errs) > 0 {
		return nil, scheduler.Permanent(fmt.Errorf("%s: %w: %s", j.Name, ErrBadOption, errs[0]))
	}
	if k.interval != nil {
		k.interval(job, j, iv)
	}
	env := k.env
	env.RunID = scheduler.RunID(ctx)
	if env.Logger != nil {
		env.Logger = env.Logger.With("job", j.Name, "run", env.RunID)
	}
	if k.name == "ingest" {
		if err := createTable(ctx, p, j, env); err != nil {
			return nil, err
		}
	}
	res, err := job.Run(ctx, env)
	if err == nil && k.small {
		name, _ := j.Option(k.target)
		if n, serr := smallFileCount(ctx, *job.(targeted).targetTable()); serr == nil {
			if s, ok := res.(interface{ noteSmallFiles(string, int) }); ok {
				s.noteSmallFiles(name.Value, n)
			}
		}
	}
	return res, err
}

// createTable creates the ingest job's table when the file gives its
// schema and it does not exist yet.
func createTable(ctx context.Context, p *scheduler.Pipeline, j *scheduler.Job, env Env) error {
	o, _ := j.Option("table")
	t := p.Tables[o.Value]
	if t.Schema == "" {
		return nil
	}
	c := &Create{Table: t.Location, Schema: t.Schema, PartitionBy: t.PartitionBy}
	if t.TargetFileSize != "" {
		_ = c.TargetFileSize.Set(t.TargetFileSize)
	}
	if _, err := c.Run(ctx, env); err != nil && !errors.Is(err, catalog.ErrTableExists) {
		return fmt.Errorf("create table %s: %w", t.Name, err)
	}
	return nil
}

// smallFileCount counts the files of the table's current version under
// a quarter of its target file size: what compaction would merge.
func smallFileCount(ctx context.Context, location string) (int, error) {
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

// ingestInterval stops the ingest at the interval's end (unless the job
// gives until): a rerun of an interval takes the same files and records.
func ingestInterval(job Job, j *scheduler.Job, iv scheduler.Interval) {
	if _, ok := j.Option("until"); !ok {
		job.(*Ingest).UntilTime = iv.End
	}
}

// compactInterval compacts the UTC days the interval touches, the
// current one included when the interval reaches into it.
func compactInterval(job Job, j *scheduler.Job, iv scheduler.Interval) {
	o := job.(*Compact)
	if _, ok := j.Option("partition"); ok {
		return
	}
	if o.Format == "iceberg" || IsCatalogTable(o.Table) {
		// An Iceberg table's partitions are its spec's (ts_day=...,
		// several specs at once): its compaction is scope: all.
		return
	}
	if s, ok := j.Option("scope"); ok && s.Value == "all" {
		return
	}
	last := iv.End.Add(-time.Nanosecond).UTC()
	for d := iv.Start.UTC().Truncate(24 * time.Hour); !d.After(last); d = d.AddDate(0, 0, 1) {
		o.Partitions = append(o.Partitions, "date="+d.Format(time.DateOnly))
	}
	if _, ok := j.Option("include_current"); !ok {
		o.IncludeCurrent = true
	}
	o.o.Plan.Partitions, o.o.Plan.IncludeCurrent = o.Partitions, o.IncludeCurrent
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
// name), which is the rollup's tz unless the job's tz option names it
// already (rollupZone refuses a tz that differs). A daily job scheduled
// at 01:00 on a host in America/New_York rolls up New York days through
// the day before the tick.
func rollupInterval(job Job, j *scheduler.Job, iv scheduler.Interval) {
	o := job.(*Rollup)
	loc := j.Schedule.Location()
	if o.TZ == "" {
		o.TZ = loc.String()
	}
	if o.Through == "" {
		o.Through = iv.Start.In(loc).Format(time.DateOnly)
	}
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
		return nil // Validate names it
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

// PipelineBudget is the memory the jobs of p hold when each runs at
// most parallel intervals at once, all jobs side by side (serve runs a
// job's intervals one at a time): what a scheduler process is tuned for
// (Tune), once.
func PipelineBudget(p *scheduler.Pipeline, kinds map[string]scheduler.Kind, parallel int) int64 {
	var js []Job
	for _, name := range p.Order {
		j := p.Jobs[name]
		k, ok := kinds[j.Kind].(*kind)
		if !ok {
			js = append(js, nil) // counted as a light job
			continue
		}
		job, _ := k.build(p, j)
		js = append(js, job)
	}
	return int64(max(parallel, 1)) * Budget(js...)
}
