package wire

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sluice-data/sluice/internal/pqio"
)

// A JSON Schema payload is a JSON document, validated against the
// registered schema (draft-07 unless its $schema names another draft, as
// Confluent's registry does; format assertions on). The schema's
// top-level object's properties are the columns, in the schema's order:
//
//	type: string                 string
//	  format: date-time          timestamp (RFC 3339, to UTC, truncated to microseconds)
//	  format: date               date (YYYY-MM-DD)
//	  format: uuid               uuid (stored lower-case, 8-4-4-4-12)
//	type: integer                int64 (1.0 and 1e2 are integers; 1.5 or past int64 is a bad record)
//	type: number                 float64
//	type: boolean                bool
//	type: object, properties     struct, a field per property
//	type: object, only additionalProperties: {schema}
//	                             map<string,V>, entries in key order
//	type: array, items: {schema} list<V>
//	enum of strings, no type     string
//
// A property not in `required` is nullable, and so is one whose schema
// admits null: `type: ["null", X]`, or anyOf/oneOf of {type: null} and
// one other schema. An allOf of one schema is that schema. When a schema
// has a type or properties of its own, its anyOf/oneOf/allOf only
// constrain (they are validated, not mapped). $ref to a JSON pointer in
// the document (#/definitions/..., #/$defs/...) or in a reference, by its
// name relative to the schema, is followed. Anything else — several
// non-null types, `not`, a tuple, an object without properties, a schema
// admitting any value, a recursive $ref, an anchor — is ErrUnsupported
// naming the property.
//
// Decoding keeps integers exact (numbers are read as text); properties
// the schema does not name are ignored (they pass validation unless the
// schema forbids them), and a nullable property null or absent is left
// out of the row.

// jsMainURL is the URL the registered schema is compiled at: references
// resolve against it by name, and it is never fetched. A schema with an
// $id resolves references against that instead (both are registered).
const jsMainURL = "https://registry.sluice.invalid/"

// jsSchema is a parsed JSON Schema: the compiled validator and the
// conversion of a document to a row. Both are read-only after parsing;
// the validator keeps its per-call state in a value of its own (see
// jsonschema's validator.go), so Decode is safe for concurrent use.
type jsSchema struct {
	validator *jsonschema.Schema
	cols      []pqio.Column
	conv      jsConv
}

// Columns are the top-level object's properties as columns.
func (s *jsSchema) Columns() []pqio.Column { return s.cols }

// Decode parses the payload, validates it and converts it to a row.
func (s *jsSchema) Decode(payload []byte) (map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: json: %s", ErrBadRecord, flattenLines(err.Error()))
	}
	if err := s.validator.Validate(doc); err != nil {
		return nil, fmt.Errorf("%w: json schema: %s", ErrBadRecord, jsFirstError(err))
	}
	if doc == nil {
		return nil, fmt.Errorf("%w: json: the document is null", ErrBadRecord)
	}
	row, err := s.conv(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: json: %s", ErrBadRecord, flattenLines(err.Error()))
	}
	return row.(map[string]any), nil
}

// jsFirstError is the validator's first error (the deepest first cause)
// in one line: "at '/age': got number, want integer".
func jsFirstError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return flattenLines(err.Error())
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return flattenLines(ve.Error())
}

// parseJSONSchema parses the schema and its references, compiles the
// validator (an invalid schema fails here) and maps the top-level object
// to columns.
func parseJSONSchema(text string, refs []Reference) (Schema, error) {
	w, main, err := jsLoad(text, refs)
	if err != nil {
		return nil, err
	}
	validator, err := jsCompile(w)
	if err != nil {
		return nil, err
	}
	t, _, conv, err := w.walk(main.root, main, "")
	if err != nil {
		return nil, err
	}
	if t.Kind != pqio.KindStruct {
		return nil, fmt.Errorf("%w: json schema: the top level is %s, not an object with properties", ErrUnsupported, t)
	}
	if err := (pqio.Schema{Columns: t.Fields}).Validate(); err != nil {
		return nil, fmt.Errorf("%w: json schema: %v", ErrUnsupported, err)
	}
	return &jsSchema{validator: validator, cols: t.Fields, conv: conv}, nil
}

// jsDoc is one schema document: its tree (objects as *jsObject), the URLs
// it is registered at, and the base its references resolve against.
type jsDoc struct {
	root any
	urls []string
	base *url.URL
}

// jsLoad parses the main schema and the references into documents,
// registered by URL in a walker.
func jsLoad(text string, refs []Reference) (*jsWalker, *jsDoc, error) {
	mainURL, _ := url.Parse(jsMainURL)
	w := &jsWalker{docs: map[string]*jsDoc{}}
	main, err := w.add("the schema", text, mainURL, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range refs {
		ref, err := url.Parse(r.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("json schema: reference %q: %v", r.Name, err)
		}
		at := mainURL.ResolveReference(ref)
		var also *url.URL
		if main.base.String() != mainURL.String() {
			also = main.base.ResolveReference(ref)
		}
		if _, err := w.add(fmt.Sprintf("reference %q", r.Name), r.Schema, at, also); err != nil {
			return nil, nil, err
		}
	}
	return w, main, nil
}

// add parses a document and registers it at at, at also (when not nil)
// and at its $id; its base is its $id, or at.
func (w *jsWalker) add(what, text string, at, also *url.URL) (*jsDoc, error) {
	root, err := jsParseOrdered(text)
	if err != nil {
		return nil, fmt.Errorf("json schema: %s: %s", what, flattenLines(err.Error()))
	}
	doc := &jsDoc{root: root, base: jsStripFragment(at)}
	if obj, ok := root.(*jsObject); ok {
		if id, ok := obj.vals["$id"].(string); ok && id != "" {
			u, err := url.Parse(id)
			if err != nil {
				return nil, fmt.Errorf("json schema: %s: $id %q: %v", what, id, err)
			}
			doc.base = jsStripFragment(at.ResolveReference(u))
		}
	}
	for _, u := range []*url.URL{at, also, doc.base} {
		if u == nil {
			continue
		}
		key := jsStripFragment(u).String()
		if slices.Contains(doc.urls, key) {
			continue
		}
		if _, dup := w.docs[key]; dup {
			return nil, fmt.Errorf("json schema: %s: a second schema at %s", what, key)
		}
		w.docs[key] = doc
		doc.urls = append(doc.urls, key)
	}
	return doc, nil
}

// jsStripFragment is u without its fragment.
func jsStripFragment(u *url.URL) *url.URL {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	return &c
}

// jsCompile compiles the validator from the walker's documents. Nothing
// is loaded from outside: a reference the documents do not hold fails.
func jsCompile(w *jsWalker) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.AssertFormat()
	c.UseLoader(jsNoLoader{})
	seen := map[*jsDoc]bool{}
	for _, doc := range w.docs {
		if seen[doc] {
			continue
		}
		seen[doc] = true
		plain := jsPlain(doc.root)
		for _, u := range doc.urls {
			if err := c.AddResource(u, plain); err != nil {
				return nil, fmt.Errorf("json schema: %s: %s", u, flattenLines(err.Error()))
			}
		}
	}
	sch, err := c.Compile(jsMainURL)
	if err != nil {
		return nil, fmt.Errorf("json schema: %s", flattenLines(err.Error()))
	}
	return sch, nil
}

// jsNoLoader refuses to load schemas: all there are come with the
// registered schema.
type jsNoLoader struct{}

func (jsNoLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema %s is not among the references", u)
}

// jsObject is a JSON object of a schema document, its keys in document
// order (columns follow the order of properties).
type jsObject struct {
	keys []string
	vals map[string]any
}

// unsupported is ErrUnsupported for the property at path.
func (w *jsWalker) unsupported(path, format string, args ...any) error {
	if path == "" {
		path = "(top level)"
	}
	return fmt.Errorf("%w: json schema property %q: %s", ErrUnsupported, path, fmt.Sprintf(format, args...))
}

// walk maps the schema node of document doc, at property path, to a
// column type, whether it admits null, and its conversion.
func (w *jsWalker) walk(node any, doc *jsDoc, path string) (pqio.Type, bool, jsConv, error) {
	obj, ok := node.(*jsObject)
	if !ok {
		return pqio.Type{}, false, nil, w.unsupported(path, "schema %v is not an object with a type", node)
	}
	if ref, ok := obj.vals["$ref"].(string); ok {
		return w.ref(ref, doc, path)
	}
	if _, ok := obj.vals["not"]; ok {
		return pqio.Type{}, false, nil, w.unsupported(path, `a "not" schema has no column type`)
	}
	_, typed := obj.vals["type"]
	_, props := obj.vals["properties"]
	if !typed && !props {
		for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
			if branches, ok := obj.vals[kw]; ok {
				return w.union(kw, branches, doc, path)
			}
		}
	}
	kind, nullable, err := jsType(obj)
	if err != nil {
		return pqio.Type{}, false, nil, w.unsupported(path, "%v", err)
	}
	var t pqio.Type
	var conv jsConv
	switch kind {
	case "string":
		t, conv = jsStringType(obj)
	case "integer":
		t, conv = pqio.Type{Kind: pqio.KindInt64}, jsInt64
	case "number":
		t, conv = pqio.Type{Kind: pqio.KindFloat64}, jsFloat64
	case "boolean":
		t, conv = pqio.Type{Kind: pqio.KindBool}, jsBool
	case "object":
		t, conv, err = w.object(obj, doc, path)
	case "array":
		t, conv, err = w.array(obj, doc, path)
	default:
		err = w.unsupported(path, "type %q has no column type", kind)
	}
	return t, nullable, conv, err
}

// ref follows a $ref.
func (w *jsWalker) ref(ref string, doc *jsDoc, path string) (pqio.Type, bool, jsConv, error) {
	target, tdoc, key, err := w.resolve(ref, doc)
	if err != nil {
		return pqio.Type{}, false, nil, w.unsupported(path, "$ref %q: %v", ref, err)
	}
	if slices.Contains(w.stack, key) {
		return pqio.Type{}, false, nil, w.unsupported(path, "$ref %q is recursive", ref)
	}
	w.stack = append(w.stack, key)
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	return w.walk(target, tdoc, path)
}

// resolve finds the node a $ref names: a document by URL (relative to
// doc's base), then a JSON pointer in it. key identifies the node.
func (w *jsWalker) resolve(ref string, doc *jsDoc) (node any, tdoc *jsDoc, key string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, nil, "", err
	}
	abs := doc.base.ResolveReference(u)
	frag := abs.Fragment
	docURL := jsStripFragment(abs).String()
	tdoc = w.docs[docURL]
	if tdoc == nil {
		return nil, nil, "", fmt.Errorf("no schema %s among the references", docURL)
	}
	node = tdoc.root
	if frag != "" {
		if !strings.HasPrefix(frag, "/") {
			return nil, nil, "", errors.New("anchors are not supported (want a JSON pointer such as #/$defs/name)")
		}
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			if node, err = jsStep(node, tok); err != nil {
				return nil, nil, "", fmt.Errorf("%s#%s: %v", docURL, frag, err)
			}
		}
	}
	return node, tdoc, tdoc.urls[0] + "#" + frag, nil
}

// jsStep is the member tok of an object, or the element tok of an array.
func jsStep(node any, tok string) (any, error) {
	switch x := node.(type) {
	case *jsObject:
		if v, ok := x.vals[tok]; ok {
			return v, nil
		}
	case []any:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
			return x[i], nil
		}
	}
	return nil, fmt.Errorf("no %q there", tok)
}

// union maps an anyOf/oneOf of null and one other schema (that schema,
// nullable), or an allOf of one schema.
func (w *jsWalker) union(kw string, branches any, doc *jsDoc, path string) (pqio.Type, bool, jsConv, error) {
	list, _ := branches.([]any)
	var others []any
	for _, b := range list {
		if obj, ok := b.(*jsObject); !ok || kw == "allOf" || !jsNullOnly(obj) {
			others = append(others, b)
		}
	}
	if len(others) != 1 {
		return pqio.Type{}, false, nil, w.unsupported(path, "%s of %d schemas other than null (want one)", kw, len(others))
	}
	t, nullable, conv, err := w.walk(others[0], doc, path)
	return t, nullable || len(others) < len(list), conv, err
}

// jsNullOnly tells whether a schema is {type: null}.
func jsNullOnly(obj *jsObject) bool {
	switch t := obj.vals["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return len(t) == 1 && t[0] == "null"
	}
	return false
}

// jsType is a schema's one non-null type and whether it admits null. A
// schema without "type" is an object when it has properties, an array
// when it has items, a string when it is an enum of strings.
func jsType(obj *jsObject) (string, bool, error) {
	var names []any
	switch t := obj.vals["type"].(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	case nil:
		switch {
		case obj.vals["properties"] != nil || obj.vals["additionalProperties"] != nil:
			names = []any{"object"}
		case obj.vals["items"] != nil:
			names = []any{"array"}
		default:
			enum, _ := obj.vals["enum"].([]any)
			for _, e := range enum {
				if _, ok := e.(string); !ok && e != nil {
					return "", false, errors.New("an enum of values other than strings, and no type")
				}
				if e == nil {
					names = append(names, "null")
				} else if !slices.Contains(names, any("string")) {
					names = append(names, "string")
				}
			}
		}
	default:
		return "", false, fmt.Errorf("type %v is neither a name nor a list of names", t)
	}
	var kinds []string
	nullable := false
	for _, n := range names {
		s, ok := n.(string)
		switch {
		case !ok:
			return "", false, fmt.Errorf("type %v is not a name", n)
		case s == "null":
			nullable = true
		case !slices.Contains(kinds, s):
			kinds = append(kinds, s)
		}
	}
	switch len(kinds) {
	case 0:
		if nullable {
			return "", false, errors.New("a schema admitting only null has no column type")
		}
		return "", false, errors.New("no type (a schema admitting any value has no column type)")
	case 1:
		return kinds[0], nullable, nil
	}
	return "", false, fmt.Errorf("several types %v (want one, and maybe null)", kinds)
}

// jsStringType is the column type of a string by its format.
func jsStringType(obj *jsObject) (pqio.Type, jsConv) {
	switch obj.vals["format"] {
	case "date-time":
		return pqio.Type{Kind: pqio.KindTimestamp}, jsTimestamp
	case "date":
		return pqio.Type{Kind: pqio.KindDate}, jsDate
	case "uuid":
		return pqio.Type{Kind: pqio.KindUUID}, jsUUID
	}
	return pqio.Type{Kind: pqio.KindString}, jsString
}

// object maps an object schema: a struct of its properties, or a map of
// its additionalProperties schema when it has none.
func (w *jsWalker) object(obj *jsObject, doc *jsDoc, path string) (pqio.Type, jsConv, error) {
	props, _ := obj.vals["properties"].(*jsObject)
	if props == nil || len(props.keys) == 0 {
		ap, ok := obj.vals["additionalProperties"].(*jsObject)
		if !ok {
			return pqio.Type{}, nil, w.unsupported(path, "an object with neither properties nor an additionalProperties schema")
		}
		vt, vnull, vconv, err := w.walk(ap, doc, jsJoin(path, "value"))
		if err != nil {
			return pqio.Type{}, nil, err
		}
		return pqio.MapOf(pqio.Type{Kind: pqio.KindString}, vt, vnull), jsMap(vnull, vconv), nil
	}
	required := map[string]bool{}
	reqs, _ := obj.vals["required"].([]any)
	for _, r := range reqs {
		if s, ok := r.(string); ok {
			required[s] = true
		}
	}
	cols := make([]pqio.Column, 0, len(props.keys))
	fields := make([]jsField, 0, len(props.keys))
	for _, name := range props.keys {
		t, nullable, conv, err := w.walk(props.vals[name], doc, jsJoin(path, name))
		if err != nil {
			return pqio.Type{}, nil, err
		}
		nullable = nullable || !required[name]
		cols = append(cols, pqio.Column{Name: name, Type: t, Nullable: nullable})
		fields = append(fields, jsField{name: name, nullable: nullable, conv: conv})
	}
	return pqio.StructOf(cols...), jsStruct(fields), nil
}

// array maps an array schema with one items schema to a list.
func (w *jsWalker) array(obj *jsObject, doc *jsDoc, path string) (pqio.Type, jsConv, error) {
	if _, ok := obj.vals["prefixItems"]; ok {
		return pqio.Type{}, nil, w.unsupported(path, "a tuple (prefixItems) has no column type")
	}
	items, ok := obj.vals["items"].(*jsObject)
	if !ok {
		return pqio.Type{}, nil, w.unsupported(path, "an array without one items schema (a tuple, or any items) has no column type")
	}
	et, enull, econv, err := w.walk(items, doc, jsJoin(path, "element"))
	if err != nil {
		return pqio.Type{}, nil, err
	}
	return pqio.ListOf(et, enull), jsList(enull, econv), nil
}

// jsJoin is the path of the property name inside path.
func jsJoin(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
