package ingest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

const nestedPathsSchema = "id:int64,s:struct<a:int64,b:string?,t:timestamp?>?,tags:list<string?>?," +
	"attrs:map<string,int64?>?,items:list<struct<a:int32?,b:string>>?,ml:map<string,list<int64>?>?,km:map<int32,string>?"

// nestedPathRecords are records the flat scanner reads whole, nested
// columns included.
var nestedPathRecords = []string{
	`{"id":1,"s":{"a":1,"b":"q\"\u00e9","t":"2024-03-01T00:00:00Z"},"tags":["p",null],"attrs":{"k":1,"n":null},"items":[{"a":1,"b":"x"},{"b":""}],"ml":{"x":[1,2],"y":[],"z":null},"km":{"7":"s"}}`,
	`{"id":2,"s":null,"tags":[],"attrs":{},"items":[],"ml":{},"km":{}}`,
	`{"id":3}`,
	`{"id":4, "s": {"a": 4, "zz": [1, {"y": 2}]}, "tags": [ "a" ], "other": {"x": 1}}`,
}

// The flat scanner hands a nested column's value on as text, parsed once
// by the column's decoder; fastjson's tree hands on its value. Both give
// the same row, and the same reason for a bad value.
func TestNestedFastPathMatchesTree(t *testing.T) {
	schema, err := catalog.ParseSchema(nestedPathsSchema)
	if err != nil {
		t.Fatal(err)
	}
	d := newSoloDecoder(schema, DefaultOptions().withDefaults())
	bad := []string{
		`{"id":5,"items":[{"b":"x"},{"b":null}]}`,
		`{"id":6,"ml":{"k":[1,"two"]}}`,
		`{"id":7,"km":{"x":"y"}}`,
		`{"id":8,"tags":"x"}`,
	}
	for _, rec := range append(nestedPathRecords, bad...) {
		if !d.scan.scan([]byte(rec), d.flat) {
			t.Errorf("%s: the flat scanner gave up", rec)
			continue
		}
		fast, tree := make([]any, len(schema.Columns)), make([]any, len(schema.Columns))
		errFast := d.jsonRow([]byte(rec), fast)
		errTree := d.treeRow([]byte(rec), tree)
		if fmt.Sprint(errFast) != fmt.Sprint(errTree) || !reflect.DeepEqual(fast, tree) {
			t.Errorf("%s:\nflat scan %v %v\ntree      %v %v", rec, fast, errFast, tree, errTree)
		}
	}
}

// BenchmarkDecodeJSONLineNested measures decoding records with struct,
// list and map columns, on the flat scanner's path.
func BenchmarkDecodeJSONLineNested(b *testing.B) {
	schema, err := catalog.ParseSchema(nestedPathsSchema)
	if err != nil {
		b.Fatal(err)
	}
	d := newDecoder(schema, DefaultOptions())
	row := make([]any, len(schema.Columns))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.jsonRow([]byte(nestedPathRecords[i%len(nestedPathRecords)]), row); err != nil {
			b.Fatal(err)
		}
	}
}
