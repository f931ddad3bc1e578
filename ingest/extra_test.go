package ingest_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
)

// newTableWithSchema creates a table of the given schema, partitioned by
// day(event_time).
func newTableWithSchema(t *testing.T, loc, schema string) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	tb, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := catalog.ParsePartitionSpec("day(event_time)", s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Create(ctx, s, spec, nil, "test"); err != nil {
		t.Fatal(err)
	}
	return tb
}

// extraByListID maps each row's list_id to its _extra value (the last
// column), "NULL" for NULL.
func extraByListID(t *testing.T, tb *catalog.Table) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, r := range rows(t, tb) {
		v := "NULL"
		if s, ok := r[len(r)-1].(string); ok {
			v = s
		}
		out[r[1].(int64)] = v
	}
	return out
}

func TestIngestExtraFieldsAreKeptInTheExtraColumnWhenTheTableHasOne(t *testing.T) {
	land := t.TempDir()
	put(t, land, "a.jsonl", []byte(
		`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000001","list_id":1,"tally":1,"event_time":"2024-01-31T10:00:00Z","extra":"kept"}`+"\n"+
			`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000002","list_id":2,"tally":1,"event_time":"2024-01-31T10:00:00Z"}`+"\n"+
			`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000003","list_id":3,"tally":1,"event_time":"2024-01-31T10:00:00Z",`+
			` "nested": {"b": [1, 2.50, "x\u0001\"y\"", null, true]}, "_extra": "its own", "note": "a column"}`+"\n"+
			`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000004","list_id":"four","tally":1,"event_time":"2024-01-31T10:00:00Z","extra":"bad row"}`+"\n"))
	put(t, land, "b.csv", []byte("list_id,event_time,event_id,tally,source,region\n"+
		"5,2024-01-31T11:00:00Z,6f1c3b9e-2a4d-4b8e-9c1f-000000000005,1,app,\"eu, west\"\n"))
	// A Parquet landing file has no extra fields to keep (one with columns
	// the table lacks fails whole, as without _extra).
	putParquet(t, land, "c.parquet", "event_id:uuid,list_id:int64,tally:int32,event_time:timestamp",
		[][]any{{"6f1c3b9e-2a4d-4b8e-9c1f-000000000006", int64(6), int32(1), time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)}})

	cases := map[string]struct {
		schema string
		want   map[int64]string
	}{
		"a nullable _extra holds the unknown fields, NULL when there are none": {
			schema: eventsSchema + ",_extra:string?",
			want: map[int64]string{
				1: `{"extra":"kept"}`,
				2: "NULL",
				3: `{"nested":{"b":[1,2.50,"x\u0001\"y\"",null,true]},"_extra":"its own"}`,
				5: `{"source":"app","region":"eu, west"}`,
				6: "NULL",
			},
		},
		"a required _extra holds {} when there are none": {
			schema: eventsSchema + ",_extra:string",
			want:   map[int64]string{1: `{"extra":"kept"}`, 2: `{}`, 5: `{"source":"app","region":"eu, west"}`, 6: `{}`},
		},
		"without an _extra column unknown fields are ignored": {
			schema: eventsSchema,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tb := newTableWithSchema(t, filepath.Join(t.TempDir(), "events"), c.schema)
			res := runOK(t, tb, land, ingest.Options{})
			if res.RecordsIn != 6 || res.RowsWritten != 5 || res.RecordsQuarantined != 1 {
				t.Fatalf("%+v", res)
			}
			got := extraByListID(t, tb)
			if len(got) != 5 {
				t.Fatalf("rows %v", got)
			}
			for id, want := range c.want {
				if got[id] != want {
					t.Errorf("list_id %d: _extra %s, want %s", id, got[id], want)
				}
			}
			if c.want == nil {
				for _, r := range rows(t, tb) {
					if len(r) != 5 {
						t.Fatalf("row %v: want the table's 5 columns", r)
					}
				}
			}
		})
	}
}

func TestIngestExtraColumnsOfParquetLandingFiles(t *testing.T) {
	ctx := context.Background()
	land := t.TempDir()
	ts := time.Date(2024, 1, 31, 12, 0, 0, 0, time.UTC)
	putParquet(t, land, "a.parquet", "device:string?,event_id:uuid,list_id:int64,tally:int32,event_time:timestamp,score:float64?,seen:date?,_extra:string?", [][]any{
		{"ios", "6f1c3b9e-2a4d-4b8e-9c1f-000000000001", int64(1), int32(1), ts, 0.5, time.Date(2024, 1, 30, 0, 0, 0, 0, time.UTC), `{"k":1}`},
		{nil, "6f1c3b9e-2a4d-4b8e-9c1f-000000000002", int64(2), int32(1), ts, nil, nil, nil},
	})

	tb := newTableWithSchema(t, filepath.Join(t.TempDir(), "events"), eventsSchema+",_extra:string?")
	runOK(t, tb, land, ingest.Options{})
	got := extraByListID(t, tb)
	want := map[int64]string{1: `{"device":"ios","score":0.5,"seen":"2024-01-30","_extra":"{\"k\":1}"}`, 2: "NULL"}
	if len(got) != 2 || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("_extra by list_id %v, want %v", got, want)
	}

	// Without an _extra column, such a file fails whole, naming the column.
	tb = newTable(t, filepath.Join(t.TempDir(), "events"))
	_, err := ingest.Run(ctx, tb, land, ingest.Options{})
	if !errors.Is(err, ingest.ErrFilesFailed) || !strings.Contains(err.Error(), `"device"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestIngestExtraFieldsOfKafkaValues(t *testing.T) {
	addrs := kafkaCluster(t, 1, "events")
	produce(t, producer(t, addrs, "events"), 1, [][]byte{
		[]byte(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000001","list_id":1,"tally":1,"event_time":"2024-01-31T10:00:00Z","ua":"curl/8"}`),
		[]byte(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-000000000002","list_id":2,"tally":1,"event_time":"2024-01-31T10:00:00Z"}`),
	})
	tb := newTableWithSchema(t, filepath.Join(t.TempDir(), "events"), eventsSchema+",_extra:string?")
	runOK(t, tb, "kafka://"+addrs+"/events", ingest.Options{})
	if got := extraByListID(t, tb); len(got) != 2 || got[1] != `{"ua":"curl/8"}` || got[2] != "NULL" {
		t.Fatalf("_extra by list_id %v", got)
	}
}
