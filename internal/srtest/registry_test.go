package srtest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-data/sluice/internal/srtest"
)

const (
	avroV1    = `{"type":"record","name":"Event","namespace":"sluice.test","fields":[{"name":"id","type":"long"},{"name":"count","type":"int"},{"name":"label","type":"string"}]}`
	avroOther = `{"type":"record","name":"Other","fields":[{"name":"x","type":"boolean"}]}`
	protoText = `syntax = "proto3";
package sluice.test;
message Row { int64 id = 1; string name = 2; }
`
	jsonSchema = `{"type":"object","properties":{"id":{"type":"integer"}}}`
)

// newClient returns a franz-go registry client for r.
func newClient(t *testing.T, r *srtest.Registry, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs(r.URL())}, opts...)...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return cl
}

// responseError asserts err is a *sr.ResponseError with the status and code.
func responseError(t *testing.T, err error, status, code int) *sr.ResponseError {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *sr.ResponseError", err, err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got HTTP %d error_code %d (%q), want HTTP %d error_code %d", re.StatusCode, re.ErrorCode, re.Message, status, code)
	}
	return re
}

func register(t *testing.T, cl *sr.Client, subject string, s sr.Schema) int {
	t.Helper()
	id, err := cl.RegisterSchema(t.Context(), subject, s, -1, -1)
	if err != nil {
		t.Fatalf("register under %q: %v", subject, err)
	}
	return id
}

func TestRegisterAssignsGlobalStableIDs(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()

	if id := register(t, cl, "events-value", sr.Schema{Schema: avroV1}); id != 1 {
		t.Fatalf("first id = %d, want 1", id)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(avroV1), "", "  "); err != nil {
		t.Fatal(err)
	}
	if id := register(t, cl, "events-value", sr.Schema{Schema: indented.String()}); id != 1 {
		t.Fatalf("re-register with other whitespace: id = %d, want 1", id)
	}
	if id := register(t, cl, "team/events-copy", sr.Schema{Schema: avroV1}); id != 1 {
		t.Fatalf("same schema under another subject: id = %d, want 1", id)
	}
	if id := register(t, cl, "events-value", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"long"`, 1)}); id != 2 {
		t.Fatalf("evolved schema id = %d, want 2", id)
	}
	if id := register(t, cl, "rows-value", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf}); id != 3 {
		t.Fatalf("protobuf id = %d, want 3", id)
	}
	if id := register(t, cl, "docs-value", sr.Schema{Schema: jsonSchema, Type: sr.TypeJSON}); id != 4 {
		t.Fatalf("json id = %d, want 4", id)
	}
	if id := register(t, cl, "rows-value", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf}); id != 3 {
		t.Fatalf("protobuf re-register id = %d, want 3", id)
	}
	// Protobuf is compared as text: a changed layout is a new schema.
	if id := register(t, cl, "rows-value", sr.Schema{Schema: protoText + "\n", Type: sr.TypeProtobuf}); id != 5 {
		t.Fatalf("protobuf with other text id = %d, want 5", id)
	}

	versions, err := cl.SubjectVersions(ctx, "events-value")
	if err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("SubjectVersions = %v, %v; want [1 2]", versions, err)
	}
	usages, err := cl.SchemaVersionsByID(ctx, 1)
	want := []sr.SubjectVersion{{Subject: "events-value", Version: 1}, {Subject: "team/events-copy", Version: 1}}
	if err != nil || !slices.Equal(usages, want) {
		t.Fatalf("SchemaVersionsByID(1) = %v, %v; want %v", usages, err, want)
	}
	subjects, err := cl.Subjects(ctx)
	wantSubjects := []string{"docs-value", "events-value", "rows-value", "team/events-copy"}
	if err != nil || !slices.Equal(subjects, wantSubjects) {
		t.Fatalf("Subjects = %v, %v; want %v", subjects, err, wantSubjects)
	}
}

func TestReadSchemas(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()
	v2 := strings.Replace(avroV1, `"int"`, `"long"`, 1)
	register(t, cl, "events-value", sr.Schema{Schema: avroV1})
	register(t, cl, "events-value", sr.Schema{Schema: v2})
	protoID := register(t, cl, "rows-value", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf})

	s, err := cl.SchemaByID(ctx, 1)
	if err != nil || s.Schema != avroV1 || s.Type != sr.TypeAvro || len(s.References) != 0 {
		t.Fatalf("SchemaByID(1) = %+v, %v", s, err)
	}
	s, err = cl.SchemaByID(ctx, protoID)
	if err != nil || s.Schema != protoText || s.Type != sr.TypeProtobuf {
		t.Fatalf("SchemaByID(%d) = %+v, %v", protoID, s, err)
	}

	ss, err := cl.SchemaByVersion(ctx, "events-value", 1)
	if err != nil || ss.Subject != "events-value" || ss.Version != 1 || ss.ID != 1 || ss.Schema.Schema != avroV1 {
		t.Fatalf("SchemaByVersion(1) = %+v, %v", ss, err)
	}
	ss, err = cl.SchemaByVersion(ctx, "events-value", -1)
	if err != nil || ss.Version != 2 || ss.ID != 2 || ss.Schema.Schema != v2 {
		t.Fatalf("SchemaByVersion(latest) = %+v, %v", ss, err)
	}
	if r.Requests("/subjects/events-value/versions/latest") != 1 {
		t.Fatalf("latest was not requested as /versions/latest")
	}

	created, err := cl.CreateSchema(ctx, "events-value", sr.Schema{Schema: v2})
	if err != nil || created.ID != 2 || created.Version != 2 {
		t.Fatalf("CreateSchema of a registered schema = %+v, %v", created, err)
	}

	_, err = cl.SchemaByID(ctx, 99)
	re := responseError(t, err, http.StatusNotFound, 40403)
	if re.Message != "Schema not found" || re.SchemaError() != sr.ErrSchemaNotFound {
		t.Fatalf("unknown id: message %q, schema error %v", re.Message, re.SchemaError())
	}
	_, err = cl.SubjectVersions(ctx, "nope")
	re = responseError(t, err, http.StatusNotFound, 40401)
	if re.Message != "Subject 'nope' not found." || re.SchemaError() != sr.ErrSubjectNotFound {
		t.Fatalf("unknown subject: message %q", re.Message)
	}
	_, err = cl.SchemaByVersion(ctx, "events-value", 7)
	responseError(t, err, http.StatusNotFound, 40402)
	_, err = cl.SchemaByVersion(ctx, "nope", 1)
	responseError(t, err, http.StatusNotFound, 40401)
}

func TestReferences(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()

	address := `{"type":"record","name":"Address","namespace":"sluice.test","fields":[{"name":"city","type":"string"}]}`
	person := `{"type":"record","name":"Person","namespace":"sluice.test","fields":[{"name":"home","type":"Address"}]}`
	addrID := register(t, cl, "address-value", sr.Schema{Schema: address})
	refs := []sr.SchemaReference{{Name: "sluice.test.Address", Subject: "address-value", Version: 1}}
	personID := register(t, cl, "person-value", sr.Schema{Schema: person, References: refs})
	if addrID == personID {
		t.Fatalf("referencing schema reused id %d", addrID)
	}
	s, err := cl.SchemaByID(ctx, personID)
	if err != nil || !slices.Equal(s.References, refs) {
		t.Fatalf("SchemaByID(%d) references = %+v, %v; want %+v", personID, s.References, err, refs)
	}
	ss, err := cl.SchemaByVersion(ctx, "person-value", -1)
	if err != nil || !slices.Equal(ss.References, refs) {
		t.Fatalf("SchemaByVersion references = %+v, %v", ss.References, err)
	}

	_, err = cl.RegisterSchema(ctx, "person2-value", sr.Schema{Schema: person}, -1, -1)
	responseError(t, err, http.StatusUnprocessableEntity, 42201)
	bad := []sr.SchemaReference{{Name: "x", Subject: "address-value", Version: 5}}
	_, err = cl.RegisterSchema(ctx, "person2-value", sr.Schema{Schema: person, References: bad}, -1, -1)
	responseError(t, err, http.StatusUnprocessableEntity, 42201)

	common := "syntax = \"proto3\";\npackage common;\nmessage Id { int64 v = 1; }\n"
	row := "syntax = \"proto3\";\nimport \"common.proto\";\nmessage Row { common.Id id = 1; }\n"
	commonID := r.Register(t, "common.proto", "PROTOBUF", common)
	rowRefs := []sr.SchemaReference{{Name: "common.proto", Subject: "common.proto", Version: 1}}
	rowID := r.Register(t, "row-value", "PROTOBUF", row, rowRefs...)
	s, err = cl.SchemaByID(ctx, rowID)
	if err != nil || rowID == commonID || s.Type != sr.TypeProtobuf || !slices.Equal(s.References, rowRefs) {
		t.Fatalf("protobuf with references: id %d, %+v, %v", rowID, s, err)
	}
}

func TestLookupSchema(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()
	register(t, cl, "other-value", sr.Schema{Schema: avroOther})
	register(t, cl, "events-value", sr.Schema{Schema: avroV1})
	register(t, cl, "events-value", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"long"`, 1)})

	ss, err := cl.LookupSchema(ctx, "events-value", sr.Schema{Schema: avroV1})
	if err != nil || ss.ID != 2 || ss.Version != 1 || ss.Subject != "events-value" || ss.Schema.Schema != avroV1 {
		t.Fatalf("LookupSchema = %+v, %v; want id 2 version 1", ss, err)
	}
	_, err = cl.LookupSchema(ctx, "events-value", sr.Schema{Schema: avroOther})
	responseError(t, err, http.StatusNotFound, 40403)
	_, err = cl.LookupSchema(ctx, "nope", sr.Schema{Schema: avroV1})
	responseError(t, err, http.StatusNotFound, 40401)
}

func TestCheckCompatibility(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()
	register(t, cl, "events-value", sr.Schema{Schema: avroV1})
	register(t, cl, "rows-value", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf})
	withField := func(f string) string { return strings.Replace(avroV1, `"string"}]`, `"string"},`+f+`]`, 1) }

	if c := cl.Compatibility(ctx, "events-value"); c[0].Err != nil || c[0].Level != sr.CompatBackward {
		t.Fatalf("default compatibility = %+v", c[0])
	}
	cases := []struct {
		name, subject, level string
		schema               sr.Schema
		want                 bool
	}{
		{"add field with default", "events-value", "BACKWARD", sr.Schema{Schema: withField(`{"name":"note","type":["null","string"],"default":null}`)}, true},
		{"add field without default", "events-value", "BACKWARD", sr.Schema{Schema: withField(`{"name":"note","type":"string"}`)}, false},
		{"int to long", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"long"`, 1)}, true},
		{"int to double", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"double"`, 1)}, true},
		{"long to int", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"long"`, `"int"`, 1)}, false},
		{"string to bytes", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"string"`, `"bytes"`, 1)}, true},
		{"int to string", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"string"`, 1)}, false},
		{"int into a union", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `["null","int"]`, 1)}, true},
		{"remove field", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `,{"name":"label","type":"string"}`, "", 1)}, true},
		{"rename record", "events-value", "BACKWARD", sr.Schema{Schema: strings.Replace(avroV1, `"Event"`, `"Evt"`, 1)}, false},
		{"forward: add field without default", "events-value", "FORWARD", sr.Schema{Schema: withField(`{"name":"note","type":"string"}`)}, true},
		{"forward: int to long", "events-value", "FORWARD", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"long"`, 1)}, false},
		{"full: add field with default", "events-value", "FULL", sr.Schema{Schema: withField(`{"name":"n","type":"int","default":0}`)}, true},
		{"full: int to long", "events-value", "FULL", sr.Schema{Schema: strings.Replace(avroV1, `"int"`, `"long"`, 1)}, false},
		{"none: long to int", "events-value", "NONE", sr.Schema{Schema: strings.Replace(avroV1, `"long"`, `"int"`, 1)}, true},
		{"protobuf: any change", "rows-value", "BACKWARD", sr.Schema{Schema: "syntax = \"proto3\";\nmessage X {}\n", Type: sr.TypeProtobuf}, true},
		{"protobuf to avro", "rows-value", "BACKWARD", sr.Schema{Schema: avroV1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var level sr.CompatibilityLevel
			if err := level.UnmarshalText([]byte(tc.level)); err != nil {
				t.Fatal(err)
			}
			if res := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: level}, tc.subject); res[0].Err != nil || res[0].Level != level {
				t.Fatalf("SetCompatibility = %+v", res[0])
			}
			for _, version := range []int{1, -1} {
				got, err := cl.CheckCompatibility(ctx, tc.subject, version, tc.schema)
				if err != nil || got.Is != tc.want {
					t.Fatalf("CheckCompatibility(version %d) = %+v, %v; want %v", version, got, err, tc.want)
				}
			}
			verbose, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), tc.subject, -2, tc.schema)
			if err != nil || verbose.Is != tc.want || (len(verbose.Messages) == 0) == !tc.want {
				t.Fatalf("verbose CheckCompatibility = %+v, %v", verbose, err)
			}
		})
	}

	_, err := cl.CheckCompatibility(ctx, "events-value", 9, sr.Schema{Schema: avroV1})
	responseError(t, err, http.StatusNotFound, 40402)
	_, err = cl.CheckCompatibility(ctx, "events-value", 1, sr.Schema{Schema: `{"type":"record","name":"X","fields":[{"name":"a","type":"Nope"}]}`})
	responseError(t, err, http.StatusUnprocessableEntity, 42201)
}

func TestRegisterEnforcesCompatibility(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()
	register(t, cl, "events-value", sr.Schema{Schema: avroV1})
	narrowed := sr.Schema{Schema: strings.Replace(avroV1, `"long"`, `"int"`, 1)}

	_, err := cl.RegisterSchema(ctx, "events-value", narrowed, -1, -1)
	re := responseError(t, err, http.StatusConflict, 409)
	if re.SchemaError() != sr.ErrIncompatibleSchema || !strings.Contains(re.Message, "int not compatible with writer schema long") {
		t.Fatalf("incompatible registration: %q", re.Message)
	}
	if versions, _ := cl.SubjectVersions(ctx, "events-value"); len(versions) != 1 {
		t.Fatalf("a rejected schema created a version: %v", versions)
	}

	global := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone})
	if global[0].Err != nil {
		t.Fatalf("set global compatibility: %v", global[0].Err)
	}
	if c := cl.Compatibility(ctx); c[0].Err != nil || c[0].Level != sr.CompatNone {
		t.Fatalf("global compatibility = %+v", c[0])
	}
	if id := register(t, cl, "events-value", narrowed); id != 2 {
		t.Fatalf("registration under NONE: id %d, want 2", id)
	}
}

func TestDeleteSubject(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	ctx := t.Context()
	id := register(t, cl, "events-value", sr.Schema{Schema: avroV1})

	_, err := cl.DeleteSubject(ctx, "events-value", sr.HardDelete)
	responseError(t, err, http.StatusNotFound, 40405)
	versions, err := cl.DeleteSubject(ctx, "events-value", sr.SoftDelete)
	if err != nil || !slices.Equal(versions, []int{1}) {
		t.Fatalf("soft delete = %v, %v", versions, err)
	}
	if subjects, _ := cl.Subjects(ctx); len(subjects) != 0 {
		t.Fatalf("Subjects after soft delete = %v", subjects)
	}
	deleted, _ := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted))
	if !slices.Equal(deleted, []string{"events-value"}) {
		t.Fatalf("Subjects(deleted) = %v", deleted)
	}
	_, err = cl.SubjectVersions(ctx, "events-value")
	responseError(t, err, http.StatusNotFound, 40401)
	if s, err := cl.SchemaByID(ctx, id); err != nil || s.Schema != avroV1 {
		t.Fatalf("SchemaByID after soft delete = %+v, %v", s, err)
	}
	if _, err := cl.DeleteSubject(ctx, "events-value", sr.HardDelete); err != nil {
		t.Fatalf("hard delete: %v", err)
	}
	_, err = cl.DeleteSubject(ctx, "events-value", sr.SoftDelete)
	responseError(t, err, http.StatusNotFound, 40401)
	if again := register(t, cl, "events-value", sr.Schema{Schema: avroV1}); again != id {
		t.Fatalf("re-register after hard delete: id %d, want %d", again, id)
	}
}

func TestAuth(t *testing.T) {
	cases := []struct {
		name   string
		opts   srtest.Options
		client []sr.ClientOpt
		ok     bool
	}{
		{"basic", srtest.Options{User: "u", Password: "p"}, []sr.ClientOpt{sr.BasicAuth("u", "p")}, true},
		{"basic wrong password", srtest.Options{User: "u", Password: "p"}, []sr.ClientOpt{sr.BasicAuth("u", "wrong")}, false},
		{"basic missing", srtest.Options{User: "u", Password: "p"}, nil, false},
		{"token", srtest.Options{Token: "tok"}, []sr.ClientOpt{sr.BearerToken("tok")}, true},
		{"token wrong", srtest.Options{Token: "tok"}, []sr.ClientOpt{sr.BearerToken("bad")}, false},
		{"token given basic", srtest.Options{Token: "tok"}, []sr.ClientOpt{sr.BasicAuth("tok", "tok")}, false},
		{"both, basic used", srtest.Options{User: "u", Password: "p", Token: "tok"}, []sr.ClientOpt{sr.BasicAuth("u", "p")}, true},
		{"both, token used", srtest.Options{User: "u", Password: "p", Token: "tok"}, []sr.ClientOpt{sr.BearerToken("tok")}, true},
		{"none configured", srtest.Options{}, []sr.ClientOpt{sr.BasicAuth("any", "thing")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := srtest.Start(t, tc.opts)
			cl := newClient(t, r, tc.client...)
			_, err := cl.RegisterSchema(t.Context(), "events-value", sr.Schema{Schema: avroV1}, -1, -1)
			if tc.ok {
				if err != nil {
					t.Fatalf("register: %v", err)
				}
				return
			}
			re := responseError(t, err, http.StatusUnauthorized, 40101)
			if re.Message != "Unauthorized" || strings.Contains(string(re.Raw), "wrong") {
				t.Fatalf("401 body %q", re.Raw)
			}
			// Register uses the configured credentials and still works.
			if id := r.Register(t, "events-value", "", avroV1); id != 1 {
				t.Fatalf("Register with credentials: id %d", id)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	r := srtest.Start(t, srtest.Options{TLS: true, User: "u", Password: "p"})
	if !strings.HasPrefix(r.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %q", r.URL())
	}
	pemData, err := os.ReadFile(r.CACertFile())
	if err != nil {
		t.Fatalf("read CA file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("CA file holds no certificate")
	}
	cl := newClient(t, r, sr.DialTLSConfig(&tls.Config{RootCAs: pool}), sr.BasicAuth("u", "p"))
	id := register(t, cl, "events-value", sr.Schema{Schema: avroV1})
	if s, err := cl.SchemaByID(t.Context(), id); err != nil || s.Schema != avroV1 {
		t.Fatalf("SchemaByID over TLS = %+v, %v", s, err)
	}

	untrusted := newClient(t, r, sr.BasicAuth("u", "p"))
	if _, err := untrusted.SchemaByID(t.Context(), id); err == nil {
		t.Fatalf("a client without the CA trusted the registry")
	}
	if plain := srtest.Start(t, srtest.Options{}); plain.CACertFile() != "" {
		t.Fatalf("CACertFile without TLS = %q", plain.CACertFile())
	}
}

// rawDo sends a request with the registry's own HTTP client and decodes a
// JSON answer.
func rawDo(t *testing.T, r *srtest.Registry, method, path, contentType, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, r.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := r.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != srtest.ContentType {
		t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(data) > 0 && data[0] == '{' {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode, out
}

func TestHTTPProtocol(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	body := fmt.Sprintf(`{"schema":%q}`, avroOther)
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code                            float64
	}{
		{"register with application/json", "POST", "/subjects/a/versions", "application/json", body, 200, 0},
		{"explicit AVRO type", "POST", "/subjects/b/versions", srtest.ContentType, `{"schema":"\"string\"","schemaType":"AVRO"}`, 200, 0},
		{"unknown route", "GET", "/nothing/here", "", "", 404, 404},
		{"wrong method", "DELETE", "/schemas/ids/1", "", "", 404, 404},
		{"unsupported content type", "POST", "/subjects/a/versions", "text/plain", body, 415, 415},
		{"malformed body", "POST", "/subjects/a/versions", srtest.ContentType, `{"schema":`, 400, 400},
		{"invalid JSON schema text", "POST", "/subjects/a/versions", srtest.ContentType, `{"schema":"{nope"}`, 422, 42201},
		{"unknown schema type", "POST", "/subjects/a/versions", srtest.ContentType, `{"schema":"x","schemaType":"XML"}`, 422, 42201},
		{"explicit id", "POST", "/subjects/a/versions", srtest.ContentType, `{"schema":"\"int\"","id":77}`, 422, 42205},
		{"invalid version", "GET", "/subjects/a/versions/abc", "", "", 422, 42202},
		{"version zero", "GET", "/subjects/a/versions/0", "", "", 422, 42202},
		{"invalid level", "PUT", "/config/a", srtest.ContentType, `{"compatibility":"SIDEWAYS"}`, 422, 42203},
		{"non-numeric id", "GET", "/schemas/ids/x", "", "", 404, 40403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := rawDo(t, r, tc.method, tc.path, tc.ctype, tc.body)
			if status != tc.status {
				t.Fatalf("status %d (%v), want %d", status, out, tc.status)
			}
			if tc.code != 0 && (out["error_code"] != tc.code || out["message"] == "") {
				t.Fatalf("body %v, want error_code %v and a message", out, tc.code)
			}
		})
	}
	if _, out := rawDo(t, r, "GET", "/schemas/ids/2", "", ""); out["schemaType"] != nil || out["schema"] != `"string"` {
		t.Fatalf("GET /schemas/ids/2 = %v: want Avro schema without schemaType", out)
	}
	if _, out := rawDo(t, r, "GET", "/config/a", "", ""); out["compatibilityLevel"] != "BACKWARD" {
		t.Fatalf("GET /config/a = %v", out)
	}
}

func TestRequestsCounted(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	id := r.Register(t, "team/events-value", "AVRO", avroV1)
	if n := r.Requests("/subjects/team/events-value/versions"); n != 1 {
		t.Fatalf("register requests = %d, want 1", n)
	}
	for range 2 {
		if _, err := cl.SchemaByID(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.Requests(fmt.Sprintf("/schemas/ids/%d", id)); n != 2 {
		t.Fatalf("Requests = %d, want 2", n)
	}
	if n := r.Requests("/schemas/ids/999"); n != 0 {
		t.Fatalf("Requests of an unused path = %d", n)
	}
}

// event is the value encoded in the Serde round trip.
type event struct {
	ID    int64  `json:"id"`
	Count int32  `json:"count"`
	Label string `json:"label"`
}

func TestSerdeRoundTrip(t *testing.T) {
	r := srtest.Start(t, srtest.Options{User: "u", Password: "p"})
	cl := newClient(t, r, sr.BasicAuth("u", "p"))
	ctx := t.Context()
	r.Register(t, "other-value", "", avroOther)
	id := register(t, cl, "events-value", sr.Schema{Schema: avroV1})

	serde := sr.NewSerde()
	serde.Register(id, event{}, sr.EncodeFn(json.Marshal), sr.DecodeFn(json.Unmarshal))
	in := event{ID: 7, Count: 3, Label: "x"}
	data, err := serde.Encode(in)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	gotID, _, err := serde.DecodeID(data)
	if err != nil || gotID != id {
		t.Fatalf("DecodeID = %d, %v; want %d", gotID, err, id)
	}

	// A consumer that only has the bytes resolves the id at the registry.
	s, err := cl.SchemaByID(ctx, gotID)
	if err != nil || s.Schema != avroV1 {
		t.Fatalf("SchemaByID(%d) = %+v, %v", gotID, s, err)
	}
	consumer := sr.NewSerde()
	consumer.Register(gotID, event{}, sr.DecodeFn(json.Unmarshal))
	var out event
	if err := consumer.Decode(data, &out); err != nil || out != in {
		t.Fatalf("decode = %+v, %v; want %+v", out, err, in)
	}
	if n := r.Requests(fmt.Sprintf("/schemas/ids/%d", id)); n != 1 {
		t.Fatalf("schema fetched %d times, want 1", n)
	}
}

func TestConcurrentRegistration(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r)
	const n = 16
	ids := make([]int, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[]}`, i)
			ids[i], errs[i] = cl.RegisterSchema(t.Context(), fmt.Sprintf("s%d", i), sr.Schema{Schema: s}, -1, -1)
		})
		wg.Go(func() {
			ids[n+i], errs[n+i] = cl.RegisterSchema(t.Context(), fmt.Sprintf("shared%d", i), sr.Schema{Schema: avroOther}, -1, -1)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	distinct := slices.Clone(ids[:n])
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	shared := slices.Compact(slices.Clone(ids[n:]))
	if len(distinct) != n || len(shared) != 1 || slices.Contains(distinct, shared[0]) {
		t.Fatalf("ids %v: want %d distinct ids and one shared id", ids, n)
	}
	if top := slices.Max(ids); top != n+1 {
		t.Fatalf("largest id %d, want %d", top, n+1)
	}
}

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestRegisterHelperFails(t *testing.T) {
	r := srtest.Start(t, srtest.Options{User: "user", Password: "s3cret"})
	ftb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Register(ftb, "events-value", "", `{"type":"record","name":"X","fields":[{"name":"a","type":"Nope"}]}`)
	}()
	<-done
	if !strings.Contains(ftb.msg, "42201") || !strings.Contains(ftb.msg, "events-value") {
		t.Fatalf("Register failure message %q", ftb.msg)
	}
	if strings.Contains(ftb.msg, "s3cret") {
		t.Fatalf("Register failure message shows the password: %q", ftb.msg)
	}
}

func TestSchemaContextsNotServed(t *testing.T) {
	r := srtest.Start(t, srtest.Options{})
	cl := newClient(t, r, sr.DefaultSchemaContext("ctx"))
	_, err := cl.Subjects(context.Background())
	responseError(t, err, http.StatusNotFound, 404)
}
