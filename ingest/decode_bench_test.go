package ingest

import (
	"fmt"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// BenchmarkDecodeJSONLine measures decoding and validating one JSON line
// of the event shape bench/ingest.sh uses, into a row.
func BenchmarkDecodeJSONLine(b *testing.B) {
	schema, err := catalog.ParseSchema("event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp")
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	lines := make([][]byte, 1024)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"event_id":"38b2df75-1089-4edd-90a9-%012x","list_id":%d,"subscriber_id":"0b4cf02c-22d9-4488-9cf1-%012x","tally":%d,"event_time":"2024-01-01T00:%02d:15.446116Z"}`,
			i, 4000+i, i*7, i%10, i%60)
	}
	row := make([]any, len(schema.Columns))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.jsonRow(lines[i%len(lines)], row); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSONLineTree measures the same line with a nested field
// the table does not keep, which fastjson's tree reads rather than the
// flat scan.
func BenchmarkDecodeJSONLineTree(b *testing.B) {
	schema, err := catalog.ParseSchema("event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp")
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	lines := make([][]byte, 1024)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"event_id":"38b2df75-1089-4edd-90a9-%012x","list_id":%d,"subscriber_id":"0b4cf02c-22d9-4488-9cf1-%012x","tally":%d,"event_time":"2024-01-01T00:%02d:15.446116Z","tags":["a","b"]}`,
			i, 4000+i, i*7, i%10, i%60)
	}
	row := make([]any, len(schema.Columns))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.jsonRow(lines[i%len(lines)], row); err != nil {
			b.Fatal(err)
		}
	}
}
