package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// funcKind is a job kind whose runs call a test's function.
type funcKind struct {
	run func(ctx context.Context, j *Job, iv Interval) (map[string]any, error)
}

func (k funcKind) Check(p *Pipeline, j *Job) []*OptionError {
	var errs []*OptionError
	for _, o := range j.Options {
		if o.Key == "table" {
			if _, ok := p.Tables[o.Value]; !ok {
				errs = append(errs, &OptionError{Key: o.Key, Msg: "unknown table"})
			}
		} else if o.Key != "note" {
			errs = append(errs, &OptionError{Key: o.Key, Msg: "unknown option"})
		}
	}
	return errs
}

func (k funcKind) Run(ctx context.Context, p *Pipeline, j *Job, iv Interval) (any, error) {
	if k.run == nil {
		return map[string]any{}, nil
	}
	summary, err := k.run(ctx, j, iv)
	if summary == nil {
		return nil, err // no summary, not a typed nil
	}
	return summary, err
}

// summaryOf decodes a record's summary.
func summaryOf(t *testing.T, rec Record) map[string]any {
	t.Helper()
	var m map[string]any
	if len(rec.Summary) > 0 {
		if err := json.Unmarshal(rec.Summary, &m); err != nil {
			t.Fatalf("record summary %s: %v", rec.Summary, err)
		}
	}
	return m
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestPipelineParse(t *testing.T) {
	src := `
tables:
  events: {location: "file://./lake/events"}
  out: {location: "lake/out"}
jobs:
  load:
    schedule: "CRON_TZ=Europe/London 0 2 * * *"
    task: {table: events, note: "${NOTE}"}
  sum:
    after: [load]
    task: {table: out}
    retries: {max: 3, backoff: 30s}
    timeout: 30m
    overlap: queue
    catchup: 24
`
	dir := t.TempDir()
	p, err := Parse(filepath.Join(dir, "p.yaml"), []byte(src), map[string]Kind{"task": funcKind{}}, env(map[string]string{"NOTE": "a b"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Tables["events"].Location, filepath.Join(dir, "lake/events"); got != want {
		t.Errorf("events at %s, want %s (relative to the file)", got, want)
	}
	if got, want := p.Lake, filepath.Join(dir, "lake"); got != want {
		t.Errorf("lake %s, want the tables' common parent %s", got, want)
	}
	load, sum := p.Jobs["load"], p.Jobs["sum"]
	if o, _ := load.Option("note"); o.Value != "a b" {
		t.Errorf("note = %q, want the environment's value", o.Value)
	}
	if sum.Spec != load.Spec || sum.Schedule == nil {
		t.Errorf("sum's schedule %q, want load's inherited", sum.Spec)
	}
	if sum.Retries.Max != 3 || sum.Timeout.Minutes() != 30 || sum.Overlap != OverlapQueue || sum.Catchup != 24 {
		t.Errorf("sum = %+v", sum)
	}
	if load.Catchup != 1 || load.Overlap != OverlapSkip || load.Parallel != 1 {
		t.Errorf("load's defaults = %+v", load)
	}
	if d := p.Downstream("load"); len(d) != 1 || d[0].Name != "sum" {
		t.Errorf("Downstream(load) = %v", d)
	}
	if _, err := p.Job("nope"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("Job(nope) = %v, want ErrUnknownJob", err)
	}
}

// Every problem of a file is reported, in file order, as an ErrorList
// matching ErrInvalid.
func TestPipelineErrorsAll(t *testing.T) {
	src := "tables:\n  t: {location: /x/t}\njobs:\n  a:\n    schedule: \"bad\"\n    task: {table: u}\n    timeout: 0s\n"
	_, err := Parse("p.yaml", []byte(src), map[string]Kind{"task": funcKind{}}, env(nil))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	got := err.Error()
	want := []string{
		`p.yaml:5:15: jobs.a.schedule: bad cron spec "bad"`,
		`p.yaml:6:12: jobs.a.task.table: unknown table`,
		`p.yaml:7:14: jobs.a.timeout: bad duration "0s"`,
	}
	lines := strings.Split(got, "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want %q...", i, lines[i], w)
		}
	}
}
