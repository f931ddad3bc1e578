package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

// Sentinel secrets of the scheduler: the PostgreSQL password of a publish
// job's URL (written in the pipeline file, and given through ${ENV}), the
// admin API's token, and a wrong token a client sent.
const (
	sentinelPGPass     = "SENTINELPGPASS"
	sentinelPGEnvPass  = "SENTINELPGENVPASS"
	sentinelAdminToken = "SENTINELADMINTOKEN"
	sentinelWrongToken = "SENTINELWRONGTOKEN"
)

// TestSecretsNeverInSchedulerOutput runs `sluice serve` on an S3 lake with
// the AWS secrets in its environment, an admin token, a Kafka source and
// PostgreSQL URLs with passwords (in the file and through ${ENV}), with
// jobs that succeed and jobs that fail, and searches everything the
// scheduler shows for each secret: the serve log, `sluice runs` (text and
// --json), `sluice run` and `sluice validate`, /healthz, /metrics,
// /api/runs, /api/jobs, and the answers to API calls with the right token
// and a wrong one.
func TestSecretsNeverInSchedulerOutput(t *testing.T) {
	dir := t.TempDir()
	landing := filepath.Join(dir, "landing")
	writeEvents(t, landing, "a.jsonl", 0, 20)
	lake := "s3://" + testenv.NewBucket(t) + "/lake"
	config := filepath.Join(dir, "pipeline.yaml")
	os.WriteFile(config, []byte(`lake: `+lake+`
tables:
  events: {location: `+lake+`/events, schema: "`+ingestSchema+`", partition_by: day(event_time)}
jobs:
  ingest-events:
    schedule: "*/2 * * * * *"
    ingest: {table: events, from: "`+landing+`"}
  ingest-kafka:
    schedule: "*/2 * * * * *"
    ingest: {table: events, from: "kafka://127.0.0.1:1/events"}
    timeout: 3s
  publish-pg:
    after: [ingest-events]
    publish: {table: events, to: "postgres://sluice:`+sentinelPGPass+`@127.0.0.1:1/lake?sslmode=disable", as: events}
  publish-pg-env:
    after: [ingest-events]
    publish: {table: events, to: "${PG_URL}", as: events}
`), 0o644)
	env := append(append([]string{}, secretsEnv...), "PG_URL=postgres://sluice:"+sentinelPGEnvPass+"@127.0.0.1:1/lake", "SLUICE_TOKEN="+sentinelAdminToken)
	var outputs []result // everything sluice showed, with what produced it in stdout's first line

	cmd := exec.Command(sluiceBin, "serve", "--config", config, "--listen", "127.0.0.1:0", "--log-format", "json", "--lease-ttl", "5s", "-v")
	cmd.Env = append(append(os.Environ(), testenv.Env()...), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logDone := make(chan string)
	listen := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			b.WriteString(line + "\n")
			if strings.Contains(line, `"msg":"serving"`) {
				if _, rest, ok := strings.Cut(line, `"listen":"`); ok {
					addr, _, _ := strings.Cut(rest, `"`)
					select {
					case listen <- addr:
					default:
					}
				}
			}
		}
		logDone <- b.String()
	}()
	var addr string
	select {
	case addr = <-listen:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not say where it listens in 30s")
	}

	// Wait until every job has a finished run: the ingest and its
	// publishes' failures, the Kafka ingest's.
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := sluice(t, env, "--json", "runs", "--config", config)
		outputs = append(outputs, r)
		done := map[string]string{}
		for _, run := range runsOf(t, r) {
			if run["status"] != "running" {
				done[run["job"].(string)] = run["status"].(string)
			}
		}
		if len(done) == 4 {
			if done["ingest-events"] != "succeeded" || done["ingest-kafka"] != "failed" || done["publish-pg"] != "failed" || done["publish-pg-env"] != "failed" {
				t.Errorf("statuses %v; want the landing ingest to succeed and the rest to fail", done)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs finished in 90s: %v", done)
		}
		time.Sleep(time.Second)
	}

	get := func(method, path, token string) int {
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var h strings.Builder
		resp.Header.Write(&h)
		outputs = append(outputs, result{resp.StatusCode, method + " " + path + "\n" + string(body), h.String()})
		return resp.StatusCode
	}
	get("GET", "/healthz", "")
	get("GET", "/metrics", "")
	get("GET", "/api/runs", "")
	get("GET", "/api/jobs", "")
	get("GET", "/api/runs", sentinelAdminToken)
	if code := get("POST", "/api/jobs/publish-pg/run", sentinelAdminToken); code/100 != 2 {
		t.Errorf("a run asked for with the token: HTTP %d", code)
	}
	if code := get("POST", "/api/jobs/publish-pg/run", sentinelWrongToken); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("a run asked for with a wrong token: HTTP %d", code)
	}
	if code := get("POST", "/api/jobs/ingest-kafka/run", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("a run asked for without a token: HTTP %d", code)
	}
	time.Sleep(4 * time.Second) // the triggered runs fail again, and log it
	get("GET", "/api/runs", "")
	get("GET", "/metrics", "")

	// A Kafka URL with credentials is refused by validate (credentials go
	// in KAFKA_USERNAME and KAFKA_PASSWORD, or the sasl_ keys), by run
	// too, saying so without the password.
	kafkaConfig := filepath.Join(dir, "kafka.yaml")
	os.WriteFile(kafkaConfig, []byte(`lake: `+lake+`
tables:
  events: {location: `+lake+`/events}
jobs:
  ingest-kafka:
    schedule: "@daily"
    ingest: {table: events, from: "kafka://reader:`+sentinelKafkaPass+`@127.0.0.1:1/events"}
`), 0o600)
	for _, args := range [][]string{{"validate", "--config", kafkaConfig}, {"run", "--config", kafkaConfig, "ingest-kafka"}} {
		r := sluice(t, env, args...)
		outputs = append(outputs, r)
		if r.code != 1 || !strings.Contains(r.stderr, "takes no user name or password") {
			t.Errorf("sluice %s with a Kafka password: exit %d, %s", args[0], r.code, r.stderr)
		}
	}
	outputs = append(outputs,
		sluice(t, env, "runs", "--config", config),
		sluice(t, env, "--json", "runs", "--config", config, "--status", "failed"),
		sluice(t, env, "validate", "--config", config),
		sluice(t, env, "--json", "run", "--config", config, "publish-pg-env", "--rerun"),
		sluice(t, env, "run", "--config", config, "publish-pg", "--rerun", "-v"),
	)
	cmd.Process.Signal(syscall.SIGTERM)
	serveLog := <-logDone
	outputs = append(outputs, result{0, "serve log", serveLog})
	cmd.Wait()
	if !strings.Contains(serveLog, `"status":"failed"`) || !strings.Contains(serveLog, "publish") {
		t.Errorf("the serve log shows no failed publish:\n%s", serveLog)
	}

	var failedRuns int
	for _, run := range runsOf(t, sluice(t, env, "--json", "runs", "--config", config, "--status", "failed")) {
		if e, _ := run["error"].(string); e != "" {
			t.Logf("%s: %s", run["job"], e)
			failedRuns++
		}
	}
	if failedRuns < 3 {
		t.Errorf("%d failed runs with an error, want the Kafka ingest and both publishes", failedRuns)
	}
	for _, r := range outputs {
		all := strings.ToLower(r.stdout + r.stderr)
		for _, s := range []string{"sentinel", strings.ToLower(testenv.S3SecretAccessKey)} {
			if strings.Contains(all, s) {
				first, _, _ := strings.Cut(r.stdout, "\n")
				t.Errorf("a secret (%s) shows in output %q:\n%s\n%s", s, first, r.stdout, r.stderr)
			}
		}
	}
}
