package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/ingest/wire"
	"github.com/sluice-data/sluice/internal/pqio"
)

// The environment a Schema Registry's credentials come from, as
// Confluent's tools name them: never a flag or a pipeline value in clear.
const (
	EnvRegistryUser     = "SCHEMA_REGISTRY_USERNAME"
	EnvRegistryPassword = "SCHEMA_REGISTRY_PASSWORD"
	EnvRegistryToken    = "SCHEMA_REGISTRY_TOKEN"
)

// ErrRegistry is returned, wrapped, when the Schema Registry cannot be
// asked (unreachable, refusing sluice's credentials, answering 5xx): the
// run stops, and no record is quarantined for it — a retry may succeed.
var ErrRegistry = errors.New("schema registry")

// maxReferenceDepth bounds how deep schema references are followed.
const maxReferenceDepth = 16

// registry decodes records in the Confluent wire format against a
// table's schema, fetching each schema id once from the registry.
type registry struct {
	cl    *sr.Client
	url   string
	table pqio.Schema
	// want, when set, is the only format the records may have.
	want wire.Format

	mu      sync.Mutex
	schemas map[regKey]*regSchema
	texts   map[int]sr.Schema // registry schemas by id, fetched once
}

// regKey is a schema id and, for Protobuf, the message indexes.
type regKey struct {
	id      int
	indexes string
}

// regSchema is one schema id's schema, and what its records need to go
// into the table.
type regSchema struct {
	ws wire.Schema
	// reason, when set, is why no record of this schema goes into the
	// table: its records are quarantined with it.
	reason string
	// grow is the table's schema widened to take this schema's records
	// (new nullable columns, wider types), when the table cannot take
	// them as it is.
	grow *pqio.Schema
	// widen converts a value to its table column's type, by table column;
	// nil where none is needed.
	widen []func(any) any
	// fields, for a schema that decodes into a slice (wire.FieldDecoder),
	// is the index in it of each table column's value, -1 for none.
	fields []int
}

// newRegistry makes the client of the registry at url, its credentials
// from the environment.
func newRegistry(url string, table catalog.Schema, want wire.Format) (*registry, error) {
	opts := []sr.ClientOpt{sr.URLs(url), sr.UserAgent("sluice")}
	user, pass, token := os.Getenv(EnvRegistryUser), os.Getenv(EnvRegistryPassword), os.Getenv(EnvRegistryToken)
	switch {
	case token != "" && (user != "" || pass != ""):
		return nil, fmt.Errorf("%w: both %s and %s are set: set one", ErrRegistry, EnvRegistryToken, EnvRegistryUser)
	case token != "":
		opts = append(opts, sr.BearerToken(token))
	case user != "" || pass != "":
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrRegistry, url, err)
	}
	return &registry{cl: cl, url: url, table: table, want: want, schemas: map[regKey]*regSchema{}, texts: map[int]sr.Schema{}}, nil
}

// regRecord is one record as the registry decoder sees it.
type regRecord struct {
	row []any
	// why, when set, quarantines the record.
	why error
	// grow, when set, is the table schema the record needs: the run
	// stops before it and the table is widened.
	grow *pqio.Schema
}

// decode decodes one record's value. An error is the registry's, and
// stops the run; a record that cannot go into the table has why set.
func (r *registry) decode(ctx context.Context, value []byte) (regRecord, error) {
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(value)
	if err != nil {
		return regRecord{why: badRecord("not in the Confluent wire format (no magic byte 0 and schema id)")}, nil
	}
	text, missing, err := r.schemaText(ctx, id)
	if err != nil {
		return regRecord{}, err
	}
	if missing {
		return regRecord{why: badRecord("schema id %d is not in the registry", id)}, nil
	}
	f := wireFormatOf(text.Type)
	if r.want != "" && f != r.want {
		return regRecord{why: badRecord("schema id %d is %s, not %s", id, f, r.want)}, nil
	}
	var indexes []int
	if f == wire.Protobuf {
		if indexes, rest, err = h.DecodeIndex(rest, 64); err != nil {
			return regRecord{why: badRecord("schema id %d: bad Protobuf message indexes", id)}, nil
		}
	}
	s, err := r.schema(ctx, id, indexes, text)
	if err != nil {
		return regRecord{}, err
	}
	if s.reason != "" {
		return regRecord{why: badRecord("%s", s.reason)}, nil
	}
	if s.grow != nil {
		return regRecord{grow: s.grow}, nil
	}
	var (
		vals   map[string]any
		fields []any
	)
	if fd, ok := s.ws.(wire.FieldDecoder); ok && s.fields != nil {
		fields, err = fd.DecodeFields(rest)
	} else {
		vals, err = s.ws.Decode(rest)
	}
	if err != nil {
		return regRecord{why: badRecord("schema id %d: %s", id, strings.TrimPrefix(err.Error(), wire.ErrBadRecord.Error()+": "))}, nil
	}
	row := make([]any, len(r.table.Columns))
	for i, c := range r.table.Columns {
		var v any
		if fields != nil {
			if j := s.fields[i]; j >= 0 {
				v = fields[j]
			}
		} else {
			v = vals[c.Name]
		}
		if v == nil {
			if !c.Nullable {
				return regRecord{why: badRecord("schema id %d: column %q is null, and the table's is not nullable", id, c.Name)}, nil
			}
			continue
		}
		if w := s.widen[i]; w != nil {
			v = w(v)
		}
		row[i] = v
	}
	return regRecord{row: row}, nil
}

// wireFormatOf is the wire format of a registry schema type.
func wireFormatOf(t sr.SchemaType) wire.Format {
	switch t {
	case sr.TypeProtobuf:
		return wire.Protobuf
	case sr.TypeJSON:
		return wire.JSONSchema
	}
	return wire.Avro
}

// schemaText fetches schema id's text, once. An id the registry does not
// have is missing (its records are quarantined); any other failure is an
// error.
func (r *registry) schemaText(ctx context.Context, id int) (s sr.Schema, missing bool, err error) {
	r.mu.Lock()
	s, ok := r.texts[id]
	r.mu.Unlock()
	if ok {
		return s, false, nil
	}
	s, err = r.cl.SchemaByID(ctx, id)
	if notFound(err) {
		return s, true, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("%w %s: schema id %d: %w", ErrRegistry, r.url, id, err)
	}
	r.mu.Lock()
	r.texts[id] = s
	r.mu.Unlock()
	return s, false, nil
}

// notFound reports whether err is the registry's 404 for a schema,
// subject or version.
func notFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// schema parses schema id (with its message indexes), once, and works
// out how its records go into the table.
func (r *registry) schema(ctx context.Context, id int, indexes []int, text sr.Schema) (*regSchema, error) {
	k := regKey{id: id}
	if len(indexes) > 0 { // Protobuf's; nil for the other formats, with no key to build per record
		k.indexes = fmt.Sprint(indexes)
	}
	r.mu.Lock()
	s, ok := r.schemas[k]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	refs, err := r.references(ctx, text.References, 0)
	if err != nil {
		return nil, err
	}
	s = &regSchema{}
	ws, err := wire.Parse(wireFormatOf(text.Type), text.Schema, refs, indexes)
	if err != nil {
		s.reason = fmt.Sprintf("schema id %d: %v", id, err)
	} else {
		s.ws = ws
		r.fit(id, s)
	}
	r.mu.Lock()
	r.schemas[k] = s
	r.mu.Unlock()
	return s, nil
}

// fit works out how a schema's records go into the table: as they are
// (widened per column where the table's type is wider), into a widened
// table (grow), or not at all (reason).
func (r *registry) fit(id int, s *regSchema) {
	rec := pqio.Schema{Columns: s.ws.Columns()}
	if err := pqio.CheckCompatible(r.table, rec, "schema id "+strconv.Itoa(id)); err == nil {
		s.widen = make([]func(any) any, len(r.table.Columns))
		s.fields = make([]int, len(r.table.Columns))
		for i, c := range r.table.Columns {
			s.fields[i] = slices.IndexFunc(rec.Columns, func(rc pqio.Column) bool { return rc.Name == c.Name })
			if j := s.fields[i]; j >= 0 {
				s.widen[i] = pqio.Widen(rec.Columns[j].Type, c.Type)
			}
		}
		return
	}
	// Only additions and widenings grow the table: every column it has
	// that is not nullable must still be there.
	for _, c := range r.table.Columns {
		if _, ok := rec.Column(c.Name); !ok && !c.Nullable {
			s.reason = fmt.Sprintf("schema id %d: it has no column %q, which the table requires (an incompatible change)", id, c.Name)
			return
		}
	}
	grown, err := pqio.MergeSchemas(r.table, rec)
	if err == nil {
		err = pqio.CheckCompatible(grown, r.table, "the table")
	}
	if err != nil {
		s.reason = fmt.Sprintf("schema id %d: an incompatible change: %v", id, err)
		return
	}
	s.grow = &grown
}

// references fetches the schemas refs name (and theirs), for parsing.
func (r *registry) references(ctx context.Context, refs []sr.SchemaReference, depth int) ([]wire.Reference, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if depth > maxReferenceDepth {
		return nil, fmt.Errorf("%w %s: schema references nest deeper than %d", ErrRegistry, r.url, maxReferenceDepth)
	}
	var out []wire.Reference
	for _, ref := range refs {
		ss, err := r.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("%w %s: reference %q (subject %s version %d): %w", ErrRegistry, r.url, ref.Name, ref.Subject, ref.Version, err)
		}
		deeper, err := r.references(ctx, ss.References, depth+1)
		if err != nil {
			return nil, err
		}
		for _, d := range deeper {
			if !slices.ContainsFunc(out, func(o wire.Reference) bool { return o.Name == d.Name }) {
				out = append(out, d)
			}
		}
		out = append(out, wire.Reference{Name: ref.Name, Schema: ss.Schema.Schema})
	}
	return out, nil
}

// checkRegistryURL refuses a registry URL that is not http(s), or that
// holds credentials: they go in the environment, never where a URL is
// printed, logged and kept in pipeline files.
func checkRegistryURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SchemaRegistry %q: want http(s)://host[:port][/path]", cloud.Redact(raw))
	}
	if u.User != nil {
		return fmt.Errorf("SchemaRegistry %q: the registry's credentials go in %s and %s, or %s, never in its URL", cloud.Redact(raw), EnvRegistryUser, EnvRegistryPassword, EnvRegistryToken)
	}
	return nil
}

// SchemaFromRegistry returns the table schema that the latest version
// of subject in the Schema Registry at url maps to (for Protobuf, the
// file's first message): `sluice init --schema-from-registry`.
func SchemaFromRegistry(ctx context.Context, url, subject string) (catalog.Schema, error) {
	if err := checkRegistryURL(url); err != nil {
		return catalog.Schema{}, err
	}
	r, err := newRegistry(url, catalog.Schema{}, "")
	if err != nil {
		return catalog.Schema{}, err
	}
	ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if notFound(err) {
		return catalog.Schema{}, fmt.Errorf("%w %s: no subject %q (or it has no version)", ErrRegistry, url, subject)
	}
	if err != nil {
		return catalog.Schema{}, fmt.Errorf("%w %s: subject %q: %w", ErrRegistry, url, subject, err)
	}
	refs, err := r.references(ctx, ss.References, 0)
	if err != nil {
		return catalog.Schema{}, err
	}
	ws, err := wire.Parse(wireFormatOf(ss.Type), ss.Schema.Schema, refs, nil)
	if err != nil {
		return catalog.Schema{}, fmt.Errorf("subject %q version %d (schema id %d): %w", subject, ss.Version, ss.ID, err)
	}
	s := catalog.Schema{Columns: ws.Columns()}
	if err := s.Validate(); err != nil {
		return catalog.Schema{}, fmt.Errorf("subject %q version %d (schema id %d): %w", subject, ss.Version, ss.ID, err)
	}
	return s, nil
}
