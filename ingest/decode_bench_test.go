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

// BenchmarkDecodeJSONLineEvents measures a line of the events shape
// bench/ingest.sh uses by default: an escaped JSON payload string, a user
// agent, text with quotes and \u escapes, a nested object and an array
// kept in string columns.
func BenchmarkDecodeJSONLineEvents(b *testing.B) {
	schema, err := catalog.ParseSchema(eventsSchema)
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	lines := eventLines(1024)
	row := make([]any, len(schema.Columns))
	b.ReportAllocs()
	b.SetBytes(int64(len(lines[0])))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.jsonRow(lines[i%len(lines)], row); err != nil {
			b.Fatal(err)
		}
	}
}

// eventsSchema is the table of bench/ingest.sh's events records, whose
// nested object and array are kept in string columns.
const eventsSchema = "event_id:uuid,list_id:int64,subscriber_id:uuid,tally:int32,event_time:timestamp," +
	"payload:string,user_agent:string,subject:string,context:string,tags:string"

// eventLines makes n JSON lines of the events shape bench/ingest.sh uses
// by default (bench/genjsonl).
func eventLines(n int) [][]byte {
	subjects := []string{`Re: \"Ihre Bestellung\" ist unterwegs`, `caf\u00e9 cr\u00e8me: la s\u00e9lection d'\u00e9t\u00e9`,
		`\ud83d\ude80 Launch day! \ud83c\udf89`, `Your order #4242 has shipped`}
	lines := make([][]byte, n)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"event_id":"38b2df75-1089-4edd-90a9-%012x","list_id":%d,"subscriber_id":"0b4cf02c-22d9-4488-9cf1-%012x","tally":%d,"event_time":"2024-01-01T00:%02d:15.446116Z",`+
			`"payload":"{\"ip\":\"10.1.%d.3\",\"path\":\"/api/v1/items/%d\",\"status\":200,\"ms\":%d,\"ref\":\"email\"}",`+
			`"user_agent":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",`+
			`"subject":"%s","context":{"country":"DE","city":"München","device":{"type":"mobile","os":"iOS"},"campaign":%d},"tags":["promo","vip"]}`,
			i, 4000+i, i*7, i%10, i%60, i%256, i*13, i%2000, subjects[i%len(subjects)], i%500)
	}
	return lines
}
