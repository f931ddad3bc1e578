package wire

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice-data/sluice/internal/pqio"
)

const pbTestMoney = `syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; }
`

const pbTestOrder = `syntax = "proto3";
package shop.v1;

import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "common/money.proto";

message Order {
  enum Status { STATUS_UNSPECIFIED = 0; PAID = 1; SHIPPED = 2; }
  message Line {
    string sku = 1;
    int32 qty = 2;
    common.Money price = 3;
  }
  string id = 1;
  int32 i32 = 2;
  sint32 s32 = 3;
  sfixed32 sf32 = 4;
  int64 i64 = 5;
  sint64 s64 = 6;
  sfixed64 sf64 = 7;
  uint32 u32 = 8;
  uint64 u64 = 9;
  fixed32 f32 = 10;
  fixed64 f64 = 11;
  float fl = 12;
  double db = 13;
  bool ok = 14;
  bytes raw = 15;
  Status status = 16;
  optional string note = 17;
  repeated string tags = 18;
  repeated Line lines = 19;
  map<string, int64> counts = 20;
  map<int32, Line> by_no = 21;
  google.protobuf.Timestamp created = 22;
  google.protobuf.Duration ttl = 23;
  google.protobuf.StringValue nick = 24;
  google.protobuf.Int64Value big = 25;
  google.protobuf.UInt64Value ubig = 26;
  google.protobuf.Struct attrs = 27;
  oneof payment {
    string card = 28;
    int64 voucher = 29;
  }
  repeated google.protobuf.Timestamp times = 30;
  Line main = 31;
}

message Other {
  string x = 1;
  message Inner {
    int64 y = 1;
    optional bool z = 2;
  }
}
`

// pbTestRefs are the references of pbTestOrder.
var pbTestRefs = []Reference{{Name: "common/money.proto", Schema: pbTestMoney}}

// pbEncode compiles the schema on its own and encodes the protojson text
// as the message full name: an encoder independent of the decoder.
func pbEncode(t testing.TB, text string, refs []Reference, full, js string) []byte {
	t.Helper()
	srcs := map[string]string{"test.proto": text}
	for _, r := range refs {
		srcs[r.Name] = r.Schema
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(srcs),
	})}
	files, err := c.Compile(context.Background(), "test.proto")
	if err != nil {
		t.Fatal(err)
	}
	d := files.FindFileByPath("test.proto").(interface {
		FindDescriptorByName(protoreflect.FullName) protoreflect.Descriptor
	}).FindDescriptorByName(protoreflect.FullName(full))
	m := dynamicpb.NewMessage(d.(protoreflect.MessageDescriptor))
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pbParse(t testing.TB, text string, refs []Reference, indexes ...int) Schema {
	t.Helper()
	s, err := Parse(Protobuf, text, refs, indexes)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pbCol(name string, k pqio.Kind, nullable bool) pqio.Column {
	return pqio.Column{Name: name, Type: pqio.Type{Kind: k}, Nullable: nullable}
}

// checkColumns compares columns by their schema text, then exactly.
func checkColumns(t *testing.T, got, want []pqio.Column) {
	t.Helper()
	if g, w := (pqio.Schema{Columns: got}).String(), (pqio.Schema{Columns: want}).String(); g != w {
		t.Fatalf("columns\n got %s\nwant %s", g, w)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("columns\n got %#v\nwant %#v", got, want)
	}
}

// checkRow compares a decoded row with the expected one, field by field.
func checkRow(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %#v (present %v), want %#v", k, g, ok, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: got %#v, want it absent", k, g)
		}
	}
}

func TestProtobufColumns(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	money := pqio.StructOf(pbCol("currency", pqio.KindString, false), pbCol("units", pqio.KindInt64, false))
	line := pqio.StructOf(pbCol("sku", pqio.KindString, false), pbCol("qty", pqio.KindInt32, false),
		pqio.Column{Name: "price", Type: money, Nullable: true})
	u64 := pqio.Type{Kind: pqio.KindDecimal, Precision: 20}
	want := []pqio.Column{
		pbCol("id", pqio.KindString, false),
		pbCol("i32", pqio.KindInt32, false), pbCol("s32", pqio.KindInt32, false), pbCol("sf32", pqio.KindInt32, false),
		pbCol("i64", pqio.KindInt64, false), pbCol("s64", pqio.KindInt64, false), pbCol("sf64", pqio.KindInt64, false),
		pbCol("u32", pqio.KindInt64, false), {Name: "u64", Type: u64},
		pbCol("f32", pqio.KindInt64, false), {Name: "f64", Type: u64},
		pbCol("fl", pqio.KindFloat64, false), pbCol("db", pqio.KindFloat64, false),
		pbCol("ok", pqio.KindBool, false), pbCol("raw", pqio.KindBinary, false),
		pbCol("status", pqio.KindString, false), pbCol("note", pqio.KindString, true),
		{Name: "tags", Type: pqio.ListOf(pqio.Type{Kind: pqio.KindString}, false)},
		{Name: "lines", Type: pqio.ListOf(line, false)},
		{Name: "counts", Type: pqio.MapOf(pqio.Type{Kind: pqio.KindString}, pqio.Type{Kind: pqio.KindInt64}, false)},
		{Name: "by_no", Type: pqio.MapOf(pqio.Type{Kind: pqio.KindInt32}, line, false)},
		pbCol("created", pqio.KindTimestamp, true), pbCol("ttl", pqio.KindInt64, true),
		pbCol("nick", pqio.KindString, true), pbCol("big", pqio.KindInt64, true), {Name: "ubig", Type: u64, Nullable: true},
		pbCol("attrs", pqio.KindString, true),
		pbCol("card", pqio.KindString, true), pbCol("voucher", pqio.KindInt64, true),
		{Name: "times", Type: pqio.ListOf(pqio.Type{Kind: pqio.KindTimestamp}, false)},
		{Name: "main", Type: line, Nullable: true},
	}
	checkColumns(t, s.Columns(), want)
}

// pbTestFull sets every field of an Order (voucher is card's oneof
// sibling, so it stays unset).
const pbTestFull = `{
  "id": "o-1", "i32": -5, "s32": -6, "sf32": -7, "i64": "-9007199254740993", "s64": "-2", "sf64": "-3",
  "u32": 4294967295, "u64": "18446744073709551615", "f32": 7, "f64": "8",
  "fl": 1.1, "db": 2.5, "ok": true, "raw": "AAEC", "status": "SHIPPED", "note": "",
  "tags": ["a", "b"],
  "lines": [{"sku": "x", "qty": 2, "price": {"currency": "EUR", "units": "3"}}, {}],
  "counts": {"b": "2", "a": "1"},
  "by_no": {"10": {"sku": "ten"}, "-1": {"qty": 1}},
  "created": "2024-02-29T23:59:59.123456789Z", "ttl": "-1.5s",
  "nick": "", "big": "42", "ubig": "18446744073709551615",
  "attrs": {"k": [1, "two", null], "a": {"b": true}},
  "card": "visa",
  "times": ["1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z"],
  "main": {"sku": "m"}
}`

func TestProtobufDecode(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	row, err := s.Decode(pbEncode(t, pbTestOrder, pbTestRefs, "shop.v1.Order", pbTestFull))
	if err != nil {
		t.Fatal(err)
	}
	line := func(sku string, qty int32) map[string]any { return map[string]any{"sku": sku, "qty": qty} }
	first := line("x", 2)
	first["price"] = map[string]any{"currency": "EUR", "units": int64(3)}
	checkRow(t, row, map[string]any{
		"id": "o-1", "i32": int32(-5), "s32": int32(-6), "sf32": int32(-7),
		"i64": int64(-9007199254740993), "s64": int64(-2), "sf64": int64(-3),
		"u32": int64(4294967295), "u64": "18446744073709551615", "f32": int64(7), "f64": "8",
		"fl": 1.1, "db": 2.5, "ok": true, "raw": []byte{0, 1, 2}, "status": "SHIPPED", "note": "",
		"tags":    []any{"a", "b"},
		"lines":   []any{first, line("", 0)},
		"counts":  []pqio.MapEntry{{Key: "a", Value: int64(1)}, {Key: "b", Value: int64(2)}},
		"by_no":   []pqio.MapEntry{{Key: int32(-1), Value: line("", 1)}, {Key: int32(10), Value: line("ten", 0)}},
		"created": time.Date(2024, 2, 29, 23, 59, 59, 123456000, time.UTC),
		"ttl":     int64(-1_500_000),
		"nick":    "", "big": int64(42), "ubig": "18446744073709551615",
		"attrs": `{"a":{"b":true},"k":[1,"two",null]}`,
		"card":  "visa",
		"times": []any{time.Unix(0, 0).UTC(), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"main":  line("m", 0),
	})
}

// TestProtobufDecodeDefaults decodes an empty payload: proto3 scalars
// without presence read as their defaults, lists and maps as empty, the
// rest is absent.
func TestProtobufDecodeDefaults(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	row, err := s.Decode(nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{
		"id": "", "i32": int32(0), "s32": int32(0), "sf32": int32(0),
		"i64": int64(0), "s64": int64(0), "sf64": int64(0),
		"u32": int64(0), "u64": "0", "f32": int64(0), "f64": "0",
		"fl": 0.0, "db": 0.0, "ok": false, "raw": []byte(nil), "status": "STATUS_UNSPECIFIED",
		"tags": []any{}, "lines": []any{}, "counts": []pqio.MapEntry{}, "by_no": []pqio.MapEntry{},
		"times": []any{},
	})
}

// TestProtobufDecodeValues covers values the full payload does not: the
// other oneof member, an unknown enum number, a wrapper's absence.
func TestProtobufDecodeValues(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	row, err := s.Decode(pbEncode(t, pbTestOrder, pbTestRefs, "shop.v1.Order", `{"status": 7, "voucher": "12", "note": "n", "attrs": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"status": "7", "voucher": int64(12), "note": "n", "attrs": "{}"} {
		if !reflect.DeepEqual(row[k], want) {
			t.Errorf("%s: got %#v, want %#v", k, row[k], want)
		}
	}
	for _, k := range []string{"card", "nick", "big", "created", "main"} {
		if v, ok := row[k]; ok {
			t.Errorf("%s: got %#v, want it absent", k, v)
		}
	}
}

func TestProtobufMessageIndexes(t *testing.T) {
	for _, tc := range []struct {
		indexes []int
		want    string
	}{
		{nil, "id:string"},
		{[]int{0}, "id:string"},
		{[]int{0, 0}, "sku:string,qty:int32,price:struct<currency:string,units:int64>?"},
		{[]int{1}, "x:string"},
		{[]int{1, 0}, "y:int64,z:bool?"},
	} {
		s := pbParse(t, pbTestOrder, pbTestRefs, tc.indexes...)
		if got := (pqio.Schema{Columns: s.Columns()}).String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("indexes %v: columns %s, want %s...", tc.indexes, got, tc.want)
		}
	}
	s := pbParse(t, pbTestOrder, pbTestRefs, 1, 0)
	row, err := s.Decode(pbEncode(t, pbTestOrder, pbTestRefs, "shop.v1.Other.Inner", `{"y": "-7", "z": false}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{"y": int64(-7), "z": false})
	for _, bad := range [][]int{{2}, {1, 1}, {0, 0, 0}, {-1}} {
		if _, err := Parse(Protobuf, pbTestOrder, pbTestRefs, bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("indexes %v: got %v, want ErrBadRecord", bad, err)
		}
	}
}

const pbTestProto2 = `syntax = "proto2";
message P {
  required int64 id = 1;
  optional string name = 2 [default = "anon"];
  optional group G = 3 { optional int32 a = 4; }
  repeated int32 nums = 5 [packed = true];
}
`

// TestProtobufProto2 shows required fields not nullable (and enforced),
// optional ones nullable (a default is not a value), groups as structs.
func TestProtobufProto2(t *testing.T) {
	s := pbParse(t, pbTestProto2, nil)
	checkColumns(t, s.Columns(), []pqio.Column{
		pbCol("id", pqio.KindInt64, false), pbCol("name", pqio.KindString, true),
		{Name: "g", Type: pqio.StructOf(pbCol("a", pqio.KindInt32, true)), Nullable: true},
		{Name: "nums", Type: pqio.ListOf(pqio.Type{Kind: pqio.KindInt32}, false)},
	})
	row, err := s.Decode(pbEncode(t, pbTestProto2, nil, "P", `{"id": "3", "G": {"a": 1}, "nums": [1, 2]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkRow(t, row, map[string]any{"id": int64(3), "g": map[string]any{"a": int32(1)}, "nums": []any{int32(1), int32(2)}})
	if _, err := s.Decode([]byte{0x12, 0x01, 'x'}); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "required") {
		t.Errorf("missing required field: got %v, want ErrBadRecord naming it", err)
	}
	if _, err := s.Decode([]byte{0x08, 0x01, 0x12, 0x01, 0xff}); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "name") {
		t.Errorf("invalid UTF-8 in a proto2 string: got %v, want ErrBadRecord naming the field", err)
	}
}

func TestProtobufBadRecord(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	ts := dynamicpb.NewMessage(s.(*pbSchema).md.Fields().ByName("created").Message())
	ts.Set(ts.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1e15))
	tsb, err := proto.Marshal(ts)
	if err != nil {
		t.Fatal(err)
	}
	lineWithBadMoney := []byte{0x9a, 0x01, 0x05, 0x1a, 0x03, 0x0a, 0x01, 0xff} // lines[0].price.currency = "\xff"
	for name, payload := range map[string][]byte{
		"garbage":           {0xff, 0xff, 0xff, 0xff},
		"truncated":         {0x0a, 0x05, 'a'},
		"bad utf8":          {0x0a, 0x01, 0xff},
		"nested bad utf8":   lineWithBadMoney,
		"wrong wire type":   {0x0d, 0x01, 0x02, 0x03, 0x04, 0x4a, 0x01},
		"timestamp too big": append([]byte{0xb2, 0x01, byte(len(tsb))}, tsb...),
	} {
		_, err := s.Decode(payload)
		if !errors.Is(err, ErrBadRecord) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line ErrBadRecord", name, err)
		}
		if name == "timestamp too big" && !strings.Contains(err.Error(), "field created") {
			t.Errorf("%s: %v does not name the field", name, err)
		}
	}
}

func TestProtobufUnsupported(t *testing.T) {
	for name, tc := range map[string]struct{ text, field string }{
		"recursive":    {`syntax = "proto3"; message N { int64 v = 1; N next = 2; }`, `"next"`},
		"indirect":     {`syntax = "proto3"; message A { B b = 1; } message B { repeated A a = 1; }`, `"b.a"`},
		"any":          {`syntax = "proto3"; import "google/protobuf/any.proto"; message M { google.protobuf.Any x = 1; }`, `"x"`},
		"value":        {`syntax = "proto3"; import "google/protobuf/struct.proto"; message M { int32 a = 1; google.protobuf.Value v = 2; }`, `"v"`},
		"empty":        {`syntax = "proto3"; import "google/protobuf/empty.proto"; message M { google.protobuf.Empty e = 1; }`, `"e"`},
		"no fields":    {`syntax = "proto3"; message M {}`, "M"},
		"case clash":   {`syntax = "proto3"; message M { int32 a = 1; int32 A = 2; }`, `"A"`},
		"map of value": {`syntax = "proto3"; import "google/protobuf/struct.proto"; message M { map<string, google.protobuf.ListValue> m = 1; }`, `"m.value"`},
	} {
		_, err := Parse(Protobuf, tc.text, nil, nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want ErrUnsupported naming %s", name, err, tc.field)
		}
	}
}

func TestProtobufCompileErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		refs []Reference
	}{
		"syntax":         {`syntax = "proto3"; message M { int32 a = 1 }`, nil},
		"missing import": {`syntax = "proto3"; import "other.proto"; message M { int32 a = 1; }`, nil},
		"unknown type":   {`syntax = "proto3"; message M { Nope a = 1; }`, nil},
		"duplicate ref":  {pbTestOrder, append(pbTestRefs, pbTestRefs...)},
	} {
		_, err := Parse(Protobuf, tc.text, tc.refs, nil)
		if err == nil || errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line error", name, err)
		}
	}
	// A reference named like the main file does not replace it.
	text := `syntax = "proto3"; import "schema.proto"; message M { Dep d = 1; }`
	s := pbParse(t, text, []Reference{{Name: "schema.proto", Schema: `syntax = "proto3"; message Dep { int32 a = 1; }`}})
	checkColumns(t, s.Columns(), []pqio.Column{{Name: "d", Type: pqio.StructOf(pbCol("a", pqio.KindInt32, false)), Nullable: true}})
}

func TestProtobufConcurrentDecode(t *testing.T) {
	s := pbParse(t, pbTestOrder, pbTestRefs)
	payload := pbEncode(t, pbTestOrder, pbTestRefs, "shop.v1.Order", pbTestFull)
	want, err := s.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				got, err := s.Decode(payload)
				if err != nil || !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("goroutine %d, decode %d: %v, row differs: %v", g, i, err, !reflect.DeepEqual(got, want))
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
