package wire

import (
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/internal/pqio"
)

// Format is a registered schema's kind, as `--format` names it.
type Format string

// The formats a Schema Registry holds.
const (
	Avro       Format = "avro"
	Protobuf   Format = "protobuf"
	JSONSchema Format = "json-sr"
)

// ErrUnsupported is returned, wrapped, by Parse for a schema that maps to
// no sluice table: a type sluice has no column for, a recursive type. The
// error names the field.
var ErrUnsupported = errors.New("schema not supported")

// ErrBadRecord is returned, wrapped, by Decode for a payload that does
// not decode with its schema, or holds a value its column cannot: the
// record goes to quarantine with the error's text as its reason.
var ErrBadRecord = errors.New("bad record")

// Reference is one schema a registered schema refers to (an Avro named
// type defined elsewhere, a Protobuf import): the name it is referred to
// by and its schema text.
type Reference struct {
	Name   string
	Schema string
}

// Schema is one registered schema, parsed.
type Schema interface {
	// Columns are the top-level columns of the table the schema maps to,
	// in the schema's field order, with their types and nullability: a
	// field that may be absent or null is nullable.
	Columns() []pqio.Column
	// Decode decodes one payload (the bytes after the wire header: the
	// magic byte, the schema id and, for Protobuf, the message indexes)
	// into the values of Columns, by column name, in internal/pqio's Go
	// representation; a null or absent field is nil or missing. A payload
	// that does not decode is an error wrapping ErrBadRecord whose text
	// says why in one line. Decode is safe for concurrent use.
	Decode(payload []byte) (map[string]any, error)
}

// Parse parses a registered schema's text, with the schemas it refers to.
// For Protobuf, indexes are the message indexes of the wire header (which
// message of the file the payloads are; [0] or empty for the first).
func Parse(f Format, text string, refs []Reference, indexes []int) (Schema, error) {
	switch f {
	case Avro:
		return parseAvro(text, refs)
	case Protobuf:
		return parseProtobuf(text, refs, indexes)
	case JSONSchema:
		return parseJSONSchema(text, refs)
	}
	return nil, fmt.Errorf("%w: format %q (want avro, protobuf or json-sr)", ErrUnsupported, f)
}

// FieldDecoder is a Schema that also decodes a payload into its
// top-level values as a slice, in the order of Columns: no map per
// record. The Avro schemas are one.
type FieldDecoder interface {
	Schema
	// DecodeFields is Decode's values in Columns' order (nil for null).
	DecodeFields(payload []byte) ([]any, error)
}
