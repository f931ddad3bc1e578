package testenv

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

type s3Server struct {
	srv     *httptest.Server
	backend *s3mem.Backend
}

var (
	s3Mu  sync.Mutex
	s3Cur *s3Server
)

// startS3 starts the S3 server once and points the process env at it.
func startS3() (*s3Server, error) {
	s3Mu.Lock()
	defer s3Mu.Unlock()
	if s3Cur != nil {
		return s3Cur, nil
	}
	backend := s3mem.New()
	faker := gofakes3.New(backend,
		gofakes3.WithAutoBucket(false),
		gofakes3.WithLogger(gofakes3.DiscardLog()),
	)
	srv := httptest.NewServer(CheckAccessKey(S3AccessKeyID, faker.Server()))
	s := &s3Server{srv: srv, backend: backend}
	for _, kv := range s.env() {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			srv.Close()
			return nil, fmt.Errorf("testenv: setenv %s: %w", k, err)
		}
	}
	s3Cur = s
	return s, nil
}

func mustS3() *s3Server {
	s, err := startS3()
	if err != nil {
		panic(err)
	}
	return s
}

func stopS3() {
	s3Mu.Lock()
	defer s3Mu.Unlock()
	if s3Cur != nil {
		s3Cur.srv.Close()
		s3Cur = nil
	}
}

func (s *s3Server) env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.srv.URL,
		"AWS_ACCESS_KEY_ID=" + S3AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + S3SecretAccessKey,
		"AWS_REGION=" + S3Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// S3Endpoint starts the S3 server if needed and returns its base URL
// (http://127.0.0.1:PORT).
func S3Endpoint(t testing.TB) string {
	t.Helper()
	s, err := startS3()
	if err != nil {
		t.Fatal(err)
	}
	return s.srv.URL
}

// NewBucket creates a new, empty bucket on the S3 server and returns its
// name.
func NewBucket(t testing.TB) string {
	t.Helper()
	s, err := startS3()
	if err != nil {
		t.Fatal(err)
	}
	name := randomName("sluice-")
	if err := s.backend.CreateBucket(name); err != nil {
		t.Fatalf("testenv: create bucket %s: %v", name, err)
	}
	return name
}

// credentialRE finds the access key id in a SigV4 Authorization header
// ("... Credential=AKID/date/region/s3/aws4_request, ...") or in a
// presigned URL's X-Amz-Credential.
var credentialRE = regexp.MustCompile(`Credential=([^/,\s]+)/`)

// CheckAccessKey wraps an S3 handler so that requests not signed with
// access key id akid are refused the way S3 refuses them: 403 with an XML
// body whose code is InvalidAccessKeyId. gofakes3 itself checks no
// credentials, and tests of "wrong credentials" need a server that does.
// (The signature itself is not verified.)
func CheckAccessKey(akid string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := ""
		if m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			got = m[1]
		} else if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
			got, _, _ = strings.Cut(c, "/")
		}
		if got == akid {
			next.ServeHTTP(w, r)
			return
		}
		type s3Error struct {
			XMLName   xml.Name `xml:"Error"`
			Code      string   `xml:"Code"`
			Message   string   `xml:"Message"`
			Resource  string   `xml:"Resource"`
			RequestID string   `xml:"RequestId"`
		}
		body, _ := xml.Marshal(s3Error{
			Code:      "InvalidAccessKeyId",
			Message:   "The AWS Access Key Id you provided does not exist in our records.",
			Resource:  r.URL.Path,
			RequestID: "sluice-testenv",
		})
		w.Header().Set("Content-Type", "application/xml")
		w.Header().Set("x-amz-request-id", "sluice-testenv")
		w.WriteHeader(http.StatusForbidden)
		if r.Method != http.MethodHead {
			_, _ = w.Write(append([]byte(xml.Header), body...))
		}
	})
}
