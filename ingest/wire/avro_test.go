package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sluice-data/sluice/internal/pqio"
)

// avroTestAddress is a named type another registered schema defines.
const avroTestAddress = `{"type":"record","name":"Address","namespace":"com.acme.common","fields":[
	{"name":"street","type":"string"},
	{"name":"zip","type":["null","string"]}]}`

// avroTestRefs are the references of avroTestOrder.
var avroTestRefs = []Reference{{Name: "com.acme.common.Address", Schema: avroTestAddress}}

// avroTestOrder has every type, logical type and union shape sluice maps.
const avroTestOrder = `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	{"name":"b","type":"boolean"},
	{"name":"i","type":"int"},
	{"name":"l","type":"long"},
	{"name":"f","type":"float"},
	{"name":"d","type":"double"},
	{"name":"s","type":"string"},
	{"name":"by","type":"bytes"},
	{"name":"fx","type":{"type":"fixed","name":"Hash","size":4}},
	{"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","BLUE"]}},
	{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
	{"name":"decf","type":{"type":"fixed","name":"Money","size":8,"logicalType":"decimal","precision":18,"scale":4}},
	{"name":"u","type":{"type":"string","logicalType":"uuid"}},
	{"name":"dt","type":{"type":"int","logicalType":"date"}},
	{"name":"tsm","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
	{"name":"ltm","type":{"type":"long","logicalType":"local-timestamp-millis"}},
	{"name":"ltu","type":{"type":"long","logicalType":"local-timestamp-micros"}},
	{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
	{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
	{"name":"dur","type":{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}},
	{"name":"addr","type":"com.acme.common.Address"},
	{"name":"nested","type":{"type":"record","name":"Inner","fields":[
		{"name":"n","type":"int"},
		{"name":"tags","type":{"type":"array","items":"string"}}]}},
	{"name":"items","type":{"type":"array","items":{"type":"record","name":"Item","fields":[
		{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}}},
	{"name":"idx","type":{"type":"map","values":{"type":"array","items":"long"}}},
	{"name":"ns1","type":["null","string"]},
	{"name":"ns2","type":["string","null"]},
	{"name":"nrec","type":["null","Inner"]},
	{"name":"nenum","type":["Color","null"]},
	{"name":"ndec","type":["null",{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}]},
	{"name":"nts","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
	{"name":"nlt","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}]},
	{"name":"nmap","type":["null",{"type":"map","values":"int"}]},
	{"name":"narr","type":["null",{"type":"array","items":["null","int"]}]},
	{"name":"nfix","type":["null","Hash"]},
	{"name":"one","type":["long"]}]}`

// avroTestColumns is avroTestOrder's columns as a schema string.
const avroTestColumns = "b:bool,i:int32,l:int64,f:float64,d:float64,s:string,by:binary,fx:binary,e:string," +
	"dec:decimal(9,2),decf:decimal(18,4),u:uuid,dt:date,tsm:timestamp,tsu:timestamp,ltm:timestamp,ltu:timestamp," +
	"tm:int64,tu:int64,dur:binary,addr:struct<street:string,zip:string?>,nested:struct<n:int32,tags:list<string>>," +
	"items:list<struct<sku:string,qty:int32>>,idx:map<string,list<int64>>,ns1:string?,ns2:string?," +
	"nrec:struct<n:int32,tags:list<string>>?,nenum:string?,ndec:decimal(9,2)?,nts:timestamp?,nlt:timestamp?," +
	"nmap:map<string,int32>?,narr:list<int32?>?,nfix:binary?,one:int64"

// avroParse parses an Avro schema or fails the test.
func avroParse(t testing.TB, text string, refs []Reference) Schema {
	t.Helper()
	s, err := Parse(Avro, text, refs, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// avroEncode encodes v with the library, parsing text (and refs) into a
// cache of its own, as an independent producer would.
func avroEncode(t testing.TB, text string, refs []Reference, v any) []byte {
	t.Helper()
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r.Schema, "", cache); err != nil {
			t.Fatalf("parse reference %s: %v", r.Name, err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	b, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}

// avroCheckRow compares a decoded row with want: the same Go types
// throughout, times equal and in UTC.
func avroCheckRow(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: missing", k)
			continue
		}
		if err := avroSame(g, w); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected value %#v", k, got[k])
		}
	}
}

// avroSame says how got differs from want, or nil.
func avroSame(got, want any) error {
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Errorf("got %T %#v, want %T %#v", got, got, want, want)
	}
	switch w := want.(type) {
	case time.Time:
		g := got.(time.Time)
		if !g.Equal(w) || g.Location() != time.UTC {
			return fmt.Errorf("got %v, want %v (UTC)", g, w)
		}
		return nil
	case map[string]any:
		g := got.(map[string]any)
		if len(g) != len(w) {
			return fmt.Errorf("got %#v, want %#v", g, w)
		}
		for k := range w {
			if err := avroSame(g[k], w[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	case []any:
		g := got.([]any)
		if len(g) != len(w) {
			return fmt.Errorf("got %#v, want %#v", g, w)
		}
		for i := range w {
			if err := avroSame(g[i], w[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case []pqio.MapEntry:
		g := got.([]pqio.MapEntry)
		if len(g) != len(w) {
			return fmt.Errorf("got %#v, want %#v", g, w)
		}
		for i := range w {
			if err := avroSame(g[i].Key, w[i].Key); err != nil {
				return fmt.Errorf("key %d: %w", i, err)
			}
			if err := avroSame(g[i].Value, w[i].Value); err != nil {
				return fmt.Errorf("value %v: %w", w[i].Key, err)
			}
		}
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("got %#v, want %#v", got, want)
	}
	return nil
}

func TestAvroColumns(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs)
	got := pqio.Schema{Columns: s.Columns()}
	if got.String() != avroTestColumns {
		t.Errorf("columns\n got %s\nwant %s", got, avroTestColumns)
	}
	want, err := pqio.ParseSchema(avroTestColumns)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range want.Columns {
		g := got.Columns[i]
		if g.Name != c.Name || g.Nullable != c.Nullable || !g.Type.Equal(c.Type) {
			t.Errorf("column %d: got %+v, want %+v", i, g, c)
		}
	}
}

// avroTestUUID is a UUID as a producer may write it, upper case.
const avroTestUUID = "0F8FAD5B-D9CB-469F-A165-70867728950E"

// avroTestFull is an Order with every field set, and the row it decodes to.
func avroTestFull() (in, want map[string]any) {
	local := time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.Local)
	localMicros := time.Date(2024, 1, 2, 3, 4, 5, 678_901_000, time.Local)
	in = map[string]any{
		"b": true, "i": -7, "l": int64(math.MaxInt64), "f": float32(1.5), "d": -2.25,
		"s": "héllo", "by": []byte{0, 1, 2}, "fx": [4]byte{9, 8, 7, 6}, "e": "GREEN",
		"dec":  big.NewRat(-12345, 100),
		"decf": big.NewRat(-5, 10000),
		"u":    avroTestUUID,
		"dt":   time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"tsm":  time.UnixMilli(1_700_000_000_123),
		"tsu":  time.UnixMicro(1_700_000_000_123_457),
		"ltm":  local, "ltu": localMicros,
		"tm":     13*time.Hour + 14*time.Minute + 15*time.Second + 123*time.Millisecond,
		"tu":     13*time.Hour + 14*time.Minute + 15*time.Second + 123_456*time.Microsecond,
		"dur":    avro.LogicalDuration{Months: 1, Days: 2, Milliseconds: 3},
		"addr":   map[string]any{"street": "Main St", "zip": map[string]any{"string": "12345"}},
		"nested": map[string]any{"n": 3, "tags": []any{"a", "b"}},
		"items": []any{
			map[string]any{"sku": "x1", "qty": 2},
			map[string]any{"sku": "x2", "qty": 5},
		},
		"idx":   map[string]any{"b": []any{int64(2), int64(3)}, "a": []any{int64(1)}},
		"ns1":   map[string]any{"string": "one"},
		"ns2":   map[string]any{"string": "two"},
		"nrec":  map[string]any{"com.acme.Inner": map[string]any{"n": 4, "tags": []any{}}},
		"nenum": map[string]any{"com.acme.Color": "BLUE"},
		"ndec":  map[string]any{"bytes.decimal": big.NewRat(1, 100)},
		"nts":   map[string]any{"long.timestamp-micros": time.UnixMicro(-1)},
		"nlt":   map[string]any{"long.local-timestamp-micros": localMicros},
		"nmap":  map[string]any{"map": map[string]any{"k": 1}},
		"narr":  map[string]any{"array": []any{map[string]any{"int": 1}, nil, map[string]any{"int": 3}}},
		"nfix":  map[string]any{"com.acme.Hash": [4]byte{1, 1, 1, 1}},
		"one":   map[string]any{"long": int64(-1)},
	}
	want = map[string]any{
		"b": true, "i": int32(-7), "l": int64(math.MaxInt64), "f": 1.5, "d": -2.25,
		"s": "héllo", "by": []byte{0, 1, 2}, "fx": []byte{9, 8, 7, 6}, "e": "GREEN",
		"dec":    "-123.45",
		"decf":   "-0.0005",
		"u":      "0f8fad5b-d9cb-469f-a165-70867728950e",
		"dt":     time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"tsm":    time.Date(2023, 11, 14, 22, 13, 20, 123_000_000, time.UTC),
		"tsu":    time.Date(2023, 11, 14, 22, 13, 20, 123_457_000, time.UTC),
		"ltm":    time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC),
		"ltu":    time.Date(2024, 1, 2, 3, 4, 5, 678_901_000, time.UTC),
		"tm":     int64(47_655_123_000),
		"tu":     int64(47_655_123_456),
		"dur":    []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0},
		"addr":   map[string]any{"street": "Main St", "zip": "12345"},
		"nested": map[string]any{"n": int32(3), "tags": []any{"a", "b"}},
		"items": []any{
			map[string]any{"sku": "x1", "qty": int32(2)},
			map[string]any{"sku": "x2", "qty": int32(5)},
		},
		"idx":   []pqio.MapEntry{{Key: "a", Value: []any{int64(1)}}, {Key: "b", Value: []any{int64(2), int64(3)}}},
		"ns1":   "one",
		"ns2":   "two",
		"nrec":  map[string]any{"n": int32(4), "tags": []any{}},
		"nenum": "BLUE",
		"ndec":  "0.01",
		"nts":   time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		"nlt":   time.Date(2024, 1, 2, 3, 4, 5, 678_901_000, time.UTC),
		"nmap":  []pqio.MapEntry{{Key: "k", Value: int32(1)}},
		"narr":  []any{int32(1), nil, int32(3)},
		"nfix":  []byte{1, 1, 1, 1},
		"one":   int64(-1),
	}
	return in, want
}

// avroTestNulls is avroTestFull with every nullable field null and the
// others at edge values.
func avroTestNulls() (in, want map[string]any) {
	in, want = avroTestFull()
	for _, k := range []string{"ns1", "ns2", "nrec", "nenum", "ndec", "nts", "nlt", "nmap", "narr", "nfix"} {
		in[k], want[k] = nil, nil
	}
	in["i"], want["i"] = math.MinInt32, int32(math.MinInt32)
	in["dec"], want["dec"] = big.NewRat(0, 1), "0.00"
	in["decf"], want["decf"] = big.NewRat(99_999_999_999_999, 1), "99999999999999.0000"
	in["dt"], want["dt"] = time.Unix(0, 0).UTC(), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	in["tsu"], want["tsu"] = time.UnixMicro(-62_135_596_800_000_000), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	in["addr"] = map[string]any{"street": "", "zip": nil}
	want["addr"] = map[string]any{"street": "", "zip": nil}
	in["items"], want["items"] = []any{}, []any{}
	in["idx"], want["idx"] = map[string]any{}, []pqio.MapEntry{}
	in["by"], want["by"] = []byte{}, []byte{}
	return in, want
}

func TestAvroDecode(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs)
	full, fullWant := avroTestFull()
	nulls, nullsWant := avroTestNulls()
	for _, tc := range []struct {
		name     string
		in, want map[string]any
	}{
		{"every field set", full, fullWant},
		{"nulls and edge values", nulls, nullsWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := avroEncode(t, avroTestOrder, avroTestRefs, tc.in)
			got, err := s.Decode(payload)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			avroCheckRow(t, got, tc.want)
		})
	}
}

// TestAvroLocalTimestamp encodes local timestamps as the plain longs
// they are on the wire, so the check does not depend on the time zone.
func TestAvroLocalTimestamp(t *testing.T) {
	const typed = `{"type":"record","name":"L","fields":[
		{"name":"ms","type":{"type":"long","logicalType":"local-timestamp-millis"}},
		{"name":"us","type":["null",{"type":"long","logicalType":"local-timestamp-micros"}]}]}`
	const plain = `{"type":"record","name":"L","fields":[{"name":"ms","type":"long"},{"name":"us","type":["null","long"]}]}`
	s := avroParse(t, typed, nil)
	// 2021-03-28T02:30:00.123456 does not exist in Europe: the wall
	// clock is kept as it is, in UTC.
	wall := time.Date(2021, 3, 28, 2, 30, 0, 123_456_000, time.UTC)
	payload := avroEncode(t, plain, nil, map[string]any{"ms": wall.UnixMilli(), "us": map[string]any{"long": wall.UnixMicro()}})
	got, err := s.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	avroCheckRow(t, got, map[string]any{"ms": wall.Truncate(time.Millisecond), "us": wall})
}

// TestAvroDecimalPrecision checks that a decimal's value wider than its
// precision (which a producer with another schema can write) is a bad
// record, and that a value at full precision is exact.
func TestAvroDecimalPrecision(t *testing.T) {
	const narrow = `{"type":"record","name":"D","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}]}`
	const wide = `{"type":"record","name":"D","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}}]}`
	s := avroParse(t, narrow, nil)
	got, err := s.Decode(avroEncode(t, wide, nil, map[string]any{"a": big.NewRat(-99999, 100)}))
	if err != nil {
		t.Fatal(err)
	}
	avroCheckRow(t, got, map[string]any{"a": "-999.99"})
	_, err = s.Decode(avroEncode(t, wide, nil, map[string]any{"a": big.NewRat(100000, 100)}))
	avroCheckBad(t, err, "does not fit decimal(5,2)")

	s = avroParse(t, wide, nil)
	max, _ := new(big.Int).SetString(strings.Repeat("9", 38), 10)
	got, err = s.Decode(avroEncode(t, wide, nil, map[string]any{"a": new(big.Rat).SetFrac(new(big.Int).Neg(max), big.NewInt(100))}))
	if err != nil {
		t.Fatal(err)
	}
	avroCheckRow(t, got, map[string]any{"a": "-" + strings.Repeat("9", 36) + ".99"})
}

// avroCheckBad checks that err is a one-line ErrBadRecord holding want.
func avroCheckBad(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrBadRecord) {
		t.Fatalf("got %v, want an ErrBadRecord", err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 400 {
		t.Errorf("not one short line: %q", msg)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("got %q, want it to hold %q", msg, want)
	}
}

// avroZigzag is Avro's encoding of a long (Go's varint is the same zigzag).
func avroZigzag(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendVarint(b, v)
	}
	return b
}

func TestAvroBadRecord(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs)
	in, _ := avroTestFull()
	good := avroEncode(t, avroTestOrder, avroTestRefs, in)
	const small = `{"type":"record","name":"P","fields":[
		{"name":"a","type":{"type":"array","items":"long"}},
		{"name":"s","type":"string"},
		{"name":"u","type":["null",{"type":"string","logicalType":"uuid"}]},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["X"]}},
		{"name":"m","type":{"type":"map","values":"int"}}]}`
	p := avroParse(t, small, nil)
	tail := func(b []byte) []byte { return append(b, avroZigzag(0, 0, 0)...) } // u null, e X, m empty
	for _, tc := range []struct {
		name    string
		s       Schema
		payload []byte
		want    string
	}{
		{"empty", s, nil, `ends before its record does, in field "b"`},
		{"truncated by one byte", s, good[:len(good)-1], `ends before its record does, in field "one"`},
		{"truncated to one byte", s, good[:1], "ends before its record does"},
		{"trailing bytes", s, append(append([]byte{}, good...), 0, 0), "2 trailing bytes"},
		{"garbage", s, []byte(strings.Repeat("\xff", 40)), `field "b": does not decode as Avro`},
		{"array count -2^63", p, avroZigzag(math.MinInt64, 0, 3, 7, 8, 9, 0), `field "a"`},
		{"array count 2^62", p, avroZigzag(1<<62, 1, 0), "a block of 4611686018427387904 items"},
		{"array counts overflowing", p, avroZigzag(1, 5, math.MaxInt64, 1, 0), "a block of"},
		{"string length 2^40", p, tail(avroZigzag(0, 1<<40)), "a length of 1099511627776 bytes"},
		{"negative string length", p, tail(avroZigzag(0, -3)), "a length of -3 bytes"},
		{"invalid UTF-8", p, tail(append(avroZigzag(0, 2), 0xff, 0xfe)), "not valid UTF-8"},
		{"union branch out of range", p, append(avroZigzag(0, 0, 2), 0, 0), "union branch 2 does not exist"},
		{"enum symbol out of range", p, append(avroZigzag(0, 0, 0, 1), 0), "enum symbol 1 does not exist"},
		{"not a UUID", p, append(append(avroZigzag(0, 0, 1, 3), "abc"...), 0, 0), `not a UUID: "abc"`},
		{"overlong varint", p, []byte(strings.Repeat("\x80", 12)), `field "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Decode(tc.payload)
			avroCheckBad(t, err, tc.want)
		})
	}
}

// avroCorrupted is n payloads of garbage made from goods, in turn: random
// bytes (up to maxLen), a cut of the first good payload, and a good one
// with up to maxFlips bytes flipped.
func avroCorrupted(seed int64, n, maxLen, maxFlips int, goods ...[]byte) [][]byte {
	rng := rand.New(rand.NewSource(seed))
	out := make([][]byte, 0, n)
	for i := range n {
		var b []byte
		switch i % 3 {
		case 0:
			b = make([]byte, rng.Intn(maxLen))
			rng.Read(b)
		case 1:
			b = append([]byte{}, goods[0][:rng.Intn(len(goods[0]))]...)
		default:
			b = append([]byte{}, goods[i%len(goods)]...)
			for range 1 + rng.Intn(maxFlips) {
				b[rng.Intn(len(b))] = byte(rng.Intn(256))
			}
		}
		out = append(out, b)
	}
	return out
}

// TestAvroGarbage decodes random bytes and random cuts and flips of a
// good payload: each decodes or is a bad record, none panics.
func TestAvroGarbage(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs)
	in, _ := avroTestFull()
	good := avroEncode(t, avroTestOrder, avroTestRefs, in)
	for _, b := range avroCorrupted(1, 3000, 200, 4, good) {
		if _, err := s.Decode(b); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("payload %x: %v is not an ErrBadRecord", b, err)
		} else if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("payload %x: %q is not one line", b, err)
		}
	}
}

func TestAvroUnsupported(t *testing.T) {
	rec := func(fields string) string { return `{"type":"record","name":"R","fields":[` + fields + `]}` }
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"top-level string", `"string"`, []string{"top-level Avro type is string"}},
		{"top-level array", `{"type":"array","items":"int"}`, []string{"not a record"}},
		{"several types", rec(`{"name":"x","type":["null","string","long"]}`), []string{`field "x"`, "a union of several types (null, string, long)"}},
		{"nested several types", rec(`{"name":"o","type":{"type":"record","name":"In","fields":[{"name":"y","type":["int","string"]}]}}`), []string{`field "o.y"`, "a union of several types"}},
		{"recursive", rec(`{"name":"v","type":"int"},{"name":"next","type":["null","R"]}`), []string{`field "next"`, `"R"`, "recursive"}},
		{"recursive through an array", rec(`{"name":"kids","type":{"type":"array","items":"R"}}`), []string{`field "kids.element"`, "recursive"}},
		{"decimal too wide", rec(`{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":39,"scale":2}}`), []string{`field "amount"`, "decimal(39,2)"}},
		{"null field", rec(`{"name":"z","type":"null"}`), []string{`field "z"`, "null"}},
		{"null-only union", rec(`{"name":"z","type":["null"]}`), []string{`field "z"`}},
		{"empty fixed", rec(`{"name":"f","type":{"type":"fixed","name":"F0","size":0}}`), []string{`field "f"`, "size 0"}},
		{"empty nested record", rec(`{"name":"r","type":{"type":"record","name":"E","fields":[]}}`), []string{`field "r"`, "no fields"}},
		{"names differing in case", rec(`{"name":"id","type":"int"},{"name":"ID","type":"int"}`), []string{`"id" and "ID"`}},
		{"not JSON", `{"type":`, []string{"does not parse"}},
		{"unknown named type", rec(`{"name":"a","type":"com.acme.Missing"}`), []string{"does not parse", "com.acme.Missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(Avro, tc.text, nil, nil)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want an ErrUnsupported", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to hold %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
		})
	}
}

// TestAvroReferences checks references given in any order, and that two
// schemas of the same text whose reference defines a named type
// differently each decode with their own definition.
func TestAvroReferences(t *testing.T) {
	const money = `{"type":"record","name":"Money","namespace":"com.acme","fields":[{"name":"amount","type":"com.acme.Amount"},{"name":"currency","type":"string"}]}`
	const amount = `{"type":"fixed","name":"Amount","namespace":"com.acme","size":4}`
	const pay = `{"type":"record","name":"Pay","fields":[{"name":"m","type":"com.acme.Money"}]}`
	refs := []Reference{{Name: "com.acme.Money", Schema: money}, {Name: "com.acme.Amount", Schema: amount}}
	s := avroParse(t, pay, refs)
	if got, want := (pqio.Schema{Columns: s.Columns()}).String(), "m:struct<amount:binary,currency:string>"; got != want {
		t.Errorf("columns: got %s, want %s", got, want)
	}
	in := map[string]any{"m": map[string]any{"amount": [4]byte{1, 2, 3, 4}, "currency": "EUR"}}
	got, err := s.Decode(avroEncode(t, pay, []Reference{refs[1], refs[0]}, in))
	if err != nil {
		t.Fatal(err)
	}
	avroCheckRow(t, got, map[string]any{"m": map[string]any{"amount": []byte{1, 2, 3, 4}, "currency": "EUR"}})

	const addr = `{"name":"a","type":"com.acme.common.Address"}`
	const user = `{"type":"record","name":"User","fields":[` + addr + `]}`
	v2 := []Reference{{Name: "com.acme.common.Address", Schema: `{"type":"record","name":"Address","namespace":"com.acme.common","fields":[
		{"name":"street","type":"string"},{"name":"no","type":"int"}]}`}}
	s1, s2 := avroParse(t, user, avroTestRefs), avroParse(t, user, v2)
	p1 := avroEncode(t, user, avroTestRefs, map[string]any{"a": map[string]any{"street": "x", "zip": nil}})
	p2 := avroEncode(t, user, v2, map[string]any{"a": map[string]any{"street": "y", "no": 7}})
	for range 2 {
		got1, err1 := s1.Decode(p1)
		got2, err2 := s2.Decode(p2)
		if err1 != nil || err2 != nil {
			t.Fatalf("Decode: %v, %v", err1, err2)
		}
		avroCheckRow(t, got1, map[string]any{"a": map[string]any{"street": "x", "zip": nil}})
		avroCheckRow(t, got2, map[string]any{"a": map[string]any{"street": "y", "no": int32(7)}})
	}
}

// TestAvroConcurrentDecode decodes different payloads with one schema
// from 8 goroutines at once, the first decodes included (run with -race).
func TestAvroConcurrentDecode(t *testing.T) {
	s := avroParse(t, avroTestOrder, avroTestRefs)
	full, fullWant := avroTestFull()
	nulls, nullsWant := avroTestNulls()
	payloads := [][]byte{avroEncode(t, avroTestOrder, avroTestRefs, full), avroEncode(t, avroTestOrder, avroTestRefs, nulls)}
	wants := []map[string]any{fullWant, nullsWant}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % 2
				got, err := s.Decode(payloads[k])
				if err == nil {
					err = avroSame(got, wants[k])
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d, decode %d: %w", g, i, err)
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
