package scheduler

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func call(t *testing.T, method, url, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// The admin API: mutating calls need the token (compared in constant
// time), a run started through it runs, a running run is cancelled
// through it and recorded cancelled, and /metrics parses as Prometheus
// text with the runs counted by job and status.
func TestAdminAPI(t *testing.T) {
	started := make(chan string, 4)
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		if RunID(ctx) == "" {
			t.Errorf("the job's context carries no run ID")
		}
		started <- iv.Key()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	clock := NewFakeClock(t0.Add(5 * time.Second))
	d := newDispatches()
	r := &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour, OnFinish: metrics.Observe}
	s := &Server{Runner: r, OnDispatch: d.hook, Grace: time.Second}
	srv := httptest.NewServer((&Admin{Server: s, Token: "s3cret", Registry: reg}).Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	first := <-started // the catch-up run, blocking

	for _, tok := range []string{"", "wrong", "s3cre", "s3cret-and-more"} {
		if code, _ := call(t, "POST", srv.URL+"/api/runs/x/cancel", tok); code != http.StatusUnauthorized {
			t.Errorf("cancel with token %q: %d, want 401", tok, code)
		}
		if code, _ := call(t, "POST", srv.URL+"/api/jobs/load/run", tok); code != http.StatusUnauthorized {
			t.Errorf("run with token %q: %d, want 401", tok, code)
		}
	}
	if code, _ := call(t, "POST", srv.URL+"/api/runs/nope/cancel", "s3cret"); code != http.StatusNotFound {
		t.Errorf("cancel of an unknown run: %d, want 404", code)
	}
	if code, _ := call(t, "POST", srv.URL+"/api/jobs/nope/run", "s3cret"); code != http.StatusNotFound {
		t.Errorf("run of an unknown job: %d, want 404", code)
	}
	code, body := call(t, "GET", srv.URL+"/api/runs", "")
	running := body["running_here"].([]any)
	if code != 200 || len(running) != 1 {
		t.Fatalf("/api/runs: %d %v", code, body)
	}
	id := running[0].(map[string]any)["id"].(string)
	if code, _ := call(t, "POST", srv.URL+"/api/runs/"+id+"/cancel", "s3cret"); code != http.StatusOK {
		t.Fatalf("cancel: %d", code)
	}
	sched := p.Jobs["load"].Schedule
	iv := sched.Latest(clock.Now())
	d.wait("load", iv, 1)
	rec, _, _ := h.Get(context.Background(), "load", first)
	if rec.Status != StatusCancelled {
		t.Fatalf("cancelled run's record: %+v", rec)
	}
	// A run through the API: the cancelled interval again.
	if code, body := call(t, "POST", srv.URL+"/api/jobs/load/run", "s3cret"); code != http.StatusAccepted || body["interval"] != first {
		t.Fatalf("run: %d %v", code, body)
	}
	if again := <-started; again != first {
		t.Fatalf("the API ran %s, want %s", again, first)
	}
	if code, body := call(t, "GET", srv.URL+"/api/jobs", ""); code != 200 || len(body["jobs"].([]any)) != 1 {
		t.Errorf("/api/jobs: %d %v", code, body)
	}
	cancel()
	for waiting := true; waiting; {
		select {
		case <-served:
			waiting = false
		default:
			clock.Advance(100 * time.Millisecond) // through the grace
		}
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	runs := families["sluice_scheduler_runs_total"]
	if runs == nil {
		t.Fatalf("no sluice_scheduler_runs_total in %v", families)
	}
	var cancelled float64
	for _, m := range runs.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["job"] == "load" && labels["status"] == "cancelled" {
			cancelled = m.Counter.GetValue()
		}
	}
	if cancelled < 1 {
		t.Errorf("runs_total{job=load,status=cancelled} = %v, want >= 1", cancelled)
	}
	if !strings.HasPrefix(families["sluice_scheduler_run_duration_seconds"].GetType().String(), "HISTOGRAM") {
		t.Errorf("run duration is not a histogram")
	}
}
