package icebergtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

const restCred = "sluice-test:s3cret-value"

// restCatalog opens iceberg-go's REST client on s, closed when t ends.
func restCatalog(t *testing.T, s *RESTServer, opts ...rest.Option) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(context.Background(), "rest", s.URL(), opts...)
	if err != nil {
		t.Fatalf("open REST catalog %s: %v", s.URL(), err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// restAppend appends rows rows to tbl in one transaction and commits it.
func restAppend(t *testing.T, tbl *table.Table, first int64, rows int) (*table.Table, error) {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatalf("arrow schema: %v", err)
	}
	data, err := batch(sc, 7, first, rows)
	if err != nil {
		t.Fatalf("rows: %v", err)
	}
	defer data.Release()
	ctx := context.Background()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, data, int64(rows), nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	return tx.Commit(ctx)
}

// restDo sends method to u with the bearer token tok ("" none) and
// returns the status, the Allow header and the body decoded.
func restDo(t *testing.T, method, u, tok string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	var body map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, u, b, err)
		}
	}
	return rsp.StatusCode, rsp.Header, body
}

// restErrorOf is the REST error model of body: its type and code.
func restErrorOf(t *testing.T, body map[string]any) (string, int) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("body %v: no REST error model", body)
	}
	typ, _ := e["type"].(string)
	code, _ := e["code"].(float64)
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("error %v: no message", e)
	}
	return typ, int(code)
}

func TestRESTLoad(t *testing.T) {
	tb := Write(t, Options{Appends: 3, RowsPerAppend: 50})
	s := ServeREST(t, tb, RESTOptions{Credential: restCred})
	cat := restCatalog(t, s, rest.WithCredential(restCred))
	ctx := context.Background()

	got, err := cat.LoadTable(ctx, tb.ident)
	if err != nil {
		t.Fatalf("load through REST: %v", err)
	}
	want := tb.Load(t)
	if got.MetadataLocation() != want.MetadataLocation() {
		t.Errorf("metadata location %s, SQL catalog has %s", got.MetadataLocation(), want.MetadataLocation())
	}
	if got.CurrentSnapshot() == nil || got.CurrentSnapshot().SnapshotID != want.CurrentSnapshot().SnapshotID {
		t.Errorf("current snapshot %v, SQL catalog has %d", got.CurrentSnapshot(), want.CurrentSnapshot().SnapshotID)
	}
	if !got.Metadata().Equals(want.Metadata()) {
		t.Error("metadata through REST differs from the SQL catalog's")
	}
	if n := s.Loads(); n != 1 {
		t.Errorf("Loads() = %d, want 1", n)
	}
	if ok, err := cat.CheckTableExists(ctx, tb.ident); err != nil || !ok {
		t.Errorf("table exists: %v, %v", ok, err)
	}
	if ok, err := cat.CheckTableExists(ctx, table.Identifier{"lake", "nope"}); err != nil || ok {
		t.Errorf("missing table exists: %v, %v", ok, err)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"lake", "nope"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("load missing table: %v, want ErrNoSuchTable", err)
	}
	var listed []string
	for id, err := range cat.ListTables(ctx, table.Identifier{"lake"}) {
		if err != nil {
			t.Fatalf("list tables: %v", err)
		}
		listed = append(listed, strings.Join(id, "."))
	}
	if !slices.Equal(listed, []string{"lake.events"}) {
		t.Errorf("tables %v, want [lake.events]", listed)
	}
	nss, err := cat.ListNamespaces(ctx, nil)
	if err != nil || !slices.ContainsFunc(nss, func(ns table.Identifier) bool { return slices.Equal(ns, table.Identifier{"lake"}) }) {
		t.Errorf("namespaces %v, %v: want lake among them", nss, err)
	}
}

func TestRESTMultiLevelNamespace(t *testing.T) {
	tb := Write(t, Options{Appends: 1, RowsPerAppend: 10})
	ctx := context.Background()
	nested := table.Identifier{"lake", "raw zone", "t"}
	if err := tb.cat.CreateNamespace(ctx, nested[:2], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.cat.CreateTable(ctx, nested, schema()); err != nil {
		t.Fatal(err)
	}
	s := ServeREST(t, tb, RESTOptions{})
	cat := restCatalog(t, s)
	tbl, err := cat.LoadTable(ctx, nested)
	if err != nil {
		t.Fatalf("load %v through REST: %v", nested, err)
	}
	if !slices.Equal(tbl.Identifier(), nested) {
		t.Errorf("identifier %v, want %v", tbl.Identifier(), nested)
	}
	if ok, err := cat.CheckNamespaceExists(ctx, nested[:2]); err != nil || !ok {
		t.Errorf("namespace %v exists: %v, %v", nested[:2], ok, err)
	}
}

func TestRESTAppend(t *testing.T) {
	tb := Write(t, Options{Appends: 3, RowsPerAppend: 50})
	s := ServeREST(t, tb, RESTOptions{Prefix: "wh-1", BasePath: "/api/catalog", Credential: restCred})
	if !strings.HasSuffix(s.URL(), "/api/catalog") {
		t.Errorf("URL() = %s, want it to end in /api/catalog", s.URL())
	}
	cat := restCatalog(t, s, rest.WithCredential(restCred))
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, tb.ident)
	if err != nil {
		t.Fatalf("load through REST: %v", err)
	}
	before := tbl.CurrentSnapshot().SnapshotID
	after, err := restAppend(t, tbl, 150, 20)
	if err != nil {
		t.Fatalf("commit through REST: %v", err)
	}
	want := tb.Load(t)
	if after.MetadataLocation() != want.MetadataLocation() {
		t.Errorf("commit left %s, SQL catalog has %s", after.MetadataLocation(), want.MetadataLocation())
	}
	cur := want.CurrentSnapshot()
	if cur.SnapshotID == before || cur.ParentSnapshotID == nil || *cur.ParentSnapshotID != before {
		t.Errorf("SQL catalog's current snapshot %d (parent %v), want a child of %d", cur.SnapshotID, cur.ParentSnapshotID, before)
	}
	if n := cur.Summary.Properties["total-records"]; n != "170" {
		t.Errorf("total-records %s, want 170", n)
	}
	if n := s.Commits(); n != 1 {
		t.Errorf("Commits() = %d, want 1", n)
	}
}

func TestRESTStaleCommit(t *testing.T) {
	tb := Write(t, Options{Appends: 3, RowsPerAppend: 50})
	s := ServeREST(t, tb, RESTOptions{Token: "static-token"})
	cat := restCatalog(t, s, rest.WithOAuthToken("static-token"))
	ctx := context.Background()
	first, err := cat.LoadTable(ctx, tb.ident)
	if err != nil {
		t.Fatal(err)
	}
	second, err := cat.LoadTable(ctx, tb.ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restAppend(t, first, 150, 10); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	_, err = restAppend(t, second, 160, 10)
	if !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("stale commit: %v, want table.ErrCommitFailed", err)
	}
	if c, n := s.Commits(), s.Conflicts(); c != 1 || n != 1 {
		t.Errorf("Commits(), Conflicts() = %d, %d, want 1, 1", c, n)
	}
	if got := tb.Load(t).CurrentSnapshot().Summary.Properties["total-records"]; got != "160" {
		t.Errorf("total-records %s, want 160", got)
	}
}

func TestRESTAuth(t *testing.T) {
	tb := Write(t, Options{Appends: 1, RowsPerAppend: 10})
	s := ServeREST(t, tb, RESTOptions{Credential: restCred, Token: "static-token"})
	ctx := context.Background()
	refused := func(name string, want error, opts ...rest.Option) {
		t.Helper()
		cat, err := rest.NewCatalog(ctx, "rest", s.URL(), opts...)
		if err == nil {
			cat.Close()
			t.Fatalf("%s: catalog opened", name)
		}
		msg := strings.ToLower(err.Error())
		if !errors.Is(err, want) || !strings.Contains(msg, "401") && !strings.Contains(msg, "unauthorized") {
			t.Errorf("%s: %v, want %v mentioning 401 or unauthorized", name, err, want)
		}
	}
	refused("wrong secret", rest.ErrOAuthError, rest.WithCredential("sluice-test:wrong"))
	refused("wrong client", rest.ErrOAuthError, rest.WithCredential("someone:s3cret-value"))
	refused("no token", rest.ErrUnauthorized)
	refused("wrong token", rest.ErrUnauthorized, rest.WithOAuthToken("not-the-token"))
	for _, opt := range []rest.Option{rest.WithCredential(restCred), rest.WithOAuthToken("static-token")} {
		if _, err := restCatalog(t, s, opt).LoadTable(ctx, tb.ident); err != nil {
			t.Errorf("load: %v", err)
		}
	}

	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"sluice-test"}, "client_secret": {"wrong"}, "scope": {"catalog"}}
	rsp, err := http.PostForm(s.URL()+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	var oerr map[string]string
	err = json.NewDecoder(rsp.Body).Decode(&oerr)
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusUnauthorized || err != nil || oerr["error"] != "invalid_client" {
		t.Errorf("token with a wrong secret: %d %v %v, want 401 invalid_client", rsp.StatusCode, oerr, err)
	}
	form.Set("client_secret", "s3cret-value")
	rsp, err = http.PostForm(s.URL()+"/v1/oauth/tokens", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	err = json.NewDecoder(rsp.Body).Decode(&tok)
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK || err != nil || tok["token_type"] != "bearer" || tok["issued_token_type"] != "urn:ietf:params:oauth:token-type:access_token" {
		t.Fatalf("token: %d %v %v", rsp.StatusCode, tok, err)
	}
	access, _ := tok["access_token"].(string)
	tableURL := s.URL() + "/v1/namespaces/lake/tables/events"
	if code, _, body := restDo(t, http.MethodGet, tableURL, ""); code != http.StatusUnauthorized {
		t.Errorf("load without a token: %d, want 401", code)
	} else if typ, c := restErrorOf(t, body); typ != "NotAuthorizedException" || c != 401 {
		t.Errorf("load without a token: %s %d, want NotAuthorizedException 401", typ, c)
	}
	if code, _, _ := restDo(t, http.MethodGet, tableURL, access); code != http.StatusOK {
		t.Errorf("load with an issued token: %d, want 200", code)
	}
}

func TestRESTTLS(t *testing.T) {
	tb := Write(t, Options{Appends: 1, RowsPerAppend: 10})
	s := ServeREST(t, tb, RESTOptions{TLS: true, Credential: restCred, BasePath: "api/catalog/"})
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/api/catalog") {
		t.Errorf("URL() = %s", s.URL())
	}
	host := strings.TrimPrefix(s.URL(), "https://")
	if want := "iceberg+rest://" + host + "#lake.events"; s.TableURL() != want {
		t.Errorf("TableURL() = %s, want %s", s.TableURL(), want)
	}
	pemBytes, err := os.ReadFile(s.CACertFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("%s holds no certificate", s.CACertFile())
	}
	cat := restCatalog(t, s, rest.WithCredential(restCred), rest.WithTLSConfig(&tls.Config{RootCAs: pool}))
	if _, err := cat.LoadTable(context.Background(), tb.ident); err != nil {
		t.Fatalf("load over TLS: %v", err)
	}
	untrusted, err := rest.NewCatalog(context.Background(), "rest", s.URL(), rest.WithCredential(restCred))
	if err == nil {
		untrusted.Close()
		t.Fatal("catalog opened without trusting the test certificate")
	}
	if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted: %v, want a certificate error", err)
	}

	plain := ServeREST(t, tb, RESTOptions{BasePath: "/api/catalog"})
	if want := "iceberg+rest://" + strings.TrimPrefix(plain.URL(), "http://") + "?tls=false#lake.events"; plain.TableURL() != want {
		t.Errorf("TableURL() = %s, want %s", plain.TableURL(), want)
	}
	if plain.CACertFile() != "" {
		t.Errorf("CACertFile() = %s without TLS", plain.CACertFile())
	}
}

func TestRESTRoutes(t *testing.T) {
	tb := Write(t, Options{Appends: 1, RowsPerAppend: 10})
	s := ServeREST(t, tb, RESTOptions{Prefix: "wh-1", BasePath: "/api/catalog", Token: "tok", TableConfig: map[string]string{"io.test": "yes"}})
	v1 := s.URL() + "/v1"

	code, _, body := restDo(t, http.MethodGet, v1+"/config?warehouse=anything", "tok")
	if over, _ := body["overrides"].(map[string]any); code != http.StatusOK || over["prefix"] != "wh-1" {
		t.Errorf("config: %d %v, want 200 with prefix wh-1", code, body)
	}
	code, _, body = restDo(t, http.MethodGet, v1+"/wh-1/namespaces/lake/tables/events", "tok")
	if cfg, _ := body["config"].(map[string]any); code != http.StatusOK || cfg["io.test"] != "yes" || body["metadata-location"] != tb.MetadataLocation(t) {
		t.Errorf("load: %d, config %v, metadata-location %v", code, body["config"], body["metadata-location"])
	}
	for _, c := range []struct {
		method, path string
		code         int
		typ          string
	}{
		{http.MethodGet, "/wh-1/namespaces/lake/tables/nope", 404, "NoSuchTableException"},
		{http.MethodGet, "/wh-1/namespaces/nowhere/tables/events", 404, "NoSuchTableException"},
		{http.MethodGet, "/namespaces/lake/tables/events", 404, "NoSuchEndpointException"},
		{http.MethodGet, "/wh-2/namespaces/lake/tables/events", 404, "NoSuchEndpointException"},
		{http.MethodDelete, "/wh-1/namespaces/lake/tables/events", 405, "MethodNotAllowedException"},
		{http.MethodPut, "/config", 405, "MethodNotAllowedException"},
	} {
		code, hdr, body := restDo(t, c.method, v1+c.path, "tok")
		if code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, code, c.code)
			continue
		}
		if typ, n := restErrorOf(t, body); typ != c.typ || n != c.code {
			t.Errorf("%s %s: %s %d, want %s %d", c.method, c.path, typ, n, c.typ, c.code)
		}
		if c.code == 405 && hdr.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
	for path, want := range map[string]int{"/wh-1/namespaces/lake/tables/events": 204, "/wh-1/namespaces/lake/tables/nope": 404} {
		if code, _, _ := restDo(t, http.MethodHead, v1+path, "tok"); code != want {
			t.Errorf("HEAD %s: %d, want %d", path, code, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, v1+"/wh-1/namespaces/lake/tables/events", strings.NewReader(`{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000000"}],"updates":[]}`))
	req.Header.Set("Authorization", "Bearer tok")
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusConflict || s.Conflicts() != 1 {
		t.Errorf("commit with a wrong table uuid: %d, Conflicts() %d, want 409, 1", rsp.StatusCode, s.Conflicts())
	}
}
