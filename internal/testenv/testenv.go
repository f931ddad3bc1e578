// Package testenv gives tests real object-store servers: an in-process S3
// server (gofakes3 over a loopback HTTP listener) and Azurite, the Azure
// Storage emulator, run from tools/node_modules. Each starts lazily, once
// per test binary, and points the process environment at itself, so that
// cloud.Open of s3:// and az:// locations reaches it with no further
// wiring; Env hands the same variables to child processes.
//
// Import it from _test.go files only. Call Main from TestMain so Azurite
// is stopped when the tests end (it also dies with the test binary, should
// that be killed).
//
// Tests talk to real protocol servers here, never to mocks of our own
// interfaces: a missing Azurite fails the test rather than skipping it.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Credentials the servers accept. They are test-only values, safe to log.
const (
	// S3AccessKeyID is the only access key id the S3 server accepts;
	// requests signed with any other are refused 403 InvalidAccessKeyId.
	S3AccessKeyID = "SLUICETESTKEY"
	// S3SecretAccessKey is the secret that goes with S3AccessKeyID.
	S3SecretAccessKey = "sluice-test-secret"
	// S3Region is the region tests sign for.
	S3Region = "us-east-1"
	// AzuriteAccount is Azurite's well-known development account.
	AzuriteAccount = "devstoreaccount1"
	// AzuriteAccountKey is Azurite's well-known, published development key.
	AzuriteAccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Kinds of store, the keys of Locations.
const (
	Local = "local"
	S3    = "s3"
	Azure = "azure"
)

// Kinds lists every store kind, in the order suites run them.
var Kinds = []string{Local, S3, Azure}

// Main runs the tests (see Run) and exits with their code. Use it as
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests with a temporary folder of their own, which $TMPDIR
// names for them and for the processes they start, stops the servers,
// removes the folder and returns the tests' exit code. The crash tests
// kill sluice processes, which then leave their temporary files behind:
// in the shared folder they piled up run after run.
func Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	code := m.Run()
	Stop()
	return code
}

// Stop stops Azurite and PostgreSQL if they run (the S3 server lives
// in-process and needs no stopping). Safe to call more than once, and
// without a start.
func Stop() {
	stopS3()
	stopAzurite()
	stopPostgres()
}

// Env starts both servers (if not yet started) and returns the environment
// that reaches them, as KEY=VALUE pairs for a child process's Env:
// AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
// AWS_EC2_METADATA_DISABLED and AZURE_STORAGE_CONNECTION_STRING. The test
// process's own environment already holds them. It panics if a server
// cannot start; tests that want a clean failure call Locations or Setup
// first.
func Env() []string {
	s3 := mustS3()
	az, err := startAzurite()
	if err != nil {
		panic(err)
	}
	return append(s3.env(), az.env()...)
}

// Setup starts both servers, failing t if one cannot start.
func Setup(t testing.TB) {
	t.Helper()
	if _, err := startS3(); err != nil {
		t.Fatal(err)
	}
	if _, err := startAzurite(); err != nil {
		t.Fatal(err)
	}
}

// Locations returns a fresh, empty location on every kind of store:
// Local → a new t.TempDir() as a plain path; S3 → s3://<new bucket>/<prefix>;
// Azure → az://devstoreaccount1/<new container>/<prefix>.
func Locations(t testing.TB) map[string]string {
	t.Helper()
	m := make(map[string]string, len(Kinds))
	for _, k := range Kinds {
		m[k] = Location(t, k)
	}
	return m
}

// Location returns a fresh, empty location of one kind (Local, S3 or
// Azure), starting its server if needed.
func Location(t testing.TB, kind string) string {
	t.Helper()
	switch kind {
	case Local:
		return t.TempDir()
	case S3:
		return "s3://" + NewBucket(t) + "/data/tbl"
	case Azure:
		return "az://" + AzuriteAccount + "/" + NewContainer(t) + "/data/tbl"
	}
	t.Fatalf("testenv: unknown store kind %q (want one of %s)", kind, strings.Join(Kinds, ", "))
	return ""
}

// randomName returns prefix plus 12 lowercase hex digits: a valid S3
// bucket and Azure container name.
func randomName(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("testenv: random: %v", err))
	}
	return prefix + hex.EncodeToString(b[:])
}
