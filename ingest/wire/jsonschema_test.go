package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/pqio"
)

// jsTestOrder is a draft-07 schema using every mapping, local $refs and
// a $ref to a reference.
const jsTestOrder = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Order",
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string"},
    "at": {"type": "string", "format": "date-time"},
    "day": {"type": ["null", "string"], "format": "date"},
    "qty": {"type": "integer"},
    "price": {"type": "number"},
    "ok": {"type": "boolean"},
    "addr": {"$ref": "#/definitions/Address"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "scores": {"type": "array", "items": {"oneOf": [{"type": "null"}, {"type": "number"}]}},
    "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
    "note": {"oneOf": [{"type": "null", "title": "Not included"}, {"type": "string"}]},
    "kind": {"enum": ["a", "b"]},
    "customer": {"$ref": "customer.json"},
    "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
    "when": {"anyOf": [{"$ref": "#/definitions/Stamp"}, {"type": "null"}]}
  },
  "required": ["id", "name", "at", "day", "qty", "ok", "tags", "addr"],
  "definitions": {
    "Address": {
      "type": "object",
      "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
      "required": ["city"]
    },
    "Line": {
      "type": "object",
      "properties": {"sku": {"type": "string"}, "n": {"type": "integer"}},
      "required": ["sku", "n"]
    },
    "Stamp": {"type": "string", "format": "date-time"}
  }
}`

// jsTestRefs are the references of jsTestOrder.
var jsTestRefs = []Reference{{Name: "customer.json", Schema: `{
  "type": "object",
  "properties": {"cid": {"type": "integer"}, "email": {"type": "string"}},
  "required": ["cid"]
}`}}

func jsParse(t testing.TB, text string, refs []Reference) Schema {
	t.Helper()
	s, err := Parse(JSONSchema, text, refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestJSONSchemaColumns(t *testing.T) {
	s := jsParse(t, jsTestOrder, jsTestRefs)
	str := pqio.Type{Kind: pqio.KindString}
	checkColumns(t, s.Columns(), []pqio.Column{
		pbCol("id", pqio.KindUUID, false),
		pbCol("name", pqio.KindString, false),
		pbCol("at", pqio.KindTimestamp, false),
		pbCol("day", pqio.KindDate, true),
		pbCol("qty", pqio.KindInt64, false),
		pbCol("price", pqio.KindFloat64, true),
		pbCol("ok", pqio.KindBool, false),
		{Name: "addr", Type: pqio.StructOf(pbCol("city", pqio.KindString, false), pbCol("zip", pqio.KindString, true))},
		{Name: "tags", Type: pqio.ListOf(str, false)},
		{Name: "scores", Type: pqio.ListOf(pqio.Type{Kind: pqio.KindFloat64}, true), Nullable: true},
		{Name: "attrs", Type: pqio.MapOf(str, pqio.Type{Kind: pqio.KindInt64}, false), Nullable: true},
		pbCol("note", pqio.KindString, true),
		pbCol("kind", pqio.KindString, true),
		{Name: "customer", Type: pqio.StructOf(pbCol("cid", pqio.KindInt64, false), pbCol("email", pqio.KindString, true)), Nullable: true},
		{Name: "lines", Type: pqio.ListOf(pqio.StructOf(pbCol("sku", pqio.KindString, false), pbCol("n", pqio.KindInt64, false)), false), Nullable: true},
		pbCol("when", pqio.KindTimestamp, true),
	})
}

func TestJSONSchemaDecode(t *testing.T) {
	s := jsParse(t, jsTestOrder, jsTestRefs)
	row, err := s.Decode([]byte(`{
	  "id": "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "name": "n", "at": "2024-01-02T03:04:05.1234567+02:00",
	  "day": "2024-02-29", "qty": 9007199254740993, "price": 1.5, "ok": true,
	  "addr": {"city": "Oslo", "extra": 1}, "tags": ["a", "b"], "scores": [1, null, 2.5e0],
	  "attrs": {"z": 1, "a": 2.0}, "note": null, "kind": "b", "customer": {"cid": 1e2},
	  "lines": [{"sku": "x", "n": -3}], "when": "1969-12-31t23:59:59.9999999z", "unknown": [1, {"x": 2}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{
		"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "n",
		"at":  time.Date(2024, 1, 2, 1, 4, 5, 123456000, time.UTC),
		"day": time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "qty": int64(9007199254740993), "price": 1.5, "ok": true,
		"addr":     map[string]any{"city": "Oslo"},
		"tags":     []any{"a", "b"},
		"scores":   []any{1.0, nil, 2.5},
		"attrs":    []pqio.MapEntry{{Key: "a", Value: int64(2)}, {Key: "z", Value: int64(1)}},
		"kind":     "b",
		"customer": map[string]any{"cid": int64(100)},
		"lines":    []any{map[string]any{"sku": "x", "n": int64(-3)}},
		"when":     time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
	})
}

// TestJSONSchemaDecodeMinimal leaves out every property that is not
// required: they are absent from the row, as is a null one.
func TestJSONSchemaDecodeMinimal(t *testing.T) {
	s := jsParse(t, jsTestOrder, jsTestRefs)
	row, err := s.Decode([]byte(`{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "", "at": "2024-01-02T03:04:05Z",
	  "day": null, "qty": -1, "ok": false, "tags": [], "addr": {"city": ""}}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{
		"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "", "at": time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		"qty": int64(-1), "ok": false, "tags": []any{}, "addr": map[string]any{"city": ""},
	})
}

// TestJSONSchemaIntegers shows integers read exactly: an integral
// number in any notation is one, a fraction or a value past int64 is a
// bad record.
func TestJSONSchemaIntegers(t *testing.T) {
	s := jsParse(t, `{"type": "object", "properties": {"n": {"type": "integer"}}}`, nil)
	for text, want := range map[string]int64{
		"9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808,
		"2.0": 2, "1e2": 100, "1.5E1": 15, "-0": 0, "0.0e5": 0, "12300e-2": 123, "9.223372036854775807e18": 9223372036854775807,
	} {
		row, err := s.Decode([]byte(`{"n": ` + text + `}`))
		if err != nil || row["n"] != want {
			t.Errorf("%s: got %#v, %v; want %d", text, row["n"], err, want)
		}
	}
	for _, text := range []string{"1.5", "9223372036854775808", "-9223372036854775809", "1e19", "1e-1", "123e-2", "1e400", `"1"`} {
		if _, err := s.Decode([]byte(`{"n": ` + text + `}`)); !errors.Is(err, ErrBadRecord) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line ErrBadRecord", text, err)
		}
	}
}

func TestJSONSchemaBadRecord(t *testing.T) {
	s := jsParse(t, jsTestOrder, jsTestRefs)
	good := `"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "n", "at": "2024-01-02T03:04:05Z", "day": null, "ok": true, "tags": [], "addr": {"city": "c"}`
	for name, tc := range map[string]struct{ payload, says string }{
		"not json":         {`{"qty": `, "json:"},
		"trailing data":    {`{} {}`, "json:"},
		"null":             {`null`, "want object"},
		"missing required": {`{` + good + `}`, "missing property 'qty'"},
		"fraction":         {`{` + good + `, "qty": 1.5}`, "at '/qty'"},
		"string for int":   {`{` + good + `, "qty": "1"}`, "at '/qty'"},
		"bad uuid":         {strings.Replace(`{`+good+`, "qty": 1}`, "6ba7b810", "6ba7b81x", 1), "at '/id'"},
		"bad date-time":    {strings.Replace(`{`+good+`, "qty": 1}`, "03:04:05Z", "03:04:05", 1), "at '/at'"},
		"bad date":         {strings.Replace(`{`+good+`, "qty": 1}`, `"day": null`, `"day": "2024-02-30"`, 1), "at '/day'"},
		"nested":           {`{` + good + `, "qty": 1, "lines": [{"sku": "x", "n": 1}, {"sku": 2, "n": 1}]}`, "at '/lines/1/sku'"},
		"map value":        {`{` + good + `, "qty": 1, "attrs": {"a": 0.5}}`, "at '/attrs/a'"},
		"null in list":     {`{` + good + `, "qty": 1, "tags": [null]}`, "at '/tags/0'"},
		"out of range":     {`{` + good + `, "qty": 1, "customer": {"cid": 1e30}}`, "field customer.cid"},
		"float overflow":   {`{` + good + `, "qty": 1, "price": 1e400}`, "field price"},
	} {
		_, err := s.Decode([]byte(tc.payload))
		if !errors.Is(err, ErrBadRecord) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: got %v, want a one-line ErrBadRecord saying %q", name, err, tc.says)
		}
	}
}

// TestJSONSchemaDraft2020 resolves $defs, and a reference by its name
// relative to the schema's $id.
func TestJSONSchemaDraft2020(t *testing.T) {
	text := `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "$id": "https://example.com/schemas/event.json",
	  "type": "object",
	  "properties": {
	    "user": {"$ref": "user.json"},
	    "seen": {"$ref": "#/$defs/Seen"},
	    "ids": {"type": "array", "items": {"type": "string", "format": "uuid"}}
	  },
	  "required": ["user", "seen"],
	  "$defs": {"Seen": {"type": "object", "additionalProperties": {"type": ["string", "null"], "format": "date"}}}
	}`
	refs := []Reference{{Name: "user.json", Schema: `{"$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object", "properties": {"uid": {"type": "integer"}, "home": {"$ref": "#/$defs/Place"}}, "required": ["uid"],
	  "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}}`}}
	s := jsParse(t, text, refs)
	checkColumns(t, s.Columns(), []pqio.Column{
		{Name: "user", Type: pqio.StructOf(pbCol("uid", pqio.KindInt64, false),
			pqio.Column{Name: "home", Type: pqio.StructOf(pbCol("lat", pqio.KindFloat64, false)), Nullable: true})},
		{Name: "seen", Type: pqio.MapOf(pqio.Type{Kind: pqio.KindString}, pqio.Type{Kind: pqio.KindDate}, true)},
		{Name: "ids", Type: pqio.ListOf(pqio.Type{Kind: pqio.KindUUID}, false), Nullable: true},
	})
	row, err := s.Decode([]byte(`{"user": {"uid": 7, "home": {"lat": 59.9}}, "seen": {"b": null, "a": "2020-01-31"}}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{
		"user": map[string]any{"uid": int64(7), "home": map[string]any{"lat": 59.9}},
		"seen": []pqio.MapEntry{{Key: "a", Value: time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC)}, {Key: "b", Value: nil}},
	})
	// Formats are asserted under 2020-12 too.
	if _, err := s.Decode([]byte(`{"user": {"uid": 7}, "seen": {}, "ids": ["nope"]}`)); !errors.Is(err, ErrBadRecord) {
		t.Errorf("bad uuid under 2020-12: got %v, want ErrBadRecord", err)
	}
}

func TestJSONSchemaUnsupported(t *testing.T) {
	obj := func(prop string) string {
		return `{"type": "object", "properties": {"p": {"type": "string"}, "x": ` + prop + `}}`
	}
	for name, tc := range map[string]struct{ text, says string }{
		"several types":  {obj(`{"type": ["string", "integer"]}`), `"x"`},
		"two branches":   {obj(`{"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}`), `"x"`},
		"not":            {obj(`{"not": {"type": "string"}}`), `"x"`},
		"any value":      {obj(`{}`), `"x"`},
		"true schema":    {obj(`true`), `"x"`},
		"only null":      {obj(`{"type": "null"}`), `"x"`},
		"tuple":          {obj(`{"type": "array", "items": [{"type": "string"}]}`), `"x"`},
		"prefixItems":    {obj(`{"type": "array", "prefixItems": [{"type": "string"}]}`), `"x"`},
		"no items":       {obj(`{"type": "array"}`), `"x"`},
		"free object":    {obj(`{"type": "object"}`), `"x"`},
		"nested":         {obj(`{"type": "object", "properties": {"y": {"type": ["number", "boolean"]}}}`), `"x.y"`},
		"list element":   {obj(`{"type": "array", "items": {"not": {}}}`), `"x.element"`},
		"recursive":      {`{"type": "object", "properties": {"x": {"$ref": "#/definitions/N"}}, "definitions": {"N": {"type": "object", "properties": {"next": {"$ref": "#/definitions/N"}}}}}`, `"x.next"`},
		"anchor":         {`{"type": "object", "properties": {"x": {"$ref": "#A"}}, "definitions": {"A": {"$id": "#A", "type": "string"}}}`, `"x"`},
		"top not object": {`{"type": "string"}`, "top level"},
		"case clash":     {`{"type": "object", "properties": {"a": {"type": "string"}, "A": {"type": "string"}}}`, `"A"`},
		"empty name":     {`{"type": "object", "properties": {"": {"type": "string"}}}`, "no name"},
		"number enum":    {obj(`{"enum": [1, 2]}`), `"x"`},
	} {
		_, err := Parse(JSONSchema, tc.text, nil, nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line ErrUnsupported saying %s", name, err, tc.says)
		}
	}
}

func TestJSONSchemaInvalidSchema(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		refs []Reference
	}{
		"not json":        {`{"type": "object",`, nil},
		"bad keyword":     {`{"type": "object", "properties": {"a": {"type": "string", "minLength": "x"}}}`, nil},
		"bad reference":   {`{"type": "object", "properties": {"a": {"$ref": "r.json"}}}`, []Reference{{Name: "r.json", Schema: `{`}}},
		"missing ref":     {`{"type": "object", "properties": {"a": {"$ref": "#/definitions/Nope"}}}`, nil},
		"unknown doc":     {`{"type": "object", "properties": {"a": {"$ref": "other.json"}}}`, nil},
		"type not a name": {`{"type": "object", "properties": {"a": {"type": 5}}}`, nil},
		"same name twice": {`{"type": "object", "properties": {"a": {"type": "string"}}}`, []Reference{{Name: "r.json", Schema: `{}`}, {Name: "r.json", Schema: `{}`}}},
	} {
		_, err := Parse(JSONSchema, tc.text, tc.refs, nil)
		if err == nil || errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line error, not ErrUnsupported", name, err)
		}
	}
}

// TestJSONSchemaConstraintsOnly shows combinators beside a type only
// constrain: they are validated, not mapped.
func TestJSONSchemaConstraintsOnly(t *testing.T) {
	s := jsParse(t, `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
	  "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "additionalProperties": false}`, nil)
	checkColumns(t, s.Columns(), []pqio.Column{pbCol("a", pqio.KindString, true), pbCol("b", pqio.KindString, true)})
	if _, err := s.Decode([]byte(`{"a": "x"}`)); err != nil {
		t.Errorf("one of a, b: %v", err)
	}
	for _, p := range []string{`{"a": "x", "b": "y"}`, `{}`, `{"a": "x", "c": 1}`} {
		if _, err := s.Decode([]byte(p)); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: got %v, want ErrBadRecord", p, err)
		}
	}
}

func TestJSONSchemaConcurrentDecode(t *testing.T) {
	s := jsParse(t, jsTestOrder, jsTestRefs)
	payloads := []string{
		`{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "n", "at": "2024-01-02T03:04:05Z", "day": "2024-01-02",
		  "qty": 1, "ok": true, "tags": ["t"], "addr": {"city": "c"}, "attrs": {"k": 1}, "lines": [{"sku": "s", "n": 2}]}`,
		`{"id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "name": "n", "at": "2024-01-02T03:04:05Z", "day": null,
		  "qty": 1.5, "ok": true, "tags": [], "addr": {"city": "c"}}`,
	}
	want := make([]map[string]any, len(payloads))
	wantErr := make([]string, len(payloads))
	for i, p := range payloads {
		row, err := s.Decode([]byte(p))
		want[i] = row
		if err != nil {
			wantErr[i] = err.Error()
		}
	}
	if want[0] == nil || wantErr[1] == "" {
		t.Fatalf("want the first payload to decode and the second to fail: %v", wantErr)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % len(payloads)
				row, err := s.Decode([]byte(payloads[k]))
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != wantErr[k] || !reflect.DeepEqual(row, want[k]) {
					errs <- fmt.Errorf("goroutine %d, decode %d: got %v, %q", g, i, row, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
