package ingest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-data/sluice/ingest"
)

// testPKI is a CA made for one test, the broker's certificate it signed
// (for 127.0.0.1 and localhost) and a client certificate it signed, with
// the CA and the client's certificate and key written as PEM files.
type testPKI struct {
	pool                       *x509.CertPool
	server, client             tls.Certificate
	caFile, certFile, keyFile  string
	otherCAFile, garbageCAFile string // a CA that signed nothing here; a file with no PEM in it
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, caKey, caPEM := newCA(t, "sluice test CA")
	_, _, otherPEM := newCA(t, "another CA")
	p := &testPKI{pool: x509.NewCertPool(), caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "client.pem"),
		keyFile: filepath.Join(dir, "client-key.pem"), otherCAFile: filepath.Join(dir, "other-ca.pem"), garbageCAFile: filepath.Join(dir, "garbage.pem")}
	p.pool.AddCert(ca)
	var certPEM, keyPEM []byte
	p.server, _, _ = newLeaf(t, ca, caKey, 2, x509.ExtKeyUsageServerAuth)
	p.client, certPEM, keyPEM = newLeaf(t, ca, caKey, 3, x509.ExtKeyUsageClientAuth)
	for f, b := range map[string][]byte{p.caFile: caPEM, p.certFile: certPEM, p.keyFile: keyPEM, p.otherCAFile: otherPEM,
		p.garbageCAFile: []byte("not a certificate\n")} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, serial int64, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, certPEM, keyPEM
}

// serverTLS is the broker's TLS: with clientAuth, it asks for a client
// certificate and verifies it against the test CA.
func (p *testPKI) serverTLS(clientAuth tls.ClientAuthType) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.server}, ClientAuth: clientAuth, ClientCAs: p.pool, MinVersion: tls.VersionTLS12}
}

// clientTLS is the test producer's TLS.
func (p *testPKI) clientTLS() kgo.Opt {
	return kgo.DialTLSConfig(&tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12})
}

// secureCluster starts a broker with one 2-partition topic "events" and
// opts (TLS, SASL), and produces n events to it through a client with
// produceOpts.
func secureCluster(t *testing.T, n int, opts []kfake.Opt, produceOpts ...kgo.Opt) string {
	t.Helper()
	return strings.Join(secureBroker(t, n, opts, produceOpts...).ListenAddrs(), ",")
}

// secureBroker is secureCluster for a test that controls the broker.
func secureBroker(t *testing.T, n int, opts []kfake.Opt, produceOpts ...kgo.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(2, "events")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	produce(t, producer(t, strings.Join(c.ListenAddrs(), ","), "events", produceOpts...), 2, kafkaEvents(0, n))
	return c
}

// refusedRun runs an ingest that must fail on its connection, and checks
// that the error is one line, matches want (unless nil), says says, and
// shows none of secrets; the table stays empty.
func refusedRun(t *testing.T, addrs string, sec ingest.KafkaSecurity, want error, says string, secrets ...string) {
	t.Helper()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	_, err := ingest.Run(context.Background(), tb, "kafka://"+addrs+"/events", ingest.Options{Kafka: sec})
	if err == nil || (want != nil && !errors.Is(err, want)) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	msg := err.Error()
	t.Logf("refused: %s", msg)
	if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, says) {
		t.Fatalf("error %q: want one line saying %q", msg, says)
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Fatalf("error %q shows the secret %q", msg, s)
		}
	}
	if ids := listIDs(t, tb); len(ids) != 0 {
		t.Fatalf("a refused run wrote %d rows", len(ids))
	}
}

// ingestsAll runs an ingest that must take the n events exactly once,
// counts reconciled, with the checkpoint under the key of the brokers and
// topic alone.
func ingestsAll(t *testing.T, addrs string, sec ingest.KafkaSecurity, n int) {
	t.Helper()
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	src := "kafka://" + addrs + "/events"
	res := runOK(t, tb, src, ingest.Options{Kafka: sec})
	if res.RecordsIn != int64(n) || res.RowsWritten != int64(n) {
		t.Fatalf("run: %+v, want %d records", res, n)
	}
	if got := listIDs(t, tb); !slices.Equal(got, seq(0, n)) {
		t.Fatalf("table holds %d ids, want 0..%d once each", len(got), n-1)
	}
	kafkaCheckpointOf(t, tb, addrs, "events") // the key has no trace of TLS or SASL
	if res := runOK(t, tb, src, ingest.Options{Kafka: sec}); res.RecordsIn != 0 {
		t.Fatalf("a rerun took records again: %+v", res)
	}
}

// A broker speaking TLS is read with the CA that signed its certificate,
// and refused, on the certificate, without it (the system's roots) or
// when it must hold another name.
func TestKafkaTLS(t *testing.T) {
	p := newTestPKI(t)
	addrs := secureCluster(t, 500, []kfake.Opt{kfake.TLS(p.serverTLS(tls.NoClientCert))}, p.clientTLS())
	refusedRun(t, addrs, ingest.KafkaSecurity{TLS: true}, ingest.ErrKafkaTLS, "certificate")
	refusedRun(t, addrs, ingest.KafkaSecurity{TLSCA: p.otherCAFile}, ingest.ErrKafkaTLS, "certificate")
	refusedRun(t, addrs, ingest.KafkaSecurity{TLSCA: p.caFile, TLSServerName: "kafka.example.com"}, ingest.ErrKafkaTLS, "kafka.example.com")
	ingestsAll(t, addrs, ingest.KafkaSecurity{TLSCA: p.caFile}, 500)
	ingestsAll(t, addrs, ingest.KafkaSecurity{TLSCA: p.caFile, TLSServerName: "localhost"}, 500)
}

// A broker that wants a client certificate takes the run's, and refuses
// a run that has none.
func TestKafkaMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	addrs := secureCluster(t, 300, []kfake.Opt{kfake.TLS(p.serverTLS(tls.RequireAndVerifyClientCert))}, p.clientTLS())
	refusedRun(t, addrs, ingest.KafkaSecurity{TLSCA: p.caFile}, ingest.ErrKafkaTLS, "certificate")
	ingestsAll(t, addrs, ingest.KafkaSecurity{TLSCA: p.caFile, TLSCert: p.certFile, TLSKey: p.keyFile}, 300)
}

// PLAIN and SCRAM: the right password ingests, from the options, the
// environment or a file; a wrong one fails at once saying authentication
// failed, and shows neither password.
func TestKafkaSASL(t *testing.T) {
	const user, pass, wrong = "reader", "SENTINELKAFKARIGHTPASS", "SENTINELKAFKAWRONGPASS"
	for _, c := range []struct {
		kafka string // kfake's mechanism name
		mech  string
		auth  func(u, p string) sasl.Mechanism
	}{
		{"PLAIN", ingest.SASLPlain, func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() }},
		{"SCRAM-SHA-256", ingest.SASLScramSHA256, func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() }},
		{"SCRAM-SHA-512", "SCRAM-SHA-512", func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha512Mechanism() }},
	} {
		t.Run(c.kafka, func(t *testing.T) {
			addrs := secureCluster(t, 200, []kfake.Opt{kfake.EnableSASL(), kfake.Superuser(c.kafka, user, pass)}, kgo.SASL(c.auth(user, pass)))
			refusedRun(t, addrs, ingest.KafkaSecurity{SASL: c.mech, SASLUsername: user, SASLPassword: wrong},
				ingest.ErrKafkaAuth, "authentication failed", wrong, pass)
			// Without SASL the broker closes the connection at the first
			// request: the client's message says SASL may be missing.
			refusedRun(t, addrs, ingest.KafkaSecurity{}, nil, "SASL")
			ingestsAll(t, addrs, ingest.KafkaSecurity{SASL: c.mech, SASLUsername: user, SASLPassword: pass}, 200)
		})
	}
	t.Run("credentials from the environment and a file", func(t *testing.T) {
		addrs := secureCluster(t, 100, []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, pass)},
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		t.Setenv(ingest.EnvKafkaUsername, user)
		t.Setenv(ingest.EnvKafkaPassword, wrong)
		refusedRun(t, addrs, ingest.KafkaSecurity{SASL: ingest.SASLScramSHA512}, ingest.ErrKafkaAuth, `as user "reader"`, wrong, pass)
		t.Setenv(ingest.EnvKafkaPassword, pass)
		ingestsAll(t, addrs, ingest.KafkaSecurity{SASL: ingest.SASLScramSHA512}, 100)
		file := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(file, []byte(pass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(ingest.EnvKafkaPassword, wrong) // the file comes first
		ingestsAll(t, addrs, ingest.KafkaSecurity{SASL: ingest.SASLScramSHA512, SASLPasswordFile: file}, 100)
	})
}

// TLS and SCRAM together, as a production broker has them.
func TestKafkaTLSAndSCRAM(t *testing.T) {
	const user, pass, wrong = "reader", "SENTINELKAFKATLSPASS", "SENTINELKAFKATLSWRONG"
	p := newTestPKI(t)
	addrs := secureCluster(t, 400, []kfake.Opt{kfake.TLS(p.serverTLS(tls.NoClientCert)), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, pass)},
		p.clientTLS(), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	sec := ingest.KafkaSecurity{TLSCA: p.caFile, SASL: ingest.SASLScramSHA512, SASLUsername: user, SASLPassword: wrong}
	refusedRun(t, addrs, sec, ingest.ErrKafkaAuth, "authentication failed", wrong, pass)
	sec.SASLPassword = pass
	ingestsAll(t, addrs, sec, 400)
}

// Kafka answers credentials it refuses with SASL_AUTHENTICATION_FAILED
// (kfake closes the connection instead, as the tests above meet): the
// broker here answers so, and the run fails at once on that answer,
// without the client's retries.
func TestKafkaSASLAuthenticationFailedAnswer(t *testing.T) {
	const user, pass = "reader", "SENTINELKAFKAANSWERPASS"
	c := secureBroker(t, 10, []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", user, pass)},
		kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		why := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		resp.ErrorMessage = &why
		return resp, nil, true
	})
	refusedRun(t, strings.Join(c.ListenAddrs(), ","), ingest.KafkaSecurity{SASL: "scram-sha-256", SASLUsername: user, SASLPassword: pass},
		ingest.ErrKafkaAuth, "invalid credentials", pass)
}

// Options that cannot go together, or files that cannot be used, fail the
// run before it connects, naming the option, with ErrKafkaOption.
func TestKafkaSecurityOptions(t *testing.T) {
	p := newTestPKI(t)
	t.Setenv(ingest.EnvKafkaUsername, "")
	t.Setenv(ingest.EnvKafkaPassword, "")
	for _, c := range []struct {
		sec    ingest.KafkaSecurity
		option string
		says   string
	}{
		{ingest.KafkaSecurity{SASL: "gssapi"}, "sasl", `"gssapi": want plain`},
		{ingest.KafkaSecurity{TLSCert: p.certFile}, "tls-cert", "without --tls-key"},
		{ingest.KafkaSecurity{TLSKey: p.keyFile}, "tls-key", "without --tls-cert"},
		{ingest.KafkaSecurity{TLSCA: p.caFile, TLSInsecureSkipVerify: true}, "tls-insecure-skip-verify", "with --tls-ca"},
		{ingest.KafkaSecurity{SASLPasswordFile: "/p"}, "sasl-password-file", "without --sasl"},
		{ingest.KafkaSecurity{SASL: "scram-sha-256", SASLTokenFile: "/t"}, "sasl-token-file", "is for --sasl oauthbearer"},
		{ingest.KafkaSecurity{SASL: "plain", SASLPassword: "x", SASLPasswordFile: "/p"}, "sasl-password-file", "give one"},
		{ingest.KafkaSecurity{SASL: "oauthbearer"}, "sasl", "needs --sasl-token-file or --sasl-token-command"},
		{ingest.KafkaSecurity{SASL: "oauthbearer", SASLTokenFile: "/t", SASLTokenCommand: "true"}, "sasl-token-command", "give one"},
		{ingest.KafkaSecurity{SASL: "AWS_MSK_IAM", SASLUsername: "u"}, "sasl-username", "AWS default chain"},
	} {
		ps := c.sec.Problems()
		if len(ps) != 1 || ps[0].Option != c.option || !strings.Contains(ps[0].Msg, c.says) || !errors.Is(ps[0], ingest.ErrKafkaOption) {
			t.Errorf("%+v: problems %v, want one of --%s saying %q", c.sec, ps, c.option, c.says)
		}
		if err := (ingest.Options{Kafka: c.sec}).Validate(); err == nil || !strings.Contains(err.Error(), "--"+c.option) {
			t.Errorf("%+v: Validate: %v", c.sec, err)
		}
	}

	// What only reading the files or the environment finds.
	tb := newTable(t, filepath.Join(t.TempDir(), "events"))
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sec    ingest.KafkaSecurity
		option string
		says   string
	}{
		{ingest.KafkaSecurity{TLSCA: p.garbageCAFile}, "tls-ca", "no PEM certificate"},
		{ingest.KafkaSecurity{TLSCA: filepath.Join(t.TempDir(), "nope.pem")}, "tls-ca", "no such file"},
		{ingest.KafkaSecurity{TLSCert: p.certFile, TLSKey: p.caFile}, "tls-cert", "--tls-key"},
		{ingest.KafkaSecurity{SASL: "scram-sha-512"}, "sasl", "needs a user name: set KAFKA_USERNAME"},
		{ingest.KafkaSecurity{SASL: "plain", SASLUsername: "u"}, "sasl", "needs a password: set KAFKA_PASSWORD"},
		{ingest.KafkaSecurity{SASL: "plain", SASLUsername: "u", SASLPasswordFile: empty}, "sasl-password-file", "is empty"},
		{ingest.KafkaSecurity{SASL: "oauthbearer", SASLTokenFile: empty}, "sasl-token-file", "is empty"},
	} {
		// Nothing listens on port 1: the run must fail before it dials.
		_, err := ingest.Run(context.Background(), tb, "kafka://127.0.0.1:1/events", ingest.Options{Kafka: c.sec})
		var oe *ingest.KafkaOptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.says) || !errors.Is(err, ingest.ErrKafkaOption) {
			t.Errorf("%+v: err = %v, want --%s saying %q", c.sec, err, c.option, c.says)
		}
	}
}

// A Secret never prints: not with any verb, nor marshalled.
func TestKafkaSecretNeverPrints(t *testing.T) {
	const pass = "SENTINELSECRETFORMAT"
	sec := ingest.KafkaSecurity{SASL: "plain", SASLUsername: "u", SASLPassword: pass}
	o := ingest.Options{Kafka: sec}
	j, err := json.Marshal(sec)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("%v %+v %#v %s %q %x %d", o, o, o, sec.SASLPassword, sec.SASLPassword, sec.SASLPassword, sec.SASLPassword) + string(j)
	if strings.Contains(out, pass) || !strings.Contains(out, "[redacted]") {
		t.Fatalf("printed: %s", out)
	}
	if sec.SASLPassword.Reveal() != pass {
		t.Fatal("Reveal does not return the secret")
	}
}

// mechanism is the SASL mechanism sec gives, which must build.
func mechanism(t *testing.T, sec ingest.KafkaSecurity) sasl.Mechanism {
	t.Helper()
	m, err := sec.SASLMechanism(context.Background())
	if err != nil || m == nil {
		t.Fatalf("%+v: mechanism %v, err %v", sec, m, err)
	}
	return m
}

// firstMessage is what m sends the broker first, to host.
func firstMessage(t *testing.T, m sasl.Mechanism, host string) string {
	t.Helper()
	_, msg, err := m.Authenticate(context.Background(), host)
	if err != nil {
		t.Fatalf("%s: Authenticate: %v", m.Name(), err)
	}
	return string(msg)
}

// OAUTHBEARER: kfake does not implement it, so no broker is in this
// test. The token plumbing is tested against franz-go's mechanism itself,
// through the message it sends first: each authentication sends the token
// file's content as it is then, or what the token command prints then. A
// failing command is a one-line error with its exit status and the last
// line of its standard error, never its output nor the command.
func TestKafkaOAuthBearerToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bearer := func(m sasl.Mechanism, want string) {
		t.Helper()
		if got := firstMessage(t, m, "127.0.0.1:9092"); !strings.Contains(got, "auth=Bearer "+want+"\x01") {
			t.Fatalf("first message %q, want the token %q", got, want)
		}
	}
	write("token-one\n")
	m := mechanism(t, ingest.KafkaSecurity{SASL: "oauthbearer", SASLTokenFile: file})
	if m.Name() != "OAUTHBEARER" {
		t.Fatalf("mechanism %s", m.Name())
	}
	bearer(m, "token-one")
	write("token-two") // an external refresher replaces it
	bearer(m, "token-two")

	m = mechanism(t, ingest.KafkaSecurity{SASL: "OAUTHBEARER", SASLTokenCommand: "cat '" + file + "'"})
	bearer(m, "token-two")
	write("  token-three\n\n")
	bearer(m, "token-three")

	const stdout = "SENTINELTOKENCOMMANDSTDOUT"
	m = mechanism(t, ingest.KafkaSecurity{SASL: "oauthbearer", SASLTokenCommand: "echo " + stdout + "; echo 'first line' >&2; echo 'the IdP said no' >&2; exit 3"})
	_, _, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err == nil {
		t.Fatal("a failing token command gave a token")
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, "--sasl-token-command failed: exit status 3: the IdP said no") || strings.Contains(msg, stdout) {
		t.Fatalf("error %q: want one line with the exit status and the last stderr line, without the output or the command", msg)
	}
	m = mechanism(t, ingest.KafkaSecurity{SASL: "oauthbearer", SASLTokenCommand: "true"})
	if _, _, err := m.Authenticate(context.Background(), "127.0.0.1:9092"); err == nil || !strings.Contains(err.Error(), "printed no token") {
		t.Fatalf("a command printing nothing: %v", err)
	}
}

// AWS_MSK_IAM: kfake does not implement it either. The mechanism is
// franz-go's, signing with the credentials of the AWS default chain,
// given here by the environment: the first message is signed for the
// region of the broker's host with the access key, carries the session
// token, and holds no secret key.
func TestKafkaAWSMSKIAM(t *testing.T) {
	const keyID, secret, session = "AKIASLUICETESTKEY", "SENTINELMSKSECRETKEY", "session-token-1"
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", session)
	m := mechanism(t, ingest.KafkaSecurity{SASL: "aws-msk-iam"})
	if m.Name() != "AWS_MSK_IAM" {
		t.Fatalf("mechanism %s", m.Name())
	}
	msg := firstMessage(t, m, "b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com:9098")
	var kv map[string]string
	if err := json.Unmarshal([]byte(msg), &kv); err != nil {
		t.Fatalf("first message %q: %v", msg, err)
	}
	cred := kv["x-amz-credential"]
	if !strings.HasPrefix(cred, keyID+"/") || !strings.HasSuffix(cred, "/us-east-1/kafka-cluster/aws4_request") ||
		kv["x-amz-security-token"] != session || kv["action"] != "kafka-cluster:Connect" || kv["x-amz-signature"] == "" {
		t.Fatalf("first message %v: want it signed with %s for us-east-1", kv, keyID)
	}
	if strings.Contains(msg, secret) {
		t.Fatal("the first message holds the secret key")
	}
}
