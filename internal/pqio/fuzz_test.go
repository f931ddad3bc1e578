package pqio

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseSchema: a schema string parses to a valid schema whose string
// form parses back to it, and that survives a JSON round trip (as
// manifests store it); or it fails. It asserts nothing about the syntax
// itself, so it covers whatever types ParseType learns.
// Its seeds, in testdata/fuzz/FuzzParseSchema, run in every `go test`.
func FuzzParseSchema(f *testing.F) {
	for _, s := range []string{
		"id:int64,name:string?,at:timestamp", "d:decimal(18,2),b:binary?,u:uuid,x:float64,y:bool,z:date,w:int32",
		"a:decimal(38,38)", "a:decimal(0,0)", "a:decimal(39,1)", "a:decimal( 5 , 2 )?", "a:int64,A:string", ":int64",
		"a", "a:", "a:int64??", " , ,a:string", "a:list<int64>", "a:struct<x:int64,y:string>", "a:map<string,int64>",
		"a:decimal(5,2", "a:decimal(5,2))", "a:decimal(-1,0)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseSchema(s)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("%q: parsed to an invalid schema: %v", s, err)
		}
		back, err := ParseSchema(sc.String())
		if err != nil {
			t.Fatalf("%q: its string %q does not parse: %v", s, sc.String(), err)
		}
		if !reflect.DeepEqual(back, sc) {
			t.Fatalf("%q: parsed %+v; its string %q parses to %+v", s, sc, sc.String(), back)
		}
		for _, c := range sc.Columns {
			ty, err := ParseType(c.Type.String())
			if err != nil || !reflect.DeepEqual(ty, c.Type) {
				t.Fatalf("%q: type %q parses to %+v, %v", s, c.Type.String(), ty, err)
			}
		}
		b, err := json.Marshal(sc)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var js Schema
		if err := json.Unmarshal(b, &js); err != nil || !reflect.DeepEqual(js, sc) {
			t.Fatalf("%q: JSON %s reads back as %+v, %v", s, b, js, err)
		}
	})
}
