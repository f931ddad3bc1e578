package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/rollup"
)

// rollupWith is a rollup of fixed options with the work-mode flags args,
// set as the command line sets them.
func rollupWith(t *testing.T, args ...string) (*Rollup, error) {
	t.Helper()
	o := &Rollup{}
	fs := pflag.NewFlagSet("rollup", pflag.ContinueOnError)
	o.Bind(fs)
	base := []string{"--source", "s3://lake/events", "--snapshot", "s3://lake/snap.csv", "--key", "list", "--time", "at",
		"--measure", "subscribers=sum(tally)"}
	if err := fs.Parse(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return o, o.Validate()
}

// The work-mode flags are checked together before anything runs, each
// refusal naming its flag; the shard comes from --shard, else from an
// Indexed Job's environment.
func TestRollupWorkFlags(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("JOB_COMPLETIONS", "")
	for name, c := range map[string]struct {
		args []string
		want string // "" for valid
	}{
		"a planner on 8 shards":                     {[]string{"--plan", "--shard", "0/8", "--plan-id", "job-1"}, ""},
		"every step in one process, one shard":      {[]string{"--plan", "--worker", "--commit"}, ""},
		"every step on 4 shards without a plan id":  {[]string{"--plan", "--worker", "--shard", "1/4"}, "--plan-id required with --plan --worker on 4 shards"},
		"a shard past the count":                    {[]string{"--worker", "--shard", "4/4"}, `--shard shard "4/4": want i/n with 0 <= i < n`},
		"a lease under a second":                    {[]string{"--worker", "--lease-ttl", "10ms"}, "--lease-ttl 10ms: want at least 1s"},
		"a negative wait for the commit":            {[]string{"--commit", "--commit-wait", "-1s"}, "--commit-wait -1s: want a duration >= 0"},
		"a bad lease without a step is not checked": {[]string{"--lease-ttl", "10ms"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := rollupWith(t, c.args...)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate: %v; want %q", err, c.want)
			}
		})
	}

	t.Setenv("JOB_COMPLETION_INDEX", "3")
	t.Setenv("JOB_COMPLETIONS", "8")
	o, err := rollupWith(t, "--worker", "--plan-id", "job-1")
	if err != nil || o.Work.shard != 3 || o.Work.shards != 8 {
		t.Fatalf("a worker of an Indexed Job: shard %d/%d (%v); want 3/8 from the environment", o.Work.shard, o.Work.shards, err)
	}
	t.Setenv("JOB_COMPLETIONS", "")
	if _, err := rollupWith(t, "--worker", "--plan-id", "job-1"); err == nil || !strings.Contains(err.Error(), "JOB_COMPLETIONS") {
		t.Fatalf("an index without the count: %v; want a refusal naming JOB_COMPLETIONS", err)
	}
}

// A worker or commit refuses a plan made with other options than its
// own, naming each that differs; the plan's own options pass.
func TestRollupWorkRefusesAnotherPlansOptions(t *testing.T) {
	o, err := rollupWith(t, "--worker", "--plan-id", "job-1", "--tz", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	m, err := rollup.ParseMeasure("subscribers=sum(tally)")
	if err != nil {
		t.Fatal(err)
	}
	plan := rollup.WorkPlan{ID: "job-1", Source: "s3://lake/events", Snapshot: "s3://lake/snap.csv", Keys: []string{"list"},
		Time: "at", Measures: []string{m.String()}, TimeZone: "Europe/Paris", Through: time.Now().Format(time.DateOnly)}
	if err := o.samePlan(&plan); err != nil {
		t.Fatalf("the plan's own options: %v", err)
	}
	plan.Keys, plan.TimeZone = []string{"list", "region"}, "UTC"
	err = o.samePlan(&plan)
	if err == nil || !strings.Contains(err.Error(), "--key list (the plan's: list,region)") ||
		!strings.Contains(err.Error(), "--tz Europe/Paris (the plan's: UTC)") || !strings.Contains(err.Error(), "--plan-id job-1") {
		t.Fatalf("a plan of other keys and zone: %v; want both named", err)
	}
}
