package wire

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sluice-data/sluice/internal/pqio"
)

// pbConv converts one (non-list, non-map) Protobuf value to its column's
// Go value.
type pbConv func(v protoreflect.Value) (any, error)

// pbField is one message field's plan: its descriptor, column name,
// whether it is nullable (it has presence, so unset is NULL) and how its
// value converts.
type pbField struct {
	fd       protoreflect.FieldDescriptor
	name     string
	nullable bool
	conv     pbConv
}

// pbBuilder plans the mapping of a message to columns. stack holds the
// messages being planned, to refuse a recursive one.
type pbBuilder struct {
	stack []protoreflect.FullName
}

// The timestamp and duration ranges the well-known types allow.
const (
	pbMinTimestampSeconds = -62135596800 // 0001-01-01T00:00:00Z
	pbMaxTimestampSeconds = 253402300799 // 9999-12-31T23:59:59Z
	pbMaxDurationSeconds  = 315576000000 // 10,000 years
)

// pbUint64 is the column type of uint64 and fixed64: every value fits.
var pbUint64 = pqio.Type{Kind: pqio.KindDecimal, Precision: 20, Scale: 0}

// message plans the fields of md; path is the dotted path of the field
// holding it ("" at the top), for errors.
func (b *pbBuilder) message(md protoreflect.MessageDescriptor, path string) ([]pbField, []pqio.Column, error) {
	if slices.Contains(b.stack, md.FullName()) {
		return nil, nil, fmt.Errorf("%w: protobuf field %q: message type %s is recursive", ErrUnsupported, path, md.FullName())
	}
	b.stack = append(b.stack, md.FullName())
	defer func() { b.stack = b.stack[:len(b.stack)-1] }()
	fds := md.Fields()
	fields := make([]pbField, 0, fds.Len())
	cols := make([]pqio.Column, 0, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		name := string(fd.Name())
		fpath := name
		if path != "" {
			fpath = path + "." + name
		}
		f, col, err := b.field(fd, fpath)
		if err != nil {
			return nil, nil, err
		}
		fields = append(fields, f)
		cols = append(cols, col)
	}
	return fields, cols, nil
}

// field plans one field: a map, a list, or a single value.
func (b *pbBuilder) field(fd protoreflect.FieldDescriptor, path string) (pbField, pqio.Column, error) {
	name := string(fd.Name())
	switch {
	case fd.IsMap():
		kt, kc, err := b.value(fd.MapKey(), path+".key")
		if err != nil {
			return pbField{}, pqio.Column{}, err
		}
		vt, vc, err := b.value(fd.MapValue(), path+".value")
		if err != nil {
			return pbField{}, pqio.Column{}, err
		}
		conv := func(v protoreflect.Value) (any, error) { return pbMap(v.Map(), kc, vc) }
		return pbField{fd: fd, name: name, conv: conv}, pqio.Column{Name: name, Type: pqio.MapOf(kt, vt, false)}, nil
	case fd.IsList():
		et, ec, err := b.value(fd, path)
		if err != nil {
			return pbField{}, pqio.Column{}, err
		}
		conv := func(v protoreflect.Value) (any, error) { return pbList(v.List(), ec) }
		return pbField{fd: fd, name: name, conv: conv}, pqio.Column{Name: name, Type: pqio.ListOf(et, false)}, nil
	}
	t, conv, err := b.value(fd, path)
	if err != nil {
		return pbField{}, pqio.Column{}, err
	}
	nullable := fd.HasPresence() && fd.Cardinality() != protoreflect.Required
	return pbField{fd: fd, name: name, nullable: nullable, conv: conv}, pqio.Column{Name: name, Type: t, Nullable: nullable}, nil
}

// value is the column type of one value of fd (an element, for a
// repeated field) and its conversion.
func (b *pbBuilder) value(fd protoreflect.FieldDescriptor, path string) (pqio.Type, pbConv, error) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return b.messageValue(fd.Message(), path)
	}
	t, conv := pbScalar(fd)
	return t, conv, nil
}

// pbScalar is the column type and conversion of a scalar or enum field.
func pbScalar(fd protoreflect.FieldDescriptor) (pqio.Type, pbConv) {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return pqio.Type{Kind: pqio.KindInt32}, func(v protoreflect.Value) (any, error) { return int32(v.Int()), nil }
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return pqio.Type{Kind: pqio.KindInt64}, func(v protoreflect.Value) (any, error) { return v.Int(), nil }
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return pqio.Type{Kind: pqio.KindInt64}, func(v protoreflect.Value) (any, error) { return int64(v.Uint()), nil }
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return pbUint64, func(v protoreflect.Value) (any, error) { return strconv.FormatUint(v.Uint(), 10), nil }
	case protoreflect.FloatKind:
		return pqio.Type{Kind: pqio.KindFloat64}, func(v protoreflect.Value) (any, error) { return pbFloat32(v.Float()), nil }
	case protoreflect.DoubleKind:
		return pqio.Type{Kind: pqio.KindFloat64}, func(v protoreflect.Value) (any, error) { return v.Float(), nil }
	case protoreflect.BoolKind:
		return pqio.Type{Kind: pqio.KindBool}, func(v protoreflect.Value) (any, error) { return v.Bool(), nil }
	case protoreflect.BytesKind:
		return pqio.Type{Kind: pqio.KindBinary}, func(v protoreflect.Value) (any, error) { return v.Bytes(), nil }
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		return pqio.Type{Kind: pqio.KindString}, func(v protoreflect.Value) (any, error) {
			if ev := values.ByNumber(v.Enum()); ev != nil {
				return string(ev.Name()), nil
			}
			return strconv.Itoa(int(v.Enum())), nil
		}
	}
	// StringKind: proto2 strings are not checked for UTF-8 by the decoder.
	return pqio.Type{Kind: pqio.KindString}, func(v protoreflect.Value) (any, error) {
		s := v.String()
		if !utf8.ValidString(s) {
			return nil, errors.New("string is not valid UTF-8")
		}
		return s, nil
	}
}

// pbFloat32 widens a float to float64 by its shortest decimal text, so
// 1.1f reads 1.1 rather than 1.100000023841858.
func pbFloat32(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	w, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
	if err != nil {
		return f
	}
	return w
}

// messageValue is the column type and conversion of a message value: a
// well-known type's own, or a struct of the message's fields.
func (b *pbBuilder) messageValue(md protoreflect.MessageDescriptor, path string) (pqio.Type, pbConv, error) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return pqio.Type{Kind: pqio.KindTimestamp}, pbTimestamp, nil
	case "google.protobuf.Duration":
		return pqio.Type{Kind: pqio.KindInt64}, pbDuration, nil
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		inner := md.Fields().ByName("value")
		t, conv := pbScalar(inner)
		return t, func(v protoreflect.Value) (any, error) { return conv(v.Message().Get(inner)) }, nil
	case "google.protobuf.Struct":
		return pqio.Type{Kind: pqio.KindString}, pbStructJSON, nil
	case "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.Any":
		return pqio.Type{}, nil, fmt.Errorf("%w: protobuf field %q: type %s has no column type", ErrUnsupported, path, md.FullName())
	}
	if md.Fields().Len() == 0 {
		return pqio.Type{}, nil, fmt.Errorf("%w: protobuf field %q: message type %s has no fields (a struct column needs one)", ErrUnsupported, path, md.FullName())
	}
	fields, cols, err := b.message(md, path)
	if err != nil {
		return pqio.Type{}, nil, err
	}
	conv := func(v protoreflect.Value) (any, error) { return pbRow(v.Message(), fields) }
	return pqio.StructOf(cols...), conv, nil
}

// pbTimestamp converts a google.protobuf.Timestamp to a UTC time,
// truncated to microseconds.
func pbTimestamp(v protoreflect.Value) (any, error) {
	sec, nanos := pbSecondsNanos(v.Message())
	if sec < pbMinTimestampSeconds || sec > pbMaxTimestampSeconds || nanos < 0 || nanos > 999_999_999 {
		return nil, fmt.Errorf("timestamp seconds=%d nanos=%d is out of range", sec, nanos)
	}
	return time.Unix(sec, nanos).UTC().Truncate(time.Microsecond), nil
}

// pbDuration converts a google.protobuf.Duration to microseconds,
// truncated toward zero.
func pbDuration(v protoreflect.Value) (any, error) {
	sec, nanos := pbSecondsNanos(v.Message())
	if sec < -pbMaxDurationSeconds || sec > pbMaxDurationSeconds || nanos <= -1e9 || nanos >= 1e9 ||
		(sec > 0 && nanos < 0) || (sec < 0 && nanos > 0) {
		return nil, fmt.Errorf("duration seconds=%d nanos=%d is out of range", sec, nanos)
	}
	return sec*1_000_000 + nanos/1000, nil
}

// pbSecondsNanos reads the seconds and nanos of a Timestamp or Duration.
func pbSecondsNanos(m protoreflect.Message) (int64, int64) {
	fds := m.Descriptor().Fields()
	return m.Get(fds.ByName("seconds")).Int(), m.Get(fds.ByName("nanos")).Int()
}

// pbStructJSON renders a google.protobuf.Struct as compact JSON (protojson
// varies its whitespace on purpose; compacting makes it stable).
func pbStructJSON(v protoreflect.Value) (any, error) {
	b, err := protojson.Marshal(v.Message().Interface())
	if err != nil {
		return nil, fmt.Errorf("struct to JSON: %w", err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, fmt.Errorf("struct to JSON: %w", err)
	}
	return out.String(), nil
}

// pbList converts a repeated field's elements.
func pbList(l protoreflect.List, conv pbConv) (any, error) {
	out := make([]any, l.Len())
	for i := range l.Len() {
		v, err := conv(l.Get(i))
		if err != nil {
			return nil, withFieldPath("["+strconv.Itoa(i)+"]", err)
		}
		out[i] = v
	}
	return out, nil
}

// pbMap converts a map field's entries, in key order (a Protobuf map has
// none of its own, so the order is made stable).
func pbMap(m protoreflect.Map, kc, vc pbConv) (any, error) {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, pbCompareKeys)
	out := make([]pqio.MapEntry, len(keys))
	for i, k := range keys {
		key, err := kc(k.Value())
		if err != nil {
			return nil, withFieldPath("key", err)
		}
		val, err := vc(m.Get(k))
		if err != nil {
			return nil, withFieldPath("["+k.String()+"]", err)
		}
		out[i] = pqio.MapEntry{Key: key, Value: val}
	}
	return out, nil
}

// pbCompareKeys orders map keys, all of one kind: by value for numbers
// and strings, false before true.
func pbCompareKeys(a, b protoreflect.MapKey) int {
	switch x := a.Interface().(type) {
	case string:
		return cmp.Compare(x, b.String())
	case int32, int64:
		return cmp.Compare(a.Int(), b.Int())
	case uint32, uint64:
		return cmp.Compare(a.Uint(), b.Uint())
	case bool:
		y := b.Bool()
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	return 0
}
