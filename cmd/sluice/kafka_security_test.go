package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-data/sluice/internal/testenv"
)

// TestIngestKafkaTLSAndSCRAM runs `sluice ingest` against a broker that
// speaks only TLS (its certificate signed by a CA made here) and
// authenticates with SCRAM-SHA-512. A wrong password fails with one line
// saying authentication failed, exit 1. A run of 5,000 records, then a
// run killed with SIGKILL while it reads (their password from
// --sasl-password-file), then a rerun (its password from KAFKA_PASSWORD)
// leave each record in the table exactly once, as a pipeline's ingest job
// of the same topic (its password through ${NAME}) does in another table.
// --tls-insecure-skip-verify warns in the log and the summary; validate
// refuses an unknown mechanism and TLS for landing files. Neither password
// shows in anything sluice prints, plain, --json or -v, nor in the run
// history.
func TestIngestKafkaTLSAndSCRAM(t *testing.T) {
	const user, n = "reader", 20000
	dir := t.TempDir()
	caFile, serverTLS, clientTLS := kafkaTLS(t, dir)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"), kfake.TLS(serverTLS),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, sentinelKafkaSCRAMPass))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := "kafka://" + strings.Join(c.ListenAddrs(), ",") + "/events"
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DialTLSConfig(clientTLS),
		kgo.SASL(scram.Auth{User: user, Pass: sentinelKafkaSCRAMPass}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var rs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":%d,"event_time":"2024-01-%02dT10:00:00Z"}`,
			i, i, i%7, 1+i%28)
		rs = append(rs, &kgo.Record{Value: []byte(v), Partition: int32(i % 4)})
	}
	if err := p.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(dir, "lake", "events")
	initEvents(t, loc)
	ingest := []string{"ingest", loc, "--from", src, "--tls-ca", caFile, "--sasl", "scram-sha-512"}
	withPassword := func(pass string) []string {
		return []string{"KAFKA_USERNAME=" + user, "KAFKA_PASSWORD=" + pass}
	}

	// A wrong password, in every output mode, at once.
	var runs [][]string
	for _, mode := range outputModes {
		runs = append(runs, append(append([]string{}, ingest...), mode...))
	}
	for i, r := range sluiceAll(t, withPassword(sentinelKafkaSCRAMWrong), runs) {
		assertNoSecret(t, r, runs[i])
		if r.code != 1 || !strings.Contains(r.stderr, "authentication failed") {
			t.Fatalf("sluice %s with a wrong password: exit %d, stderr %s", strings.Join(runs[i], " "), r.code, r.stderr)
		}
		if len(runs[i]) == len(ingest) {
			failsWithOneLine(t, r, "authentication failed", `as user "reader"`)
		}
	}

	// One run takes 5,000 records and commits; the next is killed with
	// SIGKILL once its partitions are assigned, while it reads (their
	// password from a file); then a rerun finishes, its password from
	// KAFKA_PASSWORD. A static member takes the partitions of the one
	// before at once.
	pwFile := filepath.Join(dir, "kafka-password")
	if err := os.WriteFile(pwFile, []byte(sentinelKafkaSCRAMPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := append(append([]string{}, ingest...), "--sasl-username", user, "--sasl-password-file", pwFile, "--instance-id", "tls-1")
	first := sluice(t, nil, append(fromFile, "--max-records", "5000", "--json")...)
	if s := summaryOf(t, first); first.code != 0 || s["records_in"] != 5000.0 {
		t.Fatalf("a run of 5,000 records: exit %d, %v\n%s", first.code, s, first.stderr)
	}
	killed := killedOnceAssigned(t, append(fromFile, "-v")...)
	assertNoSecret(t, killed, fromFile)
	final := sluice(t, withPassword(sentinelKafkaSCRAMPass), append(ingest, "--instance-id", "tls-1", "--json", "-v")...)
	assertNoSecret(t, final, ingest)
	if s := summaryOf(t, final); final.code != 0 || s["records_in"] != float64(n-5000) {
		t.Fatalf("the rerun: exit %d, %v\n%s", final.code, s, final.stderr)
	}
	got := tableRead(t, loc)
	if got.Rows != n {
		t.Fatalf("after a kill and a rerun: %d rows, want %d\nhistory:\n%s", got.Rows, n, mustSluice(t, "history", loc).stdout)
	}
	again := sluice(t, withPassword(sentinelKafkaSCRAMPass), append(ingest, "--instance-id", "tls-1", "--json")...)
	if s := summaryOf(t, again); again.code != 0 || s["records_in"] != 0.0 {
		t.Fatalf("a last rerun: exit %d, %v", again.code, s)
	}

	// Without verification, every run says so: a log line, and the
	// summary's warnings.
	insecure := sluice(t, withPassword(sentinelKafkaSCRAMPass), "ingest", loc, "--from", src, "--tls-insecure-skip-verify",
		"--sasl", "scram-sha-512", "--instance-id", "tls-1", "--json")
	if s := summaryOf(t, insecure); insecure.code != 0 || !strings.Contains(fmt.Sprint(s["warnings"]), "verification is off") ||
		!strings.Contains(insecure.stderr, "verification is off") {
		t.Fatalf("--tls-insecure-skip-verify: exit %d, warnings %v, stderr %s", insecure.code, s["warnings"], insecure.stderr)
	}
	assertNoSecret(t, insecure, []string{"ingest --tls-insecure-skip-verify"})

	pipelineIngestsOnce(t, dir, src, caFile, user, got)
	validateRefusesKafkaOptions(t, dir, src, caFile, loc)
}

// pipelineIngestsOnce runs a pipeline's ingest job of topic src into a
// new table, its password through ${NAME}: a wrong one fails, the right
// one ingests every record once, as want holds them.
func pipelineIngestsOnce(t *testing.T, dir, src, caFile, user string, want duck) {
	t.Helper()
	config := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(config, []byte(`lake: `+filepath.Join(dir, "lake")+`
tables:
  copy: {location: `+filepath.Join(dir, "lake", "copy")+`, schema: "`+ingestSchema+`", partition_by: day(event_time)}
jobs:
  ingest-kafka:
    schedule: "@daily"
    ingest: {table: copy, from: "`+src+`", tls_ca: `+caFile+`, sasl: scram-sha-512, sasl_username: `+user+`,
             sasl_password: "${KAFKA_PASSWORD_FOR_TEST}", until: "2100-01-01T00:00:00Z"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	wrong := sluice(t, []string{"KAFKA_PASSWORD_FOR_TEST=" + sentinelKafkaSCRAMWrong}, "run", "--config", config, "ingest-kafka", "-v")
	assertNoSecret(t, wrong, []string{"run (wrong password)"})
	if wrong.code != 1 || !strings.Contains(wrong.stderr, "authentication failed") {
		t.Fatalf("the pipeline's run with a wrong password: exit %d\n%s", wrong.code, wrong.stderr)
	}
	right := sluice(t, []string{"KAFKA_PASSWORD_FOR_TEST=" + sentinelKafkaSCRAMPass}, "run", "--config", config, "ingest-kafka", "--json")
	assertNoSecret(t, right, []string{"run"})
	if right.code != 0 {
		t.Fatalf("the pipeline's run: exit %d\n%s", right.code, right.stderr)
	}
	if cp := tableRead(t, filepath.Join(dir, "lake", "copy")); cp.Rows != want.Rows || cp.Checksum != want.Checksum {
		t.Fatalf("the pipeline's table: %d rows, checksum %s; the CLI's: %d rows, checksum %s", cp.Rows, cp.Checksum, want.Rows, want.Checksum)
	}
	assertNoSecret(t, sluice(t, nil, "--json", "runs", "--config", config), []string{"runs"})
}

// validateRefusesKafkaOptions checks that validate refuses options that
// cannot be, naming the key: an unknown mechanism, TLS on landing files.
func validateRefusesKafkaOptions(t *testing.T, dir, src, caFile, loc string) {
	t.Helper()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`lake: `+filepath.Join(dir, "lake")+`
tables:
  events: {location: `+loc+`}
jobs:
  mechanism:
    schedule: "@daily"
    ingest: {table: events, from: "`+src+`", sasl: gssapi}
  landing:
    schedule: "@daily"
    ingest: {table: events, from: `+dir+`, tls_ca: `+caFile+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, nil, "validate", "--config", bad)
	for _, want := range []string{`jobs.mechanism.ingest.sasl: "gssapi": want plain`, "jobs.landing.ingest.tls_ca: is for a kafka:// source"} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("validate: exit %d, stderr %s; want %q", r.code, r.stderr, want)
		}
	}
}

// killedOnceAssigned runs sluice with args (-v among them) and kills it
// with SIGKILL as soon as its log says the group assigned it partitions:
// it is reading then, and has committed nothing. It returns what the run
// printed.
func killedOnceAssigned(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = append(os.Environ(), testenv.Env()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), `"msg":"assigned"`) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("sluice %s was not killed while reading: %v\n%s", strings.Join(args, " "), err, b.String())
	}
	return result{-1, "", b.String()}
}

// kafkaTLS makes a CA and a broker certificate it signed, for 127.0.0.1,
// and writes the CA's PEM into dir: it returns the CA file, the broker's
// TLS and a client's TLS trusting the CA.
func kafkaTLS(t *testing.T, dir string) (caFile string, server, client *tls.Config) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, key := newKey(), newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "kafka-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	return caFile, server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
