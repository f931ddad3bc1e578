package delta

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// ViewFormat names the format of a view of a Delta table (catalog.View's
// Format): "the source is a Delta table".
const ViewFormat = "Delta"

// View gives the snapshot as a Delta reader reads it, a read-only
// catalog.View of the table at loc (whose folder is st) that rollup and
// publish read as they read a sluice table's version. Its schema is the
// table's, in the log's order, with the partition columns typed as the
// schema says; they are the view's identity partition fields too, and
// each file's values of them are the log's (Add.PartitionValues), not the
// file's, turned from the Delta spec's text into the canonical text of
// their type. Its TableID is "delta:" and the table's metaData id. Each
// live file's footer is read for its rows and statistics. The view owns
// st: closing it closes st; on an error st stays the caller's.
func (s *Snapshot) View(ctx context.Context, loc string, st cloud.Store) (*catalog.View, error) {
	where := fmt.Sprintf("%s at version %d", cloud.Redact(st.URL("")), s.Version)
	schema, spec, err := s.Metadata.viewSchema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	keys := make([]string, len(spec.Fields))
	for i, f := range spec.Fields {
		keys[i] = f.Name
	}
	root := rootPrefix(st)
	files := make([]catalog.DataFile, 0, len(s.Files))
	for _, f := range s.Files {
		vals := make(map[string]*string, len(spec.Fields))
		for i, col := range s.Metadata.PartitionColumns {
			raw, ok := f.Add.PartitionValues[col]
			if !ok {
				return nil, fmt.Errorf("%s: %s: %w: no value for partition column %q", where, f.Path, ErrCorruptLog, col)
			}
			v, err := partitionText(spec.Fields[i].Type, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: partition column %q: %w", where, f.Path, col, err)
			}
			vals[keys[i]] = v
		}
		files = append(files, catalog.DataFile{Path: viewPath(f, root), Partition: catalog.HiveDir(keys, vals),
			PartitionValues: vals, Bytes: f.Add.Size})
	}
	id := "delta:" + s.Metadata.ID
	if s.Metadata.ID == "" {
		id = "delta:location:" + st.URL("")
	}
	m := catalog.Manifest{Format: catalog.FormatVersion, Version: s.Version, TableID: id, Operation: "delta",
		Schema: schema, Spec: spec}
	v, err := catalog.NewView(ctx, loc, st, ViewFormat, m, files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return v, nil
}

// viewSchema is the table's schema as a reader sees it, every column in
// the log's order, and its partition columns as identity partition
// fields named as the schema spells them, of their type. A type sluice
// does not map is refused as DataSchema refuses it.
func (m *Metadata) viewSchema() (pqio.Schema, catalog.PartitionSpec, error) {
	var root schemaObject
	if err := json.Unmarshal([]byte(m.SchemaString), &root); err != nil {
		return pqio.Schema{}, catalog.PartitionSpec{}, fmt.Errorf("%w: schemaString: %v", ErrCorruptLog, err)
	}
	if root.Type != "struct" {
		return pqio.Schema{}, catalog.PartitionSpec{}, fmt.Errorf("%w: schemaString is a %q, not a struct", ErrCorruptLog, root.Type)
	}
	var s pqio.Schema
	for _, f := range root.Fields {
		t, err := f.Type.pqio(f.Name)
		if err != nil {
			return pqio.Schema{}, catalog.PartitionSpec{}, err
		}
		s.Columns = append(s.Columns, pqio.Column{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	var spec catalog.PartitionSpec
	for _, p := range m.PartitionColumns {
		found := false
		for _, c := range s.Columns {
			if strings.EqualFold(c.Name, p) {
				if c.Type.Nested() {
					return pqio.Schema{}, catalog.PartitionSpec{}, fmt.Errorf("%w: partition column %q is of type %s", ErrCorruptLog, p, c.Type)
				}
				spec.Fields = append(spec.Fields, catalog.PartitionField{Name: c.Name, Transform: "identity", Type: c.Type})
				found = true
				break
			}
		}
		if !found {
			return pqio.Schema{}, catalog.PartitionSpec{}, fmt.Errorf("%w: partition column %q is not in the schema", ErrCorruptLog, p)
		}
	}
	return s, spec, nil
}

// timestampLayouts are the Delta spec's partition value forms of a
// timestamp: "1970-01-01 00:00:00[.123456]", read as UTC, and ISO 8601
// adjusted to UTC.
var timestampLayouts = []string{"2006-01-02 15:04:05", time.RFC3339Nano, "2006-01-02T15:04:05"}

// partitionText turns a partition value as the log holds it (the Delta
// spec's Partition Value Serialization) into the canonical text of type
// t (pqio.FormatValue), which catalog's readers parse. A null, or an
// empty string (which Delta's writers log as null), is nil.
func partitionText(t pqio.Type, raw *string) (*string, error) {
	if raw == nil || *raw == "" {
		return nil, nil
	}
	s := *raw
	var v any
	var err error
	switch t.Kind {
	case pqio.KindTimestamp:
		for _, layout := range timestampLayouts {
			var ts time.Time
			if ts, err = time.Parse(layout, s); err == nil {
				v = ts.UTC().Truncate(time.Microsecond)
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: timestamp %q: want 1970-01-01 00:00:00[.ffffff] or ISO 8601", ErrCorruptLog, s)
		}
	case pqio.KindBinary:
		// The spec's binary value is its bytes as a string.
		s = base64.StdEncoding.EncodeToString([]byte(s))
		return &s, nil
	default:
		if v, err = pqio.ParseValue(t, s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptLog, err)
		}
	}
	out := pqio.FormatValue(t, v)
	return &out, nil
}

// viewPath is a live file's path as a catalog.DataFile holds it: relative
// to the table's root (a URL or local path ending in '/') when under it,
// else absolute, a file: URI as a local path.
func viewPath(f File, root string) string {
	p := f.Path
	switch {
	case f.Absolute:
		switch {
		case strings.HasPrefix(p, "file:///"):
			p = p[len("file://"):]
		case strings.HasPrefix(p, "file:/"):
			p = p[len("file:"):]
		}
		if r, ok := strings.CutPrefix(p, root); ok {
			return r
		}
		return p
	case f.outsideRoot(): // relative, climbing out of the folder
		if scheme, rest, ok := strings.Cut(root, "://"); ok {
			return scheme + "://" + path.Clean(rest+p)
		}
		return path.Clean(root + p)
	}
	return p
}
