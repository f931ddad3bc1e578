package icebergtest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
)

// RESTOptions configure the REST catalog ServeREST serves. The zero value
// serves plain HTTP at the server's root, with no prefix and no
// authentication.
type RESTOptions struct {
	// Prefix is the catalog prefix the config route hands clients (its
	// overrides' "prefix"): the table routes are then under
	// {base}/v1/{Prefix}/. "" is none. Plain path segments only.
	Prefix string
	// BasePath is the path before /v1, e.g. "/api/catalog"; "" is none.
	BasePath string
	// Credential is the OAuth2 client credential, "client_id:client_secret",
	// that clients exchange for a bearer token at {base}/v1/oauth/tokens;
	// "" is none.
	Credential string
	// Token is a static bearer token the server accepts; "" is none. With
	// Credential or Token set, every route but the token route wants a
	// bearer token: one the token route issued, or Token.
	Token string
	// TableConfig is the config of the loadTable response (FileIO
	// properties, say); nil is empty.
	TableConfig map[string]string
	// TLS serves HTTPS with httptest's certificate, which CACertFile
	// writes out.
	TLS bool
}

// RESTServer is an Iceberg REST catalog in front of a fixture table's
// SQLite catalog: it loads and commits that catalog's tables through a
// catalog of its own on the same file. It stops when the test ends.
type RESTServer struct {
	srv    *httptest.Server
	mux    *http.ServeMux
	tb     *Table
	o      RESTOptions
	cat    *icesql.Catalog
	base   string // BasePath, cleaned: "" or "/a/b"
	tokens string // the token route's path
	caFile string

	mu     sync.Mutex
	issued map[string]bool // tokens the token route handed out

	loads, commits, conflicts atomic.Int64
}

// ServeREST serves tb's catalog over the Iceberg REST protocol until t
// ends and returns the server. It fails t on a bad option or when the
// catalog does not open.
func ServeREST(t testing.TB, tb *Table, o RESTOptions) *RESTServer {
	t.Helper()
	base, err := restCheckOptions(o)
	if err != nil {
		t.Fatalf("icebergtest: REST server: %v", err)
	}
	o.Prefix = strings.Trim(o.Prefix, "/")
	db, cat, err := tb.openCatalog()
	if err != nil {
		t.Fatalf("icebergtest: REST server: %v", err)
	}
	t.Cleanup(func() {
		cat.Close()
		db.Close()
	})
	s := &RESTServer{tb: tb, o: o, cat: cat, base: base, issued: map[string]bool{}}
	s.routes()
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused TLS handshakes are expected
	if o.TLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	if o.TLS {
		s.caFile = filepath.Join(t.TempDir(), "rest-ca.pem")
		block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
		if err := os.WriteFile(s.caFile, block, 0o644); err != nil {
			t.Fatalf("icebergtest: REST server: write the CA file: %v", err)
		}
	}
	return s
}

// restCheckOptions checks o and returns its BasePath cleaned.
func restCheckOptions(o RESTOptions) (string, error) {
	if o.Credential != "" && !strings.Contains(o.Credential, ":") {
		return "", errors.New("option Credential: want client_id:client_secret")
	}
	for name, v := range map[string]string{"Prefix": o.Prefix, "BasePath": o.BasePath} {
		if strings.ContainsAny(v, "{}?#% \t\n") {
			return "", fmt.Errorf("option %s %q: want plain path segments", name, v)
		}
	}
	base := strings.Trim(o.BasePath, "/")
	if base != "" {
		base = "/" + base
	}
	return base, nil
}

// routes registers the routes the server answers.
func (s *RESTServer) routes() {
	v1 := s.base + "/v1"
	ns := v1 + "/namespaces"
	if s.o.Prefix != "" {
		ns = v1 + "/" + s.o.Prefix + "/namespaces"
	}
	s.tokens = v1 + "/oauth/tokens"
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET "+v1+"/config", s.config)
	s.mux.HandleFunc("POST "+s.tokens, s.token)
	s.mux.HandleFunc("GET "+ns, s.listNamespaces)
	s.mux.HandleFunc("GET "+ns+"/{ns}", s.loadNamespace)
	s.mux.HandleFunc("HEAD "+ns+"/{ns}", s.namespaceExists)
	s.mux.HandleFunc("GET "+ns+"/{ns}/tables", s.listTables)
	s.mux.HandleFunc("GET "+ns+"/{ns}/tables/{table}", s.loadTable)
	s.mux.HandleFunc("HEAD "+ns+"/{ns}/tables/{table}", s.tableExists)
	s.mux.HandleFunc("POST "+ns+"/{ns}/tables/{table}", s.commitTable)
}

// restEndpoints are the endpoints the config route advertises: those
// routes registers, in the spec's "METHOD /v1/{prefix}/..." form.
var restEndpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
}

// URL is the catalog's base URL, the one REST clients are given:
// http://127.0.0.1:PORT/api/catalog (https with TLS), before /v1.
func (s *RESTServer) URL() string { return s.srv.URL + s.base }

// TableURL is the fixture table's location as sluice takes it:
// iceberg+rest://127.0.0.1:PORT/api/catalog#namespace.name, with
// ?tls=false before the '#' when the server speaks plain HTTP.
func (s *RESTServer) TableURL() string {
	u := "iceberg+rest://" + s.srv.Listener.Addr().String() + s.base
	if !s.o.TLS {
		u += "?tls=false"
	}
	return u + "#" + s.tb.Namespace + "." + s.tb.Name
}

// CACertFile is a PEM file of the server's certificate, for clients to
// trust (SSL_CERT_FILE for a child process); "" without TLS.
func (s *RESTServer) CACertFile() string { return s.caFile }

// Loads is the number of loadTable requests answered with the table.
func (s *RESTServer) Loads() int64 { return s.loads.Load() }

// Commits is the number of commits that succeeded.
func (s *RESTServer) Commits() int64 { return s.commits.Load() }

// Conflicts is the number of commits answered 409 CommitFailedException:
// a requirement did not hold, or another commit came first.
func (s *RESTServer) Conflicts() int64 { return s.conflicts.Load() }

// ServeHTTP checks the bearer token of every request but the token
// route's, then routes it; a path no route has is answered 404, a method
// its route lacks 405, both as REST errors.
func (s *RESTServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.tokens {
		if why := s.unauthorized(r); why != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="iceberg"`)
			restError(w, http.StatusUnauthorized, "NotAuthorizedException", "unauthorized: "+why)
			return
		}
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// The mux's own handler says whether the path or the method is wrong.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	switch rec.Code {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.Header().Get("Allow"))
		restError(w, rec.Code, "MethodNotAllowedException", fmt.Sprintf("%s %s: method not allowed", r.Method, r.URL.Path))
	default:
		restError(w, http.StatusNotFound, "NoSuchEndpointException", fmt.Sprintf("%s %s: no such route", r.Method, r.URL.Path))
	}
}

// unauthorized says why r is refused: it carries no bearer token the
// server takes. "" is accepted: a token the server takes, or the server
// wants none.
func (s *RESTServer) unauthorized(r *http.Request) string {
	if s.o.Credential == "" && s.o.Token == "" {
		return ""
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
		return "no bearer token"
	}
	if s.o.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) == 1 {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issued[tok] {
		return ""
	}
	return "bearer token not accepted"
}

// config answers GET /v1/config: no defaults, and the prefix as an
// override.
func (s *RESTServer) config(w http.ResponseWriter, r *http.Request) {
	overrides := map[string]string{}
	if s.o.Prefix != "" {
		overrides["prefix"] = s.o.Prefix
	}
	restJSON(w, http.StatusOK, map[string]any{
		"defaults":  map[string]string{},
		"overrides": overrides,
		"endpoints": restEndpoints,
	})
}

// token answers POST /v1/oauth/tokens, the OAuth2 client credentials
// grant: the client's id and secret in the form or in basic
// authentication.
func (s *RESTServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		restOAuthError(w, http.StatusBadRequest, "invalid_request", "malformed form")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		restOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q: want client_credentials", g))
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if bid, bsecret, ok := r.BasicAuth(); ok {
		id, secret = bid, bsecret
	}
	wantID, wantSecret, _ := strings.Cut(s.o.Credential, ":")
	if s.o.Credential == "" ||
		subtle.ConstantTimeCompare([]byte(id), []byte(wantID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(wantSecret)) != 1 {
		restOAuthError(w, http.StatusUnauthorized, "invalid_client", "unauthorized: unknown client or wrong client secret")
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	s.mu.Lock()
	s.issued[tok] = true
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	restJSON(w, http.StatusOK, map[string]any{
		"access_token":      tok,
		"token_type":        "bearer",
		"expires_in":        3600,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
	})
}

// restIdent is an identifier as the REST protocol spells it.
type restIdent struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// restNamespace is the {ns} path segment decoded: its levels were joined
// by the unit separator (%1F on the wire).
func restNamespace(r *http.Request) table.Identifier {
	return strings.Split(r.PathValue("ns"), "\x1f")
}

// restTable is the table the path names.
func restTable(r *http.Request) table.Identifier {
	return append(restNamespace(r), r.PathValue("table"))
}

// listNamespaces answers GET namespaces, the children of ?parent=
// (levels joined by the unit separator), or the top level.
func (s *RESTServer) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	list, err := s.cat.ListNamespaces(r.Context(), parent)
	if err != nil {
		restCatalogError(w, fmt.Errorf("list namespaces: %w", err))
		return
	}
	if list == nil {
		list = []table.Identifier{}
	}
	restJSON(w, http.StatusOK, map[string]any{"namespaces": list})
}

// loadNamespace answers GET namespaces/{ns}: its properties.
func (s *RESTServer) loadNamespace(w http.ResponseWriter, r *http.Request) {
	ns := restNamespace(r)
	props, err := s.cat.LoadNamespaceProperties(r.Context(), ns)
	if err != nil {
		restCatalogError(w, fmt.Errorf("load namespace %s: %w", strings.Join(ns, "."), err))
		return
	}
	if props == nil {
		props = ice.Properties{}
	}
	restJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
}

// namespaceExists answers HEAD namespaces/{ns}: 204 or 404.
func (s *RESTServer) namespaceExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.cat.CheckNamespaceExists(r.Context(), restNamespace(r))
	restExists(w, ok, err)
}

// listTables answers GET namespaces/{ns}/tables, all of them on one page.
func (s *RESTServer) listTables(w http.ResponseWriter, r *http.Request) {
	ns := restNamespace(r)
	out := []restIdent{}
	for id, err := range s.cat.ListTables(r.Context(), ns) {
		if err != nil {
			restCatalogError(w, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err))
			return
		}
		out = append(out, restIdent{Namespace: icecat.NamespaceFromIdent(id), Name: icecat.TableNameFromIdent(id)})
	}
	restJSON(w, http.StatusOK, map[string]any{"identifiers": out})
}

// loadTable answers GET namespaces/{ns}/tables/{table}: the table's
// metadata location and metadata, and the configured table config.
func (s *RESTServer) loadTable(w http.ResponseWriter, r *http.Request) {
	ident := restTable(r)
	tbl, err := s.cat.LoadTable(r.Context(), ident)
	if err != nil {
		restCatalogError(w, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err))
		return
	}
	meta, err := json.Marshal(tbl.Metadata())
	if err != nil {
		restError(w, http.StatusInternalServerError, "ServiceFailureException", fmt.Sprintf("encode the metadata of %s: %v", strings.Join(ident, "."), err))
		return
	}
	config := s.o.TableConfig
	if config == nil {
		config = map[string]string{}
	}
	s.loads.Add(1)
	restJSON(w, http.StatusOK, map[string]any{
		"metadata-location": tbl.MetadataLocation(),
		"metadata":          json.RawMessage(meta),
		"config":            config,
	})
}

// tableExists answers HEAD namespaces/{ns}/tables/{table}: 204 or 404.
func (s *RESTServer) tableExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.cat.CheckTableExists(r.Context(), restTable(r))
	restExists(w, ok, err)
}

// restCommitRequest is the body of a commit (updateTable) request.
type restCommitRequest struct {
	Identifier   *restIdent         `json:"identifier"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`
}

// commitTable answers POST namespaces/{ns}/tables/{table}: it commits
// the request's updates, under its requirements, through the SQL catalog.
// A requirement that does not hold, or a commit that came first, is 409
// CommitFailedException.
func (s *RESTServer) commitTable(w http.ResponseWriter, r *http.Request) {
	ident := restTable(r)
	name := strings.Join(ident, ".")
	var req restCommitRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		restError(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("commit to %s: decode the request: %v", name, err))
		return
	}
	if req.Identifier != nil {
		got := append(append(table.Identifier{}, req.Identifier.Namespace...), req.Identifier.Name)
		if strings.Join(got, "\x1f") != strings.Join(ident, "\x1f") {
			restError(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("commit to %s: the request names %s", name, strings.Join(got, ".")))
			return
		}
	}
	ok, err := s.cat.CheckTableExists(r.Context(), ident)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", icecat.ErrNoSuchTable, name)
	}
	if err != nil {
		restCatalogError(w, fmt.Errorf("commit to %s: %w", name, err))
		return
	}
	meta, loc, err := s.cat.CommitTable(r.Context(), ident, req.Requirements, req.Updates)
	if err != nil {
		if isConflict(err) {
			s.conflicts.Add(1)
			restError(w, http.StatusConflict, "CommitFailedException", fmt.Sprintf("commit to %s: %v", name, err))
			return
		}
		restCatalogError(w, fmt.Errorf("commit to %s: %w", name, err))
		return
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		restError(w, http.StatusInternalServerError, "ServiceFailureException", fmt.Sprintf("commit to %s: encode the metadata: %v", name, err))
		return
	}
	s.commits.Add(1)
	restJSON(w, http.StatusOK, map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw)})
}

// restExists answers a HEAD request: 204 when ok, 404 when not.
func restExists(w http.ResponseWriter, ok bool, err error) {
	switch {
	case err != nil:
		restCatalogError(w, err)
	case ok:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// restCatalogError answers a catalog's error: 404 for a table or
// namespace that is not there, 500 with the error's text for any other.
func restCatalogError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, icecat.ErrNoSuchTable):
		restError(w, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, icecat.ErrNoSuchNamespace):
		restError(w, http.StatusNotFound, "NoSuchNamespaceException", err.Error())
	default:
		restError(w, http.StatusInternalServerError, "ServiceFailureException", err.Error())
	}
}

// restError answers the REST protocol's error model:
// {"error":{"message":...,"type":...,"code":...}}.
func restError(w http.ResponseWriter, code int, typ, msg string) {
	type model struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	}
	restJSON(w, code, map[string]model{"error": {Message: msg, Type: typ, Code: code}})
}

// restOAuthError answers the OAuth2 error form (RFC 6749, 5.2).
func restOAuthError(w http.ResponseWriter, code int, kind, desc string) {
	restJSON(w, code, map[string]string{"error": kind, "error_description": desc})
}

// restJSON answers code with v as JSON.
func restJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		msg, _ := json.Marshal("encode the response: " + err.Error())
		code = http.StatusInternalServerError
		b = fmt.Appendf(nil, `{"error":{"message":%s,"type":"ServiceFailureException","code":500}}`, msg)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}
