package main

import (
	"context"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice-data/sluice/internal/srtest"
)

// The three versions of the Avro events' schema, as a producer evolves
// it: v2 widens qty (int to long) and adds a nullable note; v3 adds a
// nullable timestamp-millis. avroV4 changes name's type: incompatible,
// registered under another subject as a careless producer would.
const (
	avroV1 = `{"type":"record","name":"Event","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"name","type":"string"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"uid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"qty","type":"int"},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"long"}},
 {"name":"geo","type":["null",{"type":"record","name":"Geo","fields":[{"name":"lat","type":"double"},{"name":"lon","type":"double"}]}],"default":null}]}`
	avroV4 = `{"type":"record","name":"Event","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"name","type":"long"}]}`
)

func avroV(v int) string {
	s := avroV1
	if v >= 2 {
		s = strings.Replace(s, `{"name":"qty","type":"int"}`, `{"name":"qty","type":"long"}`, 1)
		s = strings.TrimSuffix(s, "]}") + `,
 {"name":"note","type":["null","string"],"default":null}]}`
	}
	if v >= 3 {
		s = strings.TrimSuffix(s, "]}") + `,
 {"name":"seen","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null}]}`
	}
	return s
}

type avroGeo struct {
	Lat float64 `avro:"lat"`
	Lon float64 `avro:"lon"`
}

// avroEvent is an event of any version: the encoder takes the fields its
// schema has.
type avroEvent struct {
	ID     int64            `avro:"id"`
	Name   string           `avro:"name"`
	Amount *big.Rat         `avro:"amount"`
	Day    time.Time        `avro:"day"`
	TS     time.Time        `avro:"ts"`
	UID    string           `avro:"uid"`
	Qty    int              `avro:"qty"`
	Tags   []string         `avro:"tags"`
	Attrs  map[string]int64 `avro:"attrs"`
	Geo    *avroGeo         `avro:"geo"`
	Note   *string          `avro:"note"`
	Seen   *time.Time       `avro:"seen"`
}

func newAvroEvent(i int, v int) avroEvent {
	e := avroEvent{ID: int64(i), Name: fmt.Sprintf("user \"%d\" \\ é\n", i), Amount: big.NewRat(int64(i*1001-5000), 100),
		Day: time.Date(2024, 3, 1+i%28, 0, 0, 0, 0, time.UTC), TS: time.UnixMicro(1709287200123456 + int64(i)*3_600_000_001).UTC(),
		UID: fmt.Sprintf("6f1c3b9e-2a4d-4b8e-9c1f-%012d", i), Qty: i % 5, Tags: []string{"a", fmt.Sprint(i)},
		Attrs: map[string]int64{"k": int64(i), "z": -1}}
	if i%3 == 0 {
		e.Geo = &avroGeo{Lat: 48.5 + float64(i), Lon: -2.25}
	}
	if v >= 2 {
		e.Qty = 1<<33 + i // only a long holds it
		if i%2 == 0 {
			n := fmt.Sprintf("note %d", i)
			e.Note = &n
		}
	}
	if v >= 3 {
		s := time.UnixMilli(1714000000000 + int64(i)).UTC()
		e.Seen = &s
	}
	return e
}

// The Go types the producers' sr.Serde encodes, one per schema id.
type (
	avroEventV1 avroEvent
	avroEventV2 avroEvent
	avroEventV3 avroEvent
	orderJSON   string // protojson text of an order
	clickJSON   string
)

// serdeRecord is v encoded by serde (the Confluent wire format, as
// franz-go's producers write it) as a record.
func serdeRecord(t *testing.T, serde *sr.Serde, v any) *kgo.Record {
	t.Helper()
	b, err := serde.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Value: b}
}

// wireRecord is a payload behind a wire header made by hand: the poison
// records a serde would not make.
func wireRecord(t *testing.T, id int, payload []byte) *kgo.Record {
	t.Helper()
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(nil, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Value: append(b, payload...)}
}

// avroEventRow is the DuckDB row (see registryQuery) of an event as the
// table holds it: the versions before a column existed read it as NULL.
func avroEventRow(e avroEvent) string {
	geo := "NULL\tNULL"
	if e.Geo != nil {
		geo = fmt.Sprintf("%g\t%g", e.Geo.Lat, e.Geo.Lon)
	}
	note, seen := "NULL", "NULL"
	if e.Note != nil {
		note = *e.Note
	}
	if e.Seen != nil {
		seen = fmt.Sprint(e.Seen.UnixMicro())
	}
	return strings.Join([]string{fmt.Sprint(e.ID), fmt.Sprintf("%q", e.Name), e.Amount.FloatString(2), e.Day.Format(time.DateOnly),
		fmt.Sprint(e.TS.UnixMicro()), e.UID, fmt.Sprint(e.Qty), strings.Join(e.Tags, "|"),
		fmt.Sprintf("k=%d,z=%d", e.Attrs["k"], e.Attrs["z"]), geo, note, seen}, "\t")
}

const registryQuery = `select id, to_json(name), amount::varchar, day::varchar, epoch_us(ts), uid::varchar, qty, array_to_string(tags, '|'),
 'k=' || attrs['k'] || ',z=' || attrs['z'], geo.lat, geo.lon, note, epoch_us(seen) from read_parquet([%s], hive_partitioning=false, union_by_name=true) order by id`

const orderProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  repeated Line lines = 3;
  google.protobuf.Timestamp placed = 4;
  optional string coupon = 5;
  message Line {
    string sku = 1;
    int32 qty = 2;
    double price = 3;
  }
}
`

// protoOrder encodes an order of orderProto from its protojson text,
// with descriptors compiled here, apart from sluice's.
func protoOrder(t *testing.T, js string) []byte {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"order.proto": orderProto}),
	})}
	files, err := c.Compile(context.Background(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	d := files.FindFileByPath("order.proto").Messages().ByName("Order")
	m := dynamicpb.NewMessage(d)
	if err := protojson.Unmarshal([]byte(js), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const clickSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
 "properties":{"id":{"type":"integer"},"page":{"type":"string"},"at":{"type":"string","format":"date-time"},
  "tags":{"type":"array","items":{"type":"string"}},"who":{"type":"object","properties":{"user":{"type":"string"},"known":{"type":"boolean"}},"required":["user"]}},
 "required":["id","page","at"]}`

// TestIngestKafkaSchemaRegistry: Kafka topics of Avro, Protobuf and JSON
// Schema records in the Confluent wire format, their schemas in a
// Schema Registry (the test server, its own ids, basic auth), produced
// through franz-go's sr.Serde with encoders apart from sluice's decoders
// (hamba/avro's, Protobuf compiled here, JSON text). Each table
// is made with init --schema-from-registry; ingest fetches each schema
// id once, widens the Avro table for the topic's v2 and v3 (a new
// nullable column, int widened to long), and quarantines, with the
// schema id and the reason, the records of an incompatible schema, of an
// id the registry lacks, not in the wire format, or whose bytes do not
// decode. DuckDB reads every value back as produced.
func TestIngestKafkaSchemaRegistry(t *testing.T) {
	const user, pass = "sluice", "SENTINELREGISTRYPASS"
	reg := srtest.Start(t, srtest.Options{User: user, Password: pass})
	env := []string{"SCHEMA_REGISTRY_USERNAME=" + user, "SCHEMA_REGISTRY_PASSWORD=" + pass}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "avro", "proto", "json"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addrs := strings.Join(c.ListenAddrs(), ",")
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce := func(topic string, rs []*kgo.Record) {
		t.Helper()
		for i, r := range rs {
			r.Topic, r.Partition = topic, int32(i%2)
		}
		if err := p.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	ingestJSON := func(loc, topic string, extra ...string) map[string]any {
		t.Helper()
		r := sluice(t, env, append([]string{"--json", "ingest", loc, "--from", "kafka://" + addrs + "/" + topic, "--schema-registry", reg.URL()}, extra...)...)
		if r.code != 0 {
			t.Fatalf("ingest %s: exit %d\n%s", topic, r.code, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, pass) {
			t.Errorf("the registry's password shows in the output")
		}
		return summaryOf(t, r)
	}

	// Avro, three versions and an incompatible fourth.
	ids := []int{reg.Register(t, "avro-value", "AVRO", avroV(1))}
	avroLoc := filepath.Join(dir, "events")
	mustSluiceEnv(t, env, "init", avroLoc, "--schema-from-registry", "avro-value", "--schema-registry", reg.URL(), "--partition-by", "day(ts)")
	ids = append(ids, reg.Register(t, "avro-value", "AVRO", avroV(2)), reg.Register(t, "avro-value", "AVRO", avroV(3)))
	v4 := reg.Register(t, "avro-careless-value", "AVRO", avroV4)
	var serde sr.Serde
	avroFn := func(schema string) sr.EncodingOpt {
		sc := avro.MustParse(schema)
		return sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(sc, v) })
	}
	serde.Register(ids[0], avroEventV1{}, avroFn(avroV(1)))
	serde.Register(ids[1], avroEventV2{}, avroFn(avroV(2)))
	serde.Register(ids[2], avroEventV3{}, avroFn(avroV(3)))
	serde.Register(v4, map[string]any{}, avroFn(avroV4))
	var rs []*kgo.Record
	var want []string
	for i := range 30 {
		v := 1 + i/10
		e := newAvroEvent(i, v)
		rs = append(rs, serdeRecord(t, &serde, []any{avroEventV1(e), avroEventV2(e), avroEventV3(e)}[v-1]))
		want = append(want, avroEventRow(e))
	}
	rs = append(rs, serdeRecord(t, &serde, map[string]any{"id": int64(99), "name": int64(1)}), wireRecord(t, 9999, []byte{2}),
		&kgo.Record{Value: []byte(`{"id":1}`)}, &kgo.Record{Value: rs[0].Value[:12]})
	produce("avro", rs)
	s := ingestJSON(avroLoc, "avro")
	if s["records_in"] != 34.0 || s["rows_written"] != 30.0 || s["records_quarantined"] != 4.0 || s["schema_widened"] != 2.0 {
		t.Fatalf("Avro ingest: %v; want 34 records in, 30 rows, 4 quarantined, 2 schema changes", s)
	}
	files := lines(mustSluice(t, "files", avroLoc).stdout)
	if got := duckQueryRows(t, fmt.Sprintf(registryQuery, quotedPaths(files))); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("DuckDB reads the Avro table as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	quarantined := quarantineReasons(t, avroLoc)
	var reasons []string
	for pos, why := range quarantined {
		if !regexp.MustCompile(`^avro/[01]/[0-9]+$`).MatchString(pos) {
			t.Errorf("quarantined record %q at %q: no topic/partition/offset", why, pos)
		}
		reasons = append(reasons, why)
	}
	all := strings.Join(reasons, "\n")
	for _, w := range []string{fmt.Sprintf("schema id %d: ", v4), "(an incompatible change)", "schema id 9999 is not in the registry",
		"not in the Confluent wire format", fmt.Sprintf("schema id %d:", ids[0])} {
		if !strings.Contains(all, w) {
			t.Errorf("the quarantine's reasons do not say %q:\n%s", w, all)
		}
	}
	if n := reg.Requests(fmt.Sprintf("/schemas/ids/%d", ids[0])); n != 1 && n != 2 {
		t.Errorf("schema id %d fetched %d times; want once per run of the ingest", ids[0], n)
	}
	if again := ingestJSON(avroLoc, "avro"); again["records_in"] != 0.0 {
		t.Errorf("a rerun took records: %v", again)
	}

	// Protobuf: nested messages, repeated fields, a Timestamp, an
	// optional field; one record of garbage bytes.
	pid := reg.Register(t, "proto-value", "PROTOBUF", orderProto)
	serde.Register(pid, orderJSON(""), sr.Index(0), sr.EncodeFn(func(v any) ([]byte, error) { return protoOrder(t, string(v.(orderJSON))), nil }))
	protoLoc := filepath.Join(dir, "orders")
	mustSluiceEnv(t, env, "init", protoLoc, "--schema-from-registry", "proto-value", "--schema-registry", reg.URL())
	rs, want = nil, nil
	for i := range 6 {
		coupon := ""
		if i%2 == 1 {
			coupon = fmt.Sprintf(`,"coupon":"C%d"`, i)
		}
		js := fmt.Sprintf(`{"id":%d,"customer":"c-%d","lines":[{"sku":"s1","qty":%d,"price":1.5},{"sku":"s2","qty":2,"price":%d.25}],"placed":"2024-03-0%dT10:00:00.000001Z"%s}`,
			i, i, i, i, 1+i, coupon)
		rs = append(rs, serdeRecord(t, &serde, orderJSON(js)))
		c := "NULL"
		if coupon != "" {
			c = fmt.Sprintf("C%d", i)
		}
		want = append(want, fmt.Sprintf("%d\tc-%d\t2\t%d\t%d.25\t2024-03-0%dT10:00:00.000001Z\t%s", i, i, i, i, 1+i, c))
	}
	poison := serdeRecord(t, &serde, orderJSON(`{"id":1}`))
	poison.Value = append(poison.Value[:6], 0xff, 0xff, 0xff) // the header, its index, then no message
	rs = append(rs, poison)
	produce("proto", rs)
	s = ingestJSON(protoLoc, "proto", "--format", "protobuf")
	if s["rows_written"] != 6.0 || s["records_quarantined"] != 1.0 {
		t.Fatalf("Protobuf ingest: %v; want 6 rows, 1 quarantined", s)
	}
	got := duckQueryRows(t, fmt.Sprintf(`select id, customer, len(lines), lines[1].qty, lines[2].price, strftime(placed at time zone 'UTC', '%%Y-%%m-%%dT%%H:%%M:%%S.%%fZ'), coupon
 from read_parquet([%s], hive_partitioning=false) order by id`, quotedPaths(lines(mustSluice(t, "files", protoLoc).stdout))))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("DuckDB reads the Protobuf table as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// JSON Schema: a payload the schema refuses goes to quarantine.
	jid := reg.Register(t, "json-value", "JSON", clickSchema)
	serde.Register(jid, clickJSON(""), sr.EncodeFn(func(v any) ([]byte, error) { return []byte(v.(clickJSON)), nil }))
	jsonLoc := filepath.Join(dir, "clicks")
	mustSluiceEnv(t, env, "init", jsonLoc, "--schema-from-registry", "json-value", "--schema-registry", reg.URL())
	rs, want = nil, nil
	for i := range 5 {
		rs = append(rs, serdeRecord(t, &serde, clickJSON(fmt.Sprintf(`{"id":%d,"page":"/p/%d","at":"2024-03-01T10:00:0%dZ","tags":["x"],"who":{"user":"u%d"}}`, i, i, i, i))))
		want = append(want, fmt.Sprintf("%d\t/p/%d\tx\tu%d\tNULL", i, i, i))
	}
	rs = append(rs, serdeRecord(t, &serde, clickJSON(`{"id":"seven","page":"/","at":"2024-03-01T10:00:00Z"}`)))
	produce("json", rs)
	s = ingestJSON(jsonLoc, "json", "--format", "json-sr")
	if s["rows_written"] != 5.0 || s["records_quarantined"] != 1.0 {
		t.Fatalf("JSON Schema ingest: %v; want 5 rows, 1 quarantined", s)
	}
	got = duckQueryRows(t, fmt.Sprintf(`select id, page, tags[1], who.user, who.known from read_parquet([%s], hive_partitioning=false) order by id`,
		quotedPaths(lines(mustSluice(t, "files", jsonLoc).stdout))))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("DuckDB reads the JSON Schema table as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A wrong password is the registry's refusal, in one line, the
	// password in no output.
	wrong := sluice(t, []string{"SCHEMA_REGISTRY_USERNAME=" + user, "SCHEMA_REGISTRY_PASSWORD=wrong-" + pass}, "init", filepath.Join(dir, "x"),
		"--schema-from-registry", "json-value", "--schema-registry", reg.URL())
	failsWithOneLine(t, wrong, "schema registry", "Unauthorized")
	if strings.Contains(wrong.stdout+wrong.stderr, pass) {
		t.Errorf("the registry password shows: %s", wrong.stderr)
	}
}
