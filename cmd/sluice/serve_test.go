package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// sluice serve with a seconds-level schedule runs ingest -> compact ->
// rollup on a local lake and on the S3 test server: for every interval
// each job started after its upstream ended; the tables equal the same
// commands by hand; SIGTERM stops it with exit 0, and its log lines are
// JSON naming job, run and interval.
func TestServeEndToEndSecondsSchedule(t *testing.T) {
	for _, kind := range []string{testenv.Local, testenv.S3} {
		t.Run(kind, func(t *testing.T) { serveEndToEnd(t, testenv.Location(t, kind)) })
	}
}

func serveEndToEnd(t *testing.T, lake string) {
	root := repoRoot(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(config, []byte(`lake: `+lake+`
tables:
  events:
    location: `+lake+`/events
    schema: "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp"
    partition_by: day(event_time)
  list_rollup: {location: `+lake+`/list_rollup}
jobs:
  ingest-events:
    schedule: "*/2 * * * * *"
    ingest: {table: events, from: "`+filepath.Join(root, "testdata", "sample", "events")+`", format: parquet}
  compact-events:
    after: [ingest-events]
    compact: {table: events, min_input_files: 2, scope: all}
  rollup-lists:
    after: [compact-events]
    rollup: {source: events, out: list_rollup, snapshot: "`+filepath.Join(root, "testdata", "pipelines", "demo-snapshot.csv")+`",
             key: [list_id], time: event_time, measure: "subscribers=sum(tally)", through: "2024-05-03"}
`), 0o644)
	cmd := exec.Command(sluiceBin, "serve", "--config", config, "--lease-ttl", "10s", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), testenv.Env()...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := make(chan map[string]any, 1000)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not_json": sc.Text()}
			}
			logs <- m
		}
	}()
	// Wait for three intervals whose rollup finished.
	finished := map[string]int{}
	var lines []map[string]any
	var listen string
	for finished["rollup-lists"] < 3 {
		m, ok := <-logs
		if !ok {
			t.Fatalf("serve ended early: %v", lines)
		}
		lines = append(lines, m)
		if m["msg"] == "serving" {
			listen, _ = m["listen"].(string)
		}
		if m["msg"] == "run finished" {
			if m["status"] != "succeeded" {
				t.Fatalf("a run did not succeed: %v", m)
			}
			finished[m["job"].(string)]++
		}
	}
	// The admin API of the running instance: health and metrics.
	if resp, err := http.Get("http://" + listen + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz on %q: %v %v", listen, resp, err)
	}
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil || families["sluice_scheduler_runs_total"] == nil || families["sluice_scheduler_rows_written_total"] == nil {
		t.Errorf("/metrics: %v; families %d", err, len(families))
	}
	// Every file of the sample's tables is under a quarter of the 256 MiB
	// target: each table written shows at least one small file.
	small := map[string]float64{}
	if f := families["sluice_table_small_files"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" {
					small[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if small["events"] < 1 || small["list_rollup"] < 1 {
		t.Errorf("sluice_table_small_files: %v; want events and list_rollup, each at least 1", small)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for m := range logs {
		lines = append(lines, m)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	for _, m := range lines {
		if m["not_json"] != nil {
			t.Errorf("a log line is not JSON: %v", m["not_json"])
		}
		if m["msg"] == "run finished" && (m["job"] == nil || m["run"] == nil || m["interval"] == nil) {
			t.Errorf("a run's line lacks job, run or interval: %v", m)
		}
	}

	hist := runsOf(t, sluice(t, nil, "runs", "--config", config, "--json"))
	byInterval := map[string]map[string]map[string]any{}
	for _, r := range hist {
		iv := r["interval"].(string)
		if byInterval[iv] == nil {
			byInterval[iv] = map[string]map[string]any{}
		}
		byInterval[iv][r["job"].(string)] = r
	}
	complete := 0
	for iv, jobs := range byInterval {
		chain := []string{"ingest-events", "compact-events", "rollup-lists"}
		for i := 1; i < len(chain); i++ {
			up, down := jobs[chain[i-1]], jobs[chain[i]]
			if down == nil || down["status"] != "succeeded" {
				continue
			}
			if up == nil || up["status"] != "succeeded" || timeOf(t, down["started"]).Before(timeOf(t, up["ended"])) {
				t.Errorf("interval %s: %s ran without its upstream %s done first (%v)", iv, chain[i], chain[i-1], up)
			}
		}
		if r := jobs["rollup-lists"]; r != nil && r["status"] == "succeeded" {
			complete++
		}
	}
	if complete < 3 {
		t.Errorf("%d intervals ran the whole chain, want >= 3", complete)
	}

	hand := t.TempDir()
	events, rollup := filepath.Join(hand, "events"), filepath.Join(hand, "list_rollup")
	mustSluice(t, "init", events, "--schema", "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp", "--partition-by", "day(event_time)")
	mustSluice(t, "ingest", events, "--from", filepath.Join(root, "testdata", "sample", "events"), "--format", "parquet")
	mustSluice(t, "compact", events, "--min-input-files", "2")
	mustSluice(t, "rollup", rollup, "--source", events, "--snapshot", filepath.Join(root, "testdata", "pipelines", "demo-snapshot.csv"),
		"--key", "list_id", "--time", "event_time", "--measure", "subscribers=sum(tally)", "--through", "2024-05-03")
	for _, table := range []string{"events", "list_rollup"} {
		got, want := tableRead(t, localCopy(t, lake+"/"+table)), tableRead(t, filepath.Join(hand, table))
		if got.Rows != want.Rows || got.Checksum != want.Checksum || got.Rows == 0 {
			t.Errorf("%s: served %+v, by hand %+v", table, got, want)
		}
	}
}

// localCopy returns a local folder holding every object of the table at
// loc (its manifests and data files): loc itself when it is local.
func localCopy(t *testing.T, loc string) string {
	t.Helper()
	if !strings.Contains(loc, "://") {
		return loc
	}
	ctx := context.Background()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := filepath.Join(t.TempDir(), path.Base(loc))
	if err := st.List(ctx, "", func(o cloud.ObjectInfo) error {
		rc, _, err := st.Get(ctx, o.Key)
		if err != nil {
			return err
		}
		defer rc.Close()
		p := filepath.Join(dir, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, rc)
		return err
	}); err != nil {
		t.Fatalf("copy %s: %v", loc, err)
	}
	return dir
}

// serve refuses an admin address off loopback without a token (exit 2),
// before it runs anything.
func TestServeRefusesOpenListenWithoutToken(t *testing.T) {
	config := filepath.Join(repoRoot(t), "testdata", "pipelines", "contract.yaml")
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:8080"} {
		r := sluice(t, []string{"SLUICE_TOKEN="}, "serve", "--config", config, "--listen", addr)
		if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address: give --token or SLUICE_TOKEN") {
			t.Errorf("--listen %s: exit %d, stderr %q; want 2 and the reason", addr, r.code, r.stderr)
		}
	}
}
