package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

// sluice jobs on a lake on the S3 test server: after runs, each job's
// kind, schedule and zone, next ticks, after: and last run come from the
// lake's run index there (a job after another has its upstream's
// schedule); a schedule and a location holding control characters are
// shown escaped in the text output. (A job's name cannot hold one: the
// pipeline file refuses it.)
func TestJobsOnS3(t *testing.T) {
	lake := testenv.Location(t, testenv.S3)
	initEvents(t, lake+"/events")
	config := filepath.Join(t.TempDir(), "pipeline.yaml")
	src := `lake: ` + lake + `
tables:
  events: {location: ` + lake + `/events}
  gone: {location: "` + lake + `/go\ane"}
jobs:
  clean:
    schedule: "CRON_TZ=America/New_York 0 6 * * *"
    vacuum: {table: events, retain: 0s, force: true}
  tidy:
    after: [clean]
    vacuum: {table: events, retain: 0s, force: true}
  broken:
    schedule: "CRON_TZ=UTC 0\t* * * *"
    vacuum: {table: gone}
`
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSluice(t, "run", "--config", config, "clean", "--at", "2024-05-01")
	if r := sluice(t, nil, "run", "--config", config, "broken", "--at", "2024-05-01T10:30:00Z"); r.code != 1 {
		t.Fatalf("broken run: exit %d, want 1: %s", r.code, r.stderr)
	}

	jobs, order := jobsByName(t, config)
	if strings.Join(order, ",") != "clean,tidy,broken" {
		t.Fatalf("jobs in order %v, want file order", order)
	}
	ny, _ := time.LoadLocation("America/New_York")
	for _, c := range []struct {
		job, schedule string
		zone          *time.Location
		after         string
		interval      string
		status        string
	}{
		{"clean", "CRON_TZ=America/New_York 0 6 * * *", ny, "", "20240501T100000Z", "succeeded"},
		{"tidy", "CRON_TZ=America/New_York 0 6 * * *", ny, "clean", "20240501T100000Z", "succeeded"}, // its upstream's
		{"broken", "CRON_TZ=UTC 0\t* * * *", time.UTC, "", "20240501T090000Z", "failed"},
	} {
		j := jobs[c.job]
		var after []string
		for _, a := range j["after"].([]any) {
			after = append(after, a.(string))
		}
		if j["kind"] != "vacuum" || j["schedule"] != c.schedule || strings.Join(after, ",") != c.after {
			t.Errorf("%s: kind %v, schedule %q, after %v; want vacuum, %q, [%s]", c.job, j["kind"], j["schedule"], after, c.schedule, c.after)
		}
		last, _ := j["last_run"].(map[string]any)
		if last == nil || last["interval"] != c.interval || last["status"] != c.status || last["attempt"] != float64(1) {
			t.Errorf("%s: last run %v, want interval %s %s, attempt 1", c.job, last, c.interval, c.status)
		}
		ticks, _ := j["next_ticks"].([]any)
		prev := time.Now()
		for _, tick := range ticks {
			at, err := time.Parse(time.RFC3339, tick.(string))
			if err != nil || !at.After(prev) || at.In(c.zone).Format(time.RFC3339) != tick {
				t.Errorf("%s: tick %v is not a later time in %s (%v)", c.job, tick, c.zone, err)
			}
			prev = at
		}
		if len(ticks) != 3 {
			t.Errorf("%s: ticks %v, want 3", c.job, ticks)
		}
	}
	if msg, _ := jobs["broken"]["last_run"].(map[string]any)["error"].(string); !strings.Contains(msg, `go\ane: table not found`) {
		t.Errorf("broken: error %q does not name the table's location, escaped", msg)
	}

	text := mustSluice(t, "jobs", "--config", config).stdout
	for _, want := range []string{"20240501T100000Z succeeded attempt 1", "20240501T090000Z failed attempt 1", `"CRON_TZ=UTC 0\t* * * *"`, `go\ane`} {
		if !strings.Contains(text, want) {
			t.Errorf("text output does not show %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\a\t") {
		t.Errorf("text output holds a control character:\n%q", text)
	}
}
