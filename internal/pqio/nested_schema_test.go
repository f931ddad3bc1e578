package pqio

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The schema string's nested types parse, print back as written, and
// survive a manifest's JSON; bad ones fail naming what is wrong.
func TestParseNestedSchema(t *testing.T) {
	for _, s := range []string{
		"s:struct<a:int64,b:string?>",
		"s:struct<a:int64,b:string?>?",
		"tags:list<string>",
		"tags:list<string?>?",
		"attrs:map<string,int64?>",
		"deep:list<struct<x:int32?,y:list<map<string,decimal(10,2)?>?>?>?>?",
		"m:map<int64,list<int32?>?>,id:int64",
	} {
		sc, err := ParseSchema(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := sc.String(); got != s {
			t.Errorf("%s printed back as %s", s, got)
		}
		b, err := json.Marshal(sc)
		if err != nil {
			t.Fatal(err)
		}
		var back Schema
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: JSON %s does not read back: %v", s, b, err)
		}
		if back.String() != s {
			t.Errorf("%s: JSON %s reads back as %s", s, b, back)
		}
	}
	sc := pqSchema(t, "s:struct<a:int64,b:string?>?")
	c := sc.Columns[0]
	if !c.Nullable || c.Type.Kind != KindStruct || len(c.Type.Fields) != 2 || c.Type.Fields[0].Nullable || !c.Type.Fields[1].Nullable {
		t.Errorf("parsed as %+v", c)
	}
	for bad, why := range map[string]string{
		"s:struct<>":                          "at least one field",
		"s:struct<a:int64,A:string>":          `"a" and "A" differ only in case`,
		"s:struct<a:int64,a:string>":          `"a" appears twice`,
		"s:struct<int64>":                     "want name:type",
		"l:list<int64,string>":                "want list<type>",
		"m:map<string?,int64>":                "a map's key cannot be nullable",
		"m:map<string>":                       "want map<keytype,valuetype>",
		"l:list<wat>":                         `unknown type "wat"`,
		"s:struct<a:list<int64>":              "no closing '>'",
		"x:struct<a:struct<b:bad>>":           `field "a": field "b": unknown type "bad"`,
		"x:struct<a:struct<b:int64,B:int64>>": `"b" and "B" differ only in case`,
	} {
		_, err := ParseSchema(bad)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: got %v, want an error saying %q", bad, err, why)
		}
	}
}

// Manifests written before nested types, and flat types, read as before.
func TestFlatTypeJSONUnchanged(t *testing.T) {
	var sc Schema
	old := `{"columns":[{"name":"id","type":"int64"},{"name":"amt","type":"decimal(10,2)","nullable":true}]}`
	if err := json.Unmarshal([]byte(old), &sc); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sc)
	if string(b) != old {
		t.Errorf("an old manifest's schema re-encodes as %s, want %s", b, old)
	}
}

func TestLeaves(t *testing.T) {
	sc := pqSchema(t, "id:int64,s:struct<a:int64,b:list<struct<x:int32,y:string?>>?>,m:map<string,int64?>")
	var got []string
	for _, c := range sc.Columns {
		for _, l := range c.Leaves() {
			got = append(got, l.Path+":"+l.Type.String())
		}
	}
	want := "id:int64 s.a:int64 s.b.element.x:int32 s.b.element.y:string m.key:string m.value:int64"
	if strings.Join(got, " ") != want {
		t.Errorf("leaves %v, want %s", got, want)
	}
}

// Compatibility of nested columns: a nullable field added to a struct is
// compatible, leaves widen as flat columns do, anything else is refused
// naming the column's path.
func TestCheckCompatibleNested(t *testing.T) {
	for name, tc := range map[string]struct {
		table, file string
		refused     string
	}{
		"the same":                        {"s:struct<a:int64,b:string?>", "s:struct<a:int64,b:string?>", ""},
		"a nullable field added":          {"s:struct<a:int64,b:string?>", "s:struct<a:int64>", ""},
		"a required field added":          {"s:struct<a:int64,b:string>", "s:struct<a:int64>", `column "s.b" (string, not nullable) is missing from the file`},
		"a field the table lacks":         {"s:struct<a:int64>", "s:struct<a:int64,z:bool>", `column "s.z" (bool) is not in the table`},
		"a leaf widens":                   {"s:struct<a:int64>", "s:struct<a:int32>", ""},
		"a leaf does not narrow":          {"s:struct<a:int32>", "s:struct<a:int64>", `column "s.a": the file has int64, the table int32`},
		"a list element widens":           {"l:list<decimal(20,4)>", "l:list<decimal(10,2)>", ""},
		"a list element of another type":  {"l:list<string>", "l:list<int64>", `column "l.element": the file has int64, the table string`},
		"a map value widens":              {"m:map<string,int64?>", "m:map<string,int32?>", ""},
		"a map key of another type":       {"m:map<string,int64>", "m:map<int32,int64>", `column "m.key"`},
		"a date in a struct":              {"s:struct<d:timestamp>", "s:struct<d:date>", `column "s.d": the file has date, the table timestamp (a date is never read as a timestamp`},
		"deep":                            {"l:list<struct<a:int64,b:list<int64>?>>", "l:list<struct<a:int32>>", ""},
		"deep refused":                    {"l:list<struct<a:int64,b:list<int64>?>>", "l:list<struct<a:int32,b:list<string>>>", `column "l.element.b.element": the file has string, the table int64`},
		"a struct is not a list":          {"x:list<int64>", "x:struct<a:int64>", `column "x": the file has struct<a:int64>, the table list<int64>`},
		"a flat column is not a struct":   {"x:struct<a:int64>", "x:int64", `column "x": the file has int64, the table struct<a:int64>`},
		"nullable in the file, not table": {"l:list<int64>", "l:list<int64?>?", ""},
		"a nested column the file lacks":  {"a:int64,s:struct<a:int64>?", "a:int64", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckCompatible(pqSchema(t, tc.table), pqSchema(t, tc.file), "f.parquet")
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Errorf("accepted, want refused with %q", tc.refused)
			case tc.refused != "" && (!errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("error %v\nwant ErrIncompatibleSchema containing %q", err, tc.refused)
			}
		})
	}
}

func TestMergeSchemasNested(t *testing.T) {
	for name, tc := range map[string]struct {
		a, b, want, refused string
	}{
		"struct fields united":  {"s:struct<a:int32,b:string>", "s:struct<c:bool,a:int64>", "s:struct<a:int64,b:string?,c:bool?>", ""},
		"list elements widened": {"l:list<int32>", "l:list<int64?>", "l:list<int64?>", ""},
		"map values widened":    {"m:map<string,decimal(10,2)>", "m:map<string,int64>", "m:map<string,decimal(21,2)>", ""},
		"list and struct":       {"x:list<int32>", "x:struct<a:int32>", "", `column "x"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := MergeSchemas(pqSchema(t, tc.a), pqSchema(t, tc.b))
			if tc.refused != "" {
				if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("got %v (%s), want ErrIncompatibleSchema containing %q", err, got, tc.refused)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
			for _, s := range []string{tc.a, tc.b} {
				if err := CheckCompatible(got, pqSchema(t, s), "x"); err != nil {
					t.Errorf("%s does not read as the merged %s: %v", s, got, err)
				}
			}
		})
	}
}
