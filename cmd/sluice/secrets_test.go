package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

// Sentinel secrets: each names what it stands for, and none may show in
// anything sluice prints. Output is searched case-insensitively: a Kafka
// URL's hosts are lowercased on their way into messages.
const (
	sentinelSAS       = "sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00:00:00Z&spr=http&sig=SENTINELSASSIG%2Fk%3D"
	sentinelAccessKey = "SENTINELACCOUNTKEYAA" // valid base64, as an AccountKey must be
	sentinelAWSSecret = "SENTINELAWSSECRET"
	sentinelAWSToken  = "SENTINELAWSTOKEN"
	sentinelKafkaPass = "SENTINELKAFKAPASS"
	// The SASL passwords of a Kafka broker: the right one and a wrong one.
	sentinelKafkaSCRAMPass  = "SENTINELKAFKASCRAMPASS"
	sentinelKafkaSCRAMWrong = "SENTINELKAFKASCRAMWRONG"
)

// secretsEnv holds the AWS secrets every run gets (the S3 test server
// checks the access key id only, so the sentinels are accepted).
var secretsEnv = []string{"AWS_SECRET_ACCESS_KEY=" + sentinelAWSSecret, "AWS_SESSION_TOKEN=" + sentinelAWSToken}

// outputModes are the ways a user runs a command: each prints differently.
var outputModes = [][]string{nil, {"--json"}, {"-v"}, {"--json", "-v"}}

// TestSecretsNeverPrinted runs succeeding and failing commands on every
// store with secrets in the environment and in the arguments, in every
// output mode, and searches all of stdout and stderr for each secret.
// The failing runs are the ones that leaked: a transport error's text
// embeds the request URL, and with a SAS connection string that URL holds
// the signature.
func TestSecretsNeverPrinted(t *testing.T) {
	testenv.Setup(t)
	azurite := azuriteEndpoint(t)
	sasEnv := func(endpoint string) []string {
		return append(secretsEnv, "AZURE_STORAGE_CONNECTION_STRING=BlobEndpoint="+endpoint+";SharedAccessSignature="+sentinelSAS)
	}
	landing := filepath.Join(t.TempDir(), "landing")
	writeEvents(t, landing, "a.jsonl", 0, 20)
	writeEvents(t, landing, "b.jsonl", 20, 20)

	t.Run("succeeding commands on every store", func(t *testing.T) {
		for _, kind := range testenv.Kinds {
			for _, mode := range outputModes {
				loc := testenv.Location(t, kind)
				for _, args := range tableCommands(loc, landing) {
					r := sluice(t, secretsEnv, append(args, mode...)...)
					if r.code != 0 {
						t.Fatalf("%s: sluice %s: exit %d\n%s", kind, strings.Join(args, " "), r.code, r.stderr)
					}
					assertNoSecret(t, r, args)
				}
			}
		}
	})

	az := "az://" + testenv.AzuriteAccount + "/" + testenv.NewContainer(t) + "/data/tbl"
	failing := []struct {
		name  string
		env   []string
		loc   string
		modes [][]string // the output modes to run in
	}{
		{"a SAS connection string Azurite refuses", sasEnv(azurite), az, outputModes},
		{"a SAS connection string to a port where nothing listens", sasEnv("http://127.0.0.1:1/" + testenv.AzuriteAccount), az, outputModes},
		{"an account key Azurite refuses", append(secretsEnv, "AZURE_STORAGE_CONNECTION_STRING="+testenv.AzuriteConnectionString(t, sentinelAccessKey)), az, outputModes},
		{"a SAS token as the query of an az:// location", secretsEnv, az + "?" + sentinelSAS, outputModes},
		{"a signature as the query of an s3:// location", secretsEnv, "s3://" + testenv.NewBucket(t) + "/t?X-Amz-Signature=" + sentinelAWSSecret, outputModes},
		{"a password in an s3:// location", secretsEnv, "s3://AKIA:" + sentinelAWSSecret + "@" + testenv.NewBucket(t) + "/t", [][]string{nil}},
		{"AWS secrets and an S3 server that is not there", append(secretsEnv, "AWS_ENDPOINT_URL=http://127.0.0.1:1"), "s3://" + testenv.NewBucket(t) + "/t", outputModes},
	}
	for _, c := range failing {
		t.Run(c.name, func(t *testing.T) {
			var runs [][]string
			for _, mode := range c.modes {
				for _, args := range tableCommands(c.loc, landing) {
					runs = append(runs, append(args, mode...))
				}
			}
			// At once: a run against a closed port spends seconds in
			// the SDK's retries before it gives up.
			for i, r := range sluiceAll(t, c.env, runs) {
				if r.code == 0 {
					t.Errorf("sluice %s: exit 0, want a failure\n%s%s", strings.Join(runs[i], " "), r.stdout, r.stderr)
				}
				assertNoSecret(t, r, runs[i])
			}
		})
	}

	t.Run("a password in a kafka:// source", func(t *testing.T) {
		loc := filepath.Join(t.TempDir(), "events")
		initEvents(t, loc)
		for _, mode := range outputModes {
			args := []string{"ingest", loc, "--from", "kafka://reader:" + sentinelKafkaPass + "@127.0.0.1:1/events"}
			r := sluice(t, secretsEnv, append(args, mode...)...)
			if r.code == 0 {
				t.Fatalf("sluice %s: exit 0, want a failure", strings.Join(args, " "))
			}
			assertNoSecret(t, r, args)
		}
	})
}

// sluiceAll runs sluice once per args, all at once, and returns the
// results in order.
func sluiceAll(t *testing.T, env []string, runs [][]string) []result {
	t.Helper()
	out := make([]result, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, args := range runs {
		wg.Go(func() {
			cmd := exec.Command(sluiceBin, args...)
			cmd.Env = append(append(os.Environ(), testenv.Env()...), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				out[i].code, err = ee.ExitCode(), nil
			}
			out[i].stdout, out[i].stderr, errs[i] = stdout.String(), stderr.String(), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// tableCommands is a table's life, from init to vacuum.
func tableCommands(loc, landing string) [][]string {
	return [][]string{
		{"init", loc, "--schema", ingestSchema, "--partition-by", "day(event_time)"},
		{"ingest", loc, "--from", landing},
		{"import", loc, "--from", loc},
		{"files", loc},
		{"compact", loc},
		{"history", loc},
		{"vacuum", loc},
	}
}

// assertNoSecret fails t if any secret a test handed sluice shows in what
// the run printed.
func assertNoSecret(t *testing.T, r result, args []string) {
	t.Helper()
	out := strings.ToLower(r.stdout + r.stderr)
	for _, s := range []string{"SENTINEL", testenv.AzuriteAccountKey[:16], testenv.S3SecretAccessKey} {
		if i := strings.Index(out, strings.ToLower(s)); i >= 0 {
			t.Errorf("sluice %s printed a secret (%s):\nstdout: %s\nstderr: %s", strings.Join(args, " "), s, r.stdout, r.stderr)
			return
		}
	}
}

// azuriteEndpoint is the BlobEndpoint of the test Azurite.
func azuriteEndpoint(t *testing.T) string {
	for _, kv := range strings.Split(testenv.AzuriteConnectionString(t, testenv.AzuriteAccountKey), ";") {
		if v, ok := strings.CutPrefix(kv, "BlobEndpoint="); ok {
			return v
		}
	}
	t.Fatal("no BlobEndpoint in Azurite's connection string")
	return ""
}

// TestVerboseLogRedacted logs, through the logger -v sets up, a message, an
// error and a string that hold secrets: the JSON line holds none of them
// and still parses.
func TestVerboseLogRedacted(t *testing.T) {
	var buf bytes.Buffer
	a := newApp()
	root := a.rootCommand() // binds the flags, resetting a.verbose to its default
	a.stderr, a.verbose = &buf, true
	if err := a.setup(root); err != nil {
		t.Fatal(err)
	}
	a.logger.Info("read https://acct.blob.core.windows.net/c/k?sv=1&sig=SENTINELMSG",
		"err", errors.New(`get: Get "http://127.0.0.1:1/c/k?sig=SENTINELERR": dial tcp`),
		"source", "kafka://reader:SENTINELPASS@b1:9092/events",
		slog.Group("store", "conn", "AccountName=a;AccountKey=SENTINELKEY;"))
	line := buf.String()
	if strings.Contains(line, "SENTINEL") {
		t.Fatalf("-v log line holds a secret: %s", line)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("-v log line %q: %v", line, err)
	}
	if m["source"] != "kafka://reader:REDACTED@b1:9092/events" {
		t.Fatalf("source logged as %v, want the URL with its password redacted", m["source"])
	}
}
