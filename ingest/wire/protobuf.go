package wire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice-data/sluice/internal/pqio"
)

// A Protobuf schema is .proto source text; its references are the files
// it imports, by import path. The well-known types (google/protobuf/*.proto)
// are built in, so a schema may import them without a reference.
//
// Field mapping (protobuf_types.go has the details):
//
//	int32, sint32, sfixed32      int32
//	int64, sint64, sfixed64      int64
//	uint32, fixed32              int64
//	uint64, fixed64              decimal(20,0)
//	float, double                float64 (a float by its shortest decimal: 1.1f is 1.1)
//	bool, string, bytes          bool, string, binary
//	enum                         string: the value's name, or an unknown number as text
//	message                      struct, a field per message field
//	repeated T                   list<T>, elements not nullable; absent is empty
//	map<K,V>                     map<K,V>, values not nullable; entries by key order
//	google.protobuf.Timestamp    timestamp (truncated to microseconds)
//	google.protobuf.Duration     int64 microseconds (truncated toward zero)
//	google.protobuf.*Value       the wrapped scalar (a wrapper, like any message field, is nullable)
//	google.protobuf.Struct       string holding the struct as compact JSON
//
// google.protobuf.Value, ListValue and Any, messages without fields
// (google.protobuf.Empty among them) and recursive messages are
// ErrUnsupported, naming the field.
//
// A field is nullable when it has presence: proto3 `optional`, message
// and oneof fields, proto2 `optional`; absent, it is missing from the
// decoded row. A proto3 scalar without `optional`, a proto2 `required`
// field, and repeated and map fields are not nullable: absent, they hold
// their default (zero, "", the first enum value, an empty list or map),
// as every Protobuf reader sees them. Unknown fields are ignored.

// pbMainFile is the file name the registered schema is compiled as; a
// reference by the same name makes it pbMainFile with a number added.
const pbMainFile = "schema.proto"

// pbSchema is a parsed Protobuf schema: the message the payloads are and
// the plan that converts one to a row. It is immutable after parsing, so
// Decode is safe for concurrent use.
type pbSchema struct {
	md     protoreflect.MessageDescriptor
	cols   []pqio.Column
	fields []pbField
}

// Columns are the message's fields as columns.
func (s *pbSchema) Columns() []pqio.Column { return s.cols }

// Decode unmarshals the payload as the message and converts it to a row.
func (s *pbSchema) Decode(payload []byte) (map[string]any, error) {
	m := dynamicpb.NewMessage(s.md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, m); err != nil {
		return nil, fmt.Errorf("%w: protobuf %s: %s", ErrBadRecord, s.md.FullName(), flattenLines(err.Error()))
	}
	row, err := pbRow(m, s.fields)
	if err != nil {
		return nil, fmt.Errorf("%w: protobuf %s: %s", ErrBadRecord, s.md.FullName(), flattenLines(err.Error()))
	}
	return row, nil
}

// parseProtobuf compiles the .proto text with its imports, picks the
// message the indexes name and plans its mapping to columns.
func parseProtobuf(text string, refs []Reference, indexes []int) (Schema, error) {
	file, err := pbCompile(text, refs)
	if err != nil {
		return nil, err
	}
	md, err := pbMessageAt(file, indexes)
	if err != nil {
		return nil, err
	}
	b := &pbBuilder{}
	fields, cols, err := b.message(md, "")
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: protobuf message %s has no fields", ErrUnsupported, md.FullName())
	}
	if err := (pqio.Schema{Columns: cols}).Validate(); err != nil {
		return nil, fmt.Errorf("%w: protobuf message %s: %v", ErrUnsupported, md.FullName(), err)
	}
	return &pbSchema{md: md, cols: cols, fields: fields}, nil
}

// pbCompile compiles the registered text as a file that may import the
// references (by their names) and the well-known types.
func pbCompile(text string, refs []Reference) (protoreflect.FileDescriptor, error) {
	srcs := make(map[string]string, len(refs)+1)
	for _, r := range refs {
		if _, dup := srcs[r.Name]; dup {
			return nil, fmt.Errorf("protobuf schema: reference %q appears twice", r.Name)
		}
		srcs[r.Name] = r.Schema
	}
	main := pbMainFile
	for i := 1; ; i++ {
		if _, taken := srcs[main]; !taken {
			break
		}
		main = strings.TrimSuffix(pbMainFile, ".proto") + strconv.Itoa(i) + ".proto"
	}
	srcs[main] = text
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs),
		}),
		MaxParallelism: 1,
	}
	files, err := c.Compile(context.Background(), main)
	if err != nil {
		return nil, fmt.Errorf("protobuf schema: %s", flattenLines(err.Error()))
	}
	if len(files) != 1 {
		return nil, errors.New("protobuf schema: the compiler returned no file")
	}
	return files[0], nil
}

// pbMessageAt is the message that Confluent's message indexes name: the
// first an index among the file's top-level messages, each next one among
// the nested messages of the one before. No indexes mean [0].
func pbMessageAt(file protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	msgs := file.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			where := "the file"
			if md != nil {
				where = "message " + string(md.FullName())
			}
			return nil, fmt.Errorf("%w: protobuf message indexes %v: index %d at depth %d, but %s has %d message(s)",
				ErrBadRecord, indexes, i, depth, where, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// pbRow converts a decoded message to a row (or a struct value) by the
// planned fields: a field with presence that is not set is left out.
func pbRow(m protoreflect.Message, fields []pbField) (map[string]any, error) {
	row := make(map[string]any, len(fields))
	for i := range fields {
		f := &fields[i]
		if f.nullable && !m.Has(f.fd) {
			continue
		}
		v, err := f.conv(m.Get(f.fd))
		if err != nil {
			return nil, withFieldPath(f.name, err)
		}
		row[f.name] = v
	}
	return row, nil
}

// fieldPathError is a value's error with the dotted path of the field holding
// it ("a.b", "tags[2]").
type fieldPathError struct {
	path string
	err  error
}

func (e *fieldPathError) Error() string { return "field " + e.path + ": " + e.err.Error() }

func (e *fieldPathError) Unwrap() error { return e.err }

// withFieldPath returns err as the error of the field name, the path of a
// nested field's error prefixed with name.
func withFieldPath(name string, err error) error {
	var fe *fieldPathError
	if errors.As(err, &fe) {
		sep := "."
		if strings.HasPrefix(fe.path, "[") {
			sep = ""
		}
		return &fieldPathError{path: name + sep + fe.path, err: fe.err}
	}
	return &fieldPathError{path: name, err: err}
}

// flattenLines folds a multi-line error text into one line.
func flattenLines(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
