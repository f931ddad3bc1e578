package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// jobsPipeline: a daily job in New York with one after it, and an hourly
// UTC job over a table that does not exist (its runs fail).
const jobsPipeline = `lake: lake
tables:
  events: {location: lake/events}
  gone: {location: lake/gone}
jobs:
  clean:
    schedule: "CRON_TZ=America/New_York 0 6 * * *"
    vacuum: {table: events, retain: 0s, force: true}
  tidy:
    after: [clean]
    vacuum: {table: events, retain: 0s, force: true}
  broken:
    schedule: "CRON_TZ=UTC @hourly"
    vacuum: {table: gone}
`

// recordFiles lists the run records under the lake's _sluice/runs/.
func recordFiles(t *testing.T, lake string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(lake, "_sluice", "runs"), func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return filepath.SkipAll
		}
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// jobsByName runs sluice jobs --json and returns its jobs by name, and
// their order.
func jobsByName(t *testing.T, config string) (map[string]map[string]any, []string) {
	t.Helper()
	s := summaryOf(t, mustSluice(t, "jobs", "--config", config, "--json"))
	out, order := map[string]map[string]any{}, []string{}
	for _, j := range s["jobs"].([]any) {
		m := j.(map[string]any)
		out[m["job"].(string)] = m
		order = append(order, m["job"].(string))
	}
	return out, order
}

// sluice jobs lists the pipeline's jobs in file order with their next
// three ticks in their own zone and their last run from the run index;
// run --dry-run prints the chain it would run and writes no run record.
func TestJobsAndDryRun(t *testing.T) {
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	initEvents(t, filepath.Join(lake, "events"))
	config := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(config, []byte(jobsPipeline), 0o644); err != nil {
		t.Fatal(err)
	}

	dry := summaryOf(t, mustSluice(t, "run", "--config", config, "clean", "--dry-run", "--at", "2024-05-01", "--json"))
	chain := dry["chain"].([]any)
	if dry["dry_run"] != true || len(chain) != 2 || chain[0].(map[string]any)["job"] != "clean" || chain[1].(map[string]any)["job"] != "tidy" {
		t.Fatalf("dry run: %v; want the chain clean, tidy", dry)
	}
	for _, c := range chain {
		if c := c.(map[string]any); c["would_run"] != true || c["status"] != nil || c["interval"] != "20240501T100000Z" {
			t.Errorf("dry run before any run: %v; want the 2024-05-01 06:00 New York interval, no record, would run", c)
		}
	}
	if iv := dry["interval"].(map[string]any); iv["start"] != "2024-05-01T06:00:00-04:00" || iv["end"] != "2024-05-02T06:00:00-04:00" {
		t.Errorf("dry run interval %v, want 06:00 to 06:00 New York time", iv)
	}
	if files := recordFiles(t, lake); len(files) != 0 {
		t.Fatalf("a dry run wrote run records: %v", files)
	}

	t.Run("before any run: no last run, three ticks in the job's zone", func(t *testing.T) {
		jobs, order := jobsByName(t, config)
		if strings.Join(order, ",") != "clean,tidy,broken" {
			t.Fatalf("jobs in order %v, want file order", order)
		}
		ny, _ := time.LoadLocation("America/New_York")
		for name, zone := range map[string]*time.Location{"clean": ny, "broken": time.UTC} {
			j := jobs[name]
			if j["last_run"] != nil || j["zone"] != zone.String() {
				t.Errorf("%s: %v", name, j)
			}
			ticks := j["next_ticks"].([]any)
			prev := time.Now()
			for _, tick := range ticks {
				at, err := time.Parse(time.RFC3339, tick.(string))
				if err != nil || !at.After(prev) || at.In(zone).Format(time.RFC3339) != tick {
					t.Errorf("%s: tick %v is not a later time in %s (%v)", name, tick, zone, err)
				}
				prev = at
			}
			if len(ticks) != 3 || name == "clean" && !strings.Contains(ticks[0].(string), "T06:00:00-0") {
				t.Errorf("%s: ticks %v", name, ticks)
			}
		}
		if after := jobs["tidy"]["after"].([]any); len(after) != 1 || after[0] != "clean" {
			t.Errorf("tidy after %v, want [clean]", after)
		}
	})

	t.Run("after runs: succeeded, and failed with its error", func(t *testing.T) {
		mustSluice(t, "run", "--config", config, "clean", "--at", "2024-05-01")
		if r := sluice(t, nil, "run", "--config", config, "broken", "--at", "2024-05-01T10:30:00Z"); r.code != 1 {
			t.Fatalf("broken run: exit %d, want 1: %s", r.code, r.stderr)
		}
		jobs, _ := jobsByName(t, config)
		for name, want := range map[string]string{"clean": "succeeded", "tidy": "succeeded", "broken": "failed"} {
			last, _ := jobs[name]["last_run"].(map[string]any)
			if last == nil || last["status"] != want || last["attempt"] != float64(1) {
				t.Errorf("%s: last run %v, want %s", name, last, want)
			}
		}
		if last := jobs["broken"]["last_run"].(map[string]any); last["interval"] != "20240501T090000Z" || !strings.Contains(last["error"].(string), "not found") {
			t.Errorf("broken: last run %v, want interval 09:00 UTC and the error", last)
		}
		text := mustSluice(t, "jobs", "--config", config).stdout
		if !strings.Contains(text, "20240501T100000Z succeeded attempt 1") || !strings.Contains(text, "failed attempt 1") {
			t.Errorf("text output:\n%s", text)
		}
	})

	t.Run("dry run after the run: already succeeded, nothing written", func(t *testing.T) {
		before := recordFiles(t, lake)
		r := mustSluice(t, "run", "--config", config, "clean", "--dry-run", "--at", "2024-05-01")
		if !strings.Contains(r.stdout, "20240501T100000Z") || !strings.Contains(r.stdout, "already succeeded") || !strings.Contains(r.stdout, "tidy") {
			t.Errorf("dry run output:\n%s", r.stdout)
		}
		only := summaryOf(t, mustSluice(t, "run", "--config", config, "clean", "--dry-run", "--only", "--rerun", "--at", "2024-05-01", "--json"))
		if c := only["chain"].([]any); len(c) != 1 || c[0].(map[string]any)["would_run"] != true || c[0].(map[string]any)["status"] != "succeeded" {
			t.Errorf("--only --rerun dry run: %v", only)
		}
		if after := recordFiles(t, lake); strings.Join(after, ",") != strings.Join(before, ",") || len(after) != 3 {
			t.Errorf("records before the dry runs %v, after %v", before, after)
		}
	})
}
