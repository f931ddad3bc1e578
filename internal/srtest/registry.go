package srtest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// ContentType is the media type the registry answers with and that clients
// send; application/json is accepted as well.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Schema types as they appear in the "schemaType" field.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// maxBody bounds a request body.
const maxBody = 8 << 20

// Options configures a Registry started by Start.
type Options struct {
	// User and Password, when either is set, let requests authenticate
	// with HTTP basic auth.
	User, Password string
	// Token, when set, lets requests authenticate with the header
	// "Authorization: Bearer <Token>".
	Token string
	// TLS serves HTTPS with a self-signed certificate for 127.0.0.1; see
	// CACertFile and HTTPClient.
	TLS bool
}

// Registry is a running Schema Registry test server. Its methods are safe
// for concurrent use.
type Registry struct {
	opts   Options
	srv    *httptest.Server
	caFile string

	mu       sync.Mutex
	schemas  []*schemaRecord // schemas[id-1]
	byKey    map[string]int  // normalised schema key -> id
	subjects map[string]*subjectState
	global   string            // global compatibility level
	levels   map[string]string // subject-level compatibility
	requests map[string]int    // request count per URL path
}

// schemaRecord is one registered schema, shared by every subject version
// that uses its id.
type schemaRecord struct {
	id   int
	typ  string
	text string
	refs []sr.SchemaReference
	key  string
}

// subjectVersion is one version of a subject.
type subjectVersion struct {
	version int
	id      int
	deleted bool
}

// subjectState holds a subject's versions in ascending order.
type subjectState struct {
	versions []subjectVersion
}

// live returns the versions that are not soft-deleted.
func (s *subjectState) live() []subjectVersion {
	var out []subjectVersion
	for _, v := range s.versions {
		if !v.deleted {
			out = append(out, v)
		}
	}
	return out
}

// schemaRequest is the body of the register, lookup and compatibility
// routes.
type schemaRequest struct {
	Schema     string               `json:"schema"`
	SchemaType string               `json:"schemaType,omitempty"`
	References []sr.SchemaReference `json:"references,omitempty"`
	ID         int                  `json:"id,omitempty"`
	Version    int                  `json:"version,omitempty"`
}

// schemaResponse is a schema as the read routes return it.
type schemaResponse struct {
	Subject    string               `json:"subject,omitempty"`
	Version    int                  `json:"version,omitempty"`
	ID         int                  `json:"id,omitempty"`
	Schema     string               `json:"schema"`
	SchemaType string               `json:"schemaType,omitempty"`
	References []sr.SchemaReference `json:"references,omitempty"`
}

// apiError is an error answered as {"error_code", "message"}.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %d: %s", e.status, e.code, e.msg) }

func errorf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func subjectNotFound(subject string) *apiError {
	return errorf(http.StatusNotFound, 40401, "Subject '%s' not found.", subject)
}

func versionNotFound(version int) *apiError {
	return errorf(http.StatusNotFound, 40402, "Version %d not found.", version)
}

func schemaNotFound() *apiError {
	return errorf(http.StatusNotFound, 40403, "Schema not found")
}

func invalidSchema(format string, args ...any) *apiError {
	return errorf(http.StatusUnprocessableEntity, 42201, "Invalid schema: "+format, args...)
}

// Start serves a new, empty registry until t ends.
func Start(t testing.TB, o Options) *Registry {
	t.Helper()
	r := &Registry{
		opts:     o,
		byKey:    make(map[string]int),
		subjects: make(map[string]*subjectState),
		global:   "BACKWARD",
		levels:   make(map[string]string),
		requests: make(map[string]int),
	}
	r.srv = httptest.NewUnstartedServer(r.handler())
	logs := &testLog{t: t}
	r.srv.Config.ErrorLog = log.New(logs, "srtest: ", 0)
	if o.TLS {
		r.srv.StartTLS()
		r.caFile = filepath.Join(t.TempDir(), "srtest-ca.pem")
		cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
		if err := os.WriteFile(r.caFile, cert, 0o600); err != nil {
			r.srv.Close()
			t.Fatalf("srtest: write CA certificate: %v", err)
		}
	} else {
		r.srv.Start()
	}
	t.Cleanup(func() {
		r.srv.Close()
		logs.stop()
	})
	return r
}

// testLog sends the HTTP server's error log (e.g. TLS handshake failures)
// to the test log while the registry runs.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
}

// URL returns the registry's base URL, http://127.0.0.1:PORT (https with
// Options.TLS).
func (r *Registry) URL() string { return r.srv.URL }

// CACertFile returns the path of a PEM file holding the certificate the
// registry serves with Options.TLS, for a client's CA pool; it is empty
// without TLS.
func (r *Registry) CACertFile() string { return r.caFile }

// HTTPClient returns an HTTP client that trusts the registry's certificate.
// It sends no credentials of its own.
func (r *Registry) HTTPClient() *http.Client { return r.srv.Client() }

// Requests returns how many requests arrived for the URL path (unescaped,
// without the query), e.g. "/schemas/ids/1", whatever their method and
// outcome, including those of Register.
func (r *Registry) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// Register registers schema under subject through the registry's HTTP API,
// with the configured credentials, and returns its id. schemaType is
// "AVRO", "PROTOBUF" or "JSON"; empty means AVRO. It fails t on any error.
func (r *Registry) Register(t testing.TB, subject, schemaType, schema string, refs ...sr.SchemaReference) int {
	t.Helper()
	id, err := r.register(t.Context(), subject, schemaType, schema, refs)
	if err != nil {
		t.Fatalf("srtest: register under subject %q: %v", subject, err)
	}
	return id
}

func (r *Registry) register(ctx context.Context, subject, schemaType, schema string, refs []sr.SchemaReference) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := json.Marshal(schemaRequest{Schema: schema, SchemaType: strings.ToUpper(schemaType), References: refs})
	if err != nil {
		return 0, fmt.Errorf("encode request: %w", err)
	}
	u := r.URL() + "/subjects/" + url.PathEscape(subject) + "/versions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	if r.opts.User != "" || r.opts.Password != "" {
		req.SetBasicAuth(r.opts.User, r.opts.Password)
	} else if r.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	}
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s: HTTP %d: %s", u, resp.StatusCode, bytes.TrimSpace(data))
	}
	var out struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, fmt.Errorf("decode response %q: %w", data, err)
	}
	return out.ID, nil
}

// handler wraps the routes with request counting, authentication and the
// content-type check.
func (r *Registry) handler() http.Handler {
	mux := http.NewServeMux()
	r.routes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests[req.URL.Path]++
		r.mu.Unlock()
		if !r.authorized(req) {
			if r.opts.User != "" || r.opts.Password != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="srtest"`)
			}
			writeError(w, errorf(http.StatusUnauthorized, 40101, "Unauthorized"))
			return
		}
		if aerr := checkContentType(req); aerr != nil {
			writeError(w, aerr)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// authorized reports whether req carries valid credentials, or none are
// required.
func (r *Registry) authorized(req *http.Request) bool {
	basic := r.opts.User != "" || r.opts.Password != ""
	if !basic && r.opts.Token == "" {
		return true
	}
	if basic {
		if u, p, ok := req.BasicAuth(); ok && equal(u, r.opts.User) && equal(p, r.opts.Password) {
			return true
		}
	}
	if r.opts.Token != "" {
		auth := req.Header.Get("Authorization")
		if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") && equal(auth[7:], r.opts.Token) {
			return true
		}
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// checkContentType rejects a request body of a media type the registry
// does not read.
func checkContentType(req *http.Request) *apiError {
	ct := req.Header.Get("Content-Type")
	if ct == "" || (req.Method != http.MethodPost && req.Method != http.MethodPut) {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return errorf(http.StatusUnsupportedMediaType, 415, "HTTP 415 Unsupported Media Type")
	}
	switch mt {
	case ContentType, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream":
		return nil
	}
	return errorf(http.StatusUnsupportedMediaType, 415, "HTTP 415 Unsupported Media Type")
}

// routeFunc handles a request whose answer is JSON.
type routeFunc func(*http.Request) (any, *apiError)

func (r *Registry) routes(mux *http.ServeMux) {
	handle := func(pattern string, fn routeFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			v, aerr := fn(req)
			if aerr != nil {
				writeError(w, aerr)
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	handle("GET /subjects", r.listSubjects)
	handle("GET /subjects/{subject}/versions", r.listVersions)
	handle("POST /subjects/{subject}/versions", r.registerRoute)
	handle("GET /subjects/{subject}/versions/{version}", r.getVersion)
	handle("POST /subjects/{subject}", r.lookup)
	handle("DELETE /subjects/{subject}", r.deleteSubject)
	handle("GET /schemas/types", func(*http.Request) (any, *apiError) {
		return []string{TypeJSON, TypeProtobuf, TypeAvro}, nil
	})
	handle("GET /schemas/ids/{id}", r.getSchema)
	handle("GET /schemas/ids/{id}/versions", r.schemaVersions)
	handle("GET /config", r.getConfig)
	handle("GET /config/{subject}", r.getConfig)
	handle("PUT /config", r.putConfig)
	handle("PUT /config/{subject}", r.putConfig)
	handle("POST /compatibility/subjects/{subject}/versions/{version}", r.checkVersion)
	handle("POST /compatibility/subjects/{subject}/versions", r.checkSubject)
	handle("/", func(req *http.Request) (any, *apiError) {
		return nil, errorf(http.StatusNotFound, 404, "HTTP 404 Not Found: %s %s", req.Method, req.URL.Path)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = fmt.Appendf(nil, `{"error_code":50001,"message":%q}`, "encode response: "+err.Error())
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{e.code, e.msg})
}

// decodeBody reads a JSON request body into v.
func decodeBody(req *http.Request, v any) *apiError {
	data, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, maxBody))
	if err != nil {
		return errorf(http.StatusBadRequest, 400, "read request body: %v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errorf(http.StatusBadRequest, 400, "Unrecognized request body: %v", err)
	}
	return nil
}

func showDeleted(req *http.Request) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get("deleted"))
	return v
}

// parseVersion parses a version path element; -1 means the latest.
func parseVersion(s string) (int, *apiError) {
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v == 0 || v < -1 {
		return 0, errorf(http.StatusUnprocessableEntity, 42202,
			"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", s)
	}
	return v, nil
}

// liveVersion finds a version of a subject that is not deleted; version -1
// is the latest. The caller holds r.mu.
func (r *Registry) liveVersion(subject string, version int) (subjectVersion, *apiError) {
	var live []subjectVersion
	if s := r.subjects[subject]; s != nil {
		live = s.live()
	}
	if len(live) == 0 {
		return subjectVersion{}, subjectNotFound(subject)
	}
	if version == -1 {
		return live[len(live)-1], nil
	}
	for _, v := range live {
		if v.version == version {
			return v, nil
		}
	}
	return subjectVersion{}, versionNotFound(version)
}

func (r *Registry) response(subject string, v subjectVersion) schemaResponse {
	rec := r.schemas[v.id-1]
	return schemaResponse{
		Subject:    subject,
		Version:    v.version,
		ID:         rec.id,
		Schema:     rec.text,
		SchemaType: typeField(rec.typ),
		References: rec.refs,
	}
}

// typeField returns the schemaType as the registry answers it: omitted for
// Avro.
func typeField(typ string) string {
	if typ == TypeAvro {
		return ""
	}
	return typ
}
