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
	clock := newFakeClock(t0.Add(5 * time.Second))
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

// Without a token the admin listens on loopback, where any web page the
// operator visits could reach it: a cross-site form post, a fetch from
// another origin, or a page on a name rebound to 127.0.0.1 must not start
// or cancel runs (before, a plain form post started one). A call with
// the request header, from curl or a script, does.
func TestAdminRefusesCrossSiteRequests(t *testing.T) {
	p, h, kinds := serveLake(t, t.TempDir(), "", func(ctx context.Context, j *Job, iv Interval) (map[string]any, error) {
		return nil, nil
	})
	clock := newFakeClock(t0.Add(5 * time.Second))
	d := newDispatches()
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h, Clock: clock, LeaseTTL: time.Hour}, OnDispatch: d.hook, Grace: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	<-s.Ready()
	for _, token := range []string{"", "s3cret"} {
		srv := httptest.NewServer((&Admin{Server: s, Token: token}).Handler())
		post := func(header map[string]string, host string) int {
			t.Helper()
			req, _ := http.NewRequest("POST", srv.URL+"/api/jobs/load/run", strings.NewReader("x=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range header {
				req.Header.Set(k, v)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if host != "" {
				req.Host = host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		own := srv.Listener.Addr().String()
		refused := map[string]struct {
			header map[string]string
			host   string
		}{
			"a cross-site form post":                  {map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", RequestHeader: "1"}, ""},
			"a page of another port on localhost":     {map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site", RequestHeader: "1"}, ""},
			"an Origin that is not a URL":             {map[string]string{"Origin": "null", RequestHeader: "1"}, ""},
			"a browser's word alone that it is cross": {map[string]string{"Sec-Fetch-Site": "cross-site", RequestHeader: "1"}, ""},
		}
		if token == "" {
			refused["a plain form post, no Origin (an old browser)"] = struct {
				header map[string]string
				host   string
			}{nil, ""}
			refused["a page on a name rebound to 127.0.0.1"] = struct {
				header map[string]string
				host   string
			}{map[string]string{"Origin": "http://rebound.example:" + strings.Split(own, ":")[1], "Sec-Fetch-Site": "same-origin", RequestHeader: "1"}, "rebound.example:" + strings.Split(own, ":")[1]}
		}
		for name, c := range refused {
			if code := post(c.header, c.host); code != http.StatusForbidden {
				t.Errorf("token %q, %s: status %d, want 403", token, name, code)
			}
		}
		for name, header := range map[string]map[string]string{
			"curl with the request header":       {RequestHeader: "1"},
			"a page of the admin's own origin":   {"Origin": "http://" + own, "Sec-Fetch-Site": "same-origin"},
			"localhost by name, with the header": {RequestHeader: "1"},
		} {
			host := ""
			if strings.HasPrefix(name, "localhost") {
				host = "localhost:" + strings.Split(own, ":")[1]
			}
			if code := post(header, host); code != http.StatusAccepted {
				t.Errorf("token %q, %s: status %d, want 202", token, name, code)
			}
		}
		if token == "" {
			req, _ := http.NewRequest("GET", srv.URL+"/api/runs", nil)
			req.Host = "rebound.example"
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET /api/runs for Host rebound.example without a token: %d, want 403", resp.StatusCode)
			}
		}
		srv.Close()
	}
}
