package main

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/faults"
	"github.com/sluice-data/sluice/internal/testenv"
)

// faultyS3 puts a proxy with in's faults in front of the S3 test server
// and returns the environment that points sluice at it.
func faultyS3(t *testing.T, in *faults.Injector) []string {
	t.Helper()
	target, err := url.Parse(testenv.S3Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in.Proxy(target))
	t.Cleanup(srv.Close)
	return []string{"AWS_ENDPOINT_URL=" + srv.URL}
}

// A table's life on S3 through 500s, throttling, timeouts before and
// after writes landed and slow reads: the SDK retries, ambiguous writes
// are settled, and every command succeeds at its first run; the table
// then holds every record once. No request is faulted more than three
// times in a row, so the SDK's five attempts always get one through: the
// draws of new file names differ from run to run, and without the limit
// one object in a few hundred runs out of attempts.
func TestCommandsThroughRetryableFaults(t *testing.T) {
	landing := filepath.Join(t.TempDir(), "landing")
	for i := range 4 {
		writeEvents(t, landing, fmt.Sprintf("%d.jsonl", i), i*25, 25)
	}
	in := faults.New(faults.Config{Seed: 19, SlowDelay: 20 * time.Millisecond, MaxInARow: 3, Rates: map[faults.Kind]float64{
		faults.ServerError: 0.05, faults.Throttle: 0.05, faults.TimeoutBefore: 0.03, faults.TimeoutAfter: 0.05, faults.SlowRead: 0.05,
	}})
	env := faultyS3(t, in)
	loc := testenv.Location(t, testenv.S3)
	for _, args := range [][]string{
		{"init", loc, "--schema", ingestSchema, "--partition-by", "day(event_time)"},
		{"ingest", loc, "--from", landing, "--max-records", "40"},
		{"ingest", loc, "--from", landing, "--max-records", "40"},
		{"ingest", loc, "--from", landing},
		{"compact", loc, "--min-input-files", "2"},
		{"vacuum", loc, "--retain", "0s", "--force"},
	} {
		mustSluiceEnv(t, env, args...)
	}
	t.Logf("faults: %s", in)
	if in.Total() == 0 {
		t.Fatalf("no fault was injected")
	}
	in.SetEnabled(false)
	if got := tableRows(t, env, loc); got != 100 {
		t.Errorf("the table holds %d rows, want 100", got)
	}
}

// tableRows is the latest version's row count, from sluice history.
func tableRows(t *testing.T, env []string, loc string) int {
	t.Helper()
	vs := summaryOf(t, mustSluiceEnv(t, env, "--json", "history", loc))["versions"].([]any)
	return int(vs[len(vs)-1].(map[string]any)["rows"].(float64))
}

// A store that answers every request with 500, or throttles every one,
// fails the command after the SDK's retries: exit 1, one line naming the
// object and the store's answer, and the same in --json's error.
func TestCommandsFailOnPersistentFaults(t *testing.T) {
	landing := filepath.Join(t.TempDir(), "landing")
	writeEvents(t, landing, "a.jsonl", 0, 10)
	for _, c := range []struct {
		kind faults.Kind
		want []string // one of these
	}{{faults.ServerError, []string{"HTTP 500 InternalError"}}, {faults.Throttle, []string{"HTTP 503 SlowDown", "HTTP 429 TooManyRequests"}}} {
		t.Run(string(c.kind), func(t *testing.T) {
			t.Parallel()
			loc := testenv.Location(t, testenv.S3)
			mustSluice(t, "init", loc, "--schema", ingestSchema, "--partition-by", "day(event_time)")
			// Throttling answers 503 SlowDown and 429 by turns.
			in := faults.New(faults.Config{Seed: 2, Rates: map[faults.Kind]float64{c.kind: 1}})
			env := faultyS3(t, in)
			r := sluice(t, env, "ingest", loc, "--from", landing)
			msg := strings.TrimSuffix(r.stderr, "\n")
			if r.code != 1 || strings.Contains(msg, "\n") || !says(msg, c.want) || !strings.Contains(msg, loc+"/_sluice/") {
				t.Errorf("ingest: exit %d, stderr %q; want 1 and one line naming the object under %s and %q", r.code, r.stderr, loc, c.want)
			}
			j := summaryOf(t, sluice(t, env, "--json", "ingest", loc, "--from", landing))
			if e, _ := j["error"].(string); !says(e, c.want) {
				t.Errorf("--json error %q; want it to say %q", e, c.want)
			}
			in.SetEnabled(false)
			if got := tableRows(t, env, loc); got != 0 {
				t.Errorf("the failed ingests left %d rows", got)
			}
		})
	}
}

// says reports whether msg holds one of want.
func says(msg string, want []string) bool {
	for _, w := range want {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}
