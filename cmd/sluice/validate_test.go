package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every file of the bad-pipeline corpus is refused by validate with exit
// 1 and a line naming the file, line, column, key and reason; and run
// refuses it the same way, running nothing.
func TestValidateBadPipelines(t *testing.T) {
	want := map[string]string{
		"after_unknown_job.yaml": `:6:13: jobs.rollup-lists.after: unknown job "compact-evnts"`,
		"bad_backoff.yaml":       `:7:32: jobs.compact-events.retries.backoff: bad duration "-5s"`,
		"bad_job_name.yaml":      `:5:3: jobs.../compact: bad job name`,
		"bad_catchup.yaml":       `:7:14: jobs.compact-events.catchup: "-1": want a whole number >= 1`,
		"bad_cron.yaml":          `:6:15: jobs.compact-events.schedule: bad cron spec "0 25 * * *": end of range (25) above maximum (23)`,
		"bad_cron_fields.yaml":   `:6:15: jobs.compact-events.schedule: bad cron spec "* * *": expected 5 to 6 fields, found 3`,
		"bad_cron_tz.yaml":       `:6:15: jobs.compact-events.schedule: bad cron spec "CRON_TZ=Mars/Olympus_Mons 0 2 * * *": provided bad location`,
		"bad_duration.yaml":      `:7:14: jobs.compact-events.timeout: bad duration "30 minutes"`,
		"bad_option_value.yaml":  `:7:30: jobs.compact-events.compact.include_current: bad value: want a bool`,
		"bad_overlap.yaml":       `:7:14: jobs.compact-events.overlap: "parallel": want skip or queue`,
		"cycle.yaml":             `:7:12: jobs.a.after: cycle: a -> c -> b -> a`,
		"duplicate_job.yaml":     `:8:3: jobs.compact-events: duplicate key (first at line 5)`,
		"duplicate_option.yaml":  `:10:7: jobs.compact-events.compact.min_input_files: duplicate key (first at line 9)`,
		"kebab_option.yaml":      `:7:30: jobs.compact-events.compact.include-current: unknown option: options are snake_case (include_current)`,
		"missing_option.yaml":    `:7:5: jobs.ingest-events.ingest.from: missing`,
		"never_fires.yaml":       `:6:15: jobs.compact-events.schedule: bad cron spec "0 0 30 2 *": it never fires: no date matches it`,
		"no_kind.yaml":           `:5:3: jobs.compact-events: no job kind`,
		"no_schedule.yaml":       `:5:3: jobs.compact-events: no schedule and no after`,
		"not_yaml.yaml":          `:3:1: not valid YAML`,
		"schedule_mismatch.yaml": `:9:15: jobs.vacuum-events.schedule: differs from upstream compact-events's schedule`,
		"tab_indent.yaml":        `:6:1: tab in indentation`,
		"table_no_location.yaml": `:2:3: tables.events: no location`,
		"two_kinds.yaml":         `:8:5: jobs.compact-events.vacuum: a job has one kind`,
		"unknown_job_key.yaml":   `:7:5: jobs.compact-events.retry: unknown key`,
		"unknown_option.yaml":    `:7:30: jobs.compact-events.compact.target_size: unknown option for compact`,
		"unknown_table.yaml":     `:7:15: jobs.compact-events.compact.table: unknown table "evnets"`,
		"unknown_top_key.yaml":   `:4:1: jbos: unknown key (want lake, tables or jobs)`,
		"unset_env.yaml":         `:3:15: tables.events.location: environment variable SLUICE_TEST_UNSET_BUCKET is not set`,
	}
	dir := filepath.Join(repoRoot(t), "testdata", "bad", "pipelines")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(want) {
		t.Errorf("the corpus has %d files, the test knows %d: keep them in step", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expected message for %s", name)
			}
			for _, args := range [][]string{{"validate", "--config", f}, {"run", "--config", f, "compact-events"}} {
				r := sluice(t, nil, args...)
				if r.code != 1 {
					t.Fatalf("%s: exit %d, want 1; stderr %s", args[0], r.code, r.stderr)
				}
				if !strings.Contains(r.stderr, f+w) {
					t.Errorf("%s: stderr\n%s\ndoes not hold %q", args[0], r.stderr, f+w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "lake")); err == nil {
				t.Errorf("a refused pipeline created a lake beside it")
			}
		})
	}
}

// The pipeline files shipped in testdata/pipelines are valid.
func TestValidateShippedPipelines(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "pipelines", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pipelines: %v", err)
	}
	for _, f := range files {
		r := sluice(t, []string{"SLUICE_LAKE=" + t.TempDir()}, "validate", "--config", f, "--json")
		if r.code != 0 {
			t.Errorf("%s: exit %d: %s", f, r.code, r.stderr)
			continue
		}
		if s := summaryOf(t, r); len(s["jobs"].([]any)) == 0 {
			t.Errorf("%s: summary lists no jobs: %v", f, s)
		}
	}
}

// A value taken from the environment never shows in a message, even
// when it is what is wrong.
func TestValidateNeverEchoesEnvironment(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(f, []byte("tables:\n  t:\n    location: /tmp/t\njobs:\n  j:\n    schedule: \"${SECRET_SPEC}\"\n    vacuum: {table: t, retain: \"${SECRET_SPEC}\"}\n"), 0o644)
	r := sluice(t, []string{"SECRET_SPEC=hunter2-not-a-spec"}, "validate", "--config", f)
	if r.code != 1 || strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("exit %d, stderr %q: want a failure that hides the value", r.code, r.stderr)
	}
	for _, w := range []string{"p.yaml:6:15: jobs.j.schedule: bad cron spec (value from the environment)", "jobs.j.vacuum.retain: bad value: want a duration"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not hold %q", r.stderr, w)
		}
	}
}

// validate runs every kind's own checks: a negative vacuum retention
// passed it before and failed every run. And a job that fails when it
// runs (a landing folder that is not there) makes sluice run exit 1 with
// the job's reason, not 2 with "see --help" for a command line nobody
// typed.
func TestValidateAndRunExitCodesOfJobOptions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	os.WriteFile(cfg, []byte(`lake: lake
tables:
  events: {location: lake/events, schema: "id:int64,ts:timestamp", partition_by: day(ts)}
jobs:
  load:
    schedule: "CRON_TZ=UTC @daily"
    ingest: {table: events, from: no-such-folder, format: jsonl}
  vac:
    schedule: "CRON_TZ=UTC @daily"
    vacuum: {table: events, retain: -1h}
`), 0o644)
	r := sluice(t, nil, "validate", "--config", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, "p.yaml:10:29: jobs.vac.vacuum.retain: -1h0m0s: retention is negative") {
		t.Fatalf("validate: exit %d, %s", r.code, r.stderr)
	}
	os.WriteFile(cfg, []byte(strings.Replace(string(must(os.ReadFile(cfg))), "retain: -1h", "retain: 168h", 1)), 0o644)
	r = sluice(t, nil, "run", "--config", cfg, "load", "--at", "2024-01-02")
	if r.code != 1 || strings.Contains(r.stderr, "--help") || !strings.Contains(r.stderr, "no-such-folder") {
		t.Fatalf("run of a job whose landing folder is missing: exit %d, %s; want 1 naming the folder", r.code, r.stderr)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
