package ingest

import (
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest/wire"
)

// How a registered schema's records go into a table: as they are
// (widened per column), into a wider table, or to the quarantine.
func TestRegistrySchemaFit(t *testing.T) {
	table, err := catalog.ParseSchema("id:int64,name:string,qty:int64,note:string?")
	if err != nil {
		t.Fatal(err)
	}
	rec := func(fields string) string {
		return `{"type":"record","name":"E","fields":[` + fields + `]}`
	}
	for _, c := range []struct {
		what, schema string
		grow, reason string
		widens       bool
	}{
		{"the same", rec(`{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"qty","type":"long"}`), "", "", false},
		{"a narrower int", rec(`{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"qty","type":"int"}`), "", "", true},
		{"a new field", rec(`{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"qty","type":"long"},{"name":"extra","type":"int"}`),
			"extra:int32?", "", false},
		{"a required column gone", rec(`{"name":"id","type":"long"},{"name":"qty","type":"long"}`), "", `no column "name"`, false},
		{"a type changed", rec(`{"name":"id","type":"long"},{"name":"name","type":"long"},{"name":"qty","type":"long"}`), "", "an incompatible change", false},
	} {
		ws, err := wire.Parse(wire.Avro, c.schema, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		r := &registry{table: table}
		s := &regSchema{ws: ws}
		r.fit(7, s)
		switch {
		case c.reason != "":
			if !strings.Contains(s.reason, c.reason) || !strings.HasPrefix(s.reason, "schema id 7: ") || s.grow != nil {
				t.Errorf("%s: reason %q, grow %v; want a reason saying %q", c.what, s.reason, s.grow, c.reason)
			}
		case c.grow != "":
			if s.grow == nil || !strings.Contains(s.grow.String(), c.grow) || s.reason != "" {
				t.Errorf("%s: grow %v, reason %q; want a table with %s", c.what, s.grow, s.reason, c.grow)
			}
		default:
			if s.reason != "" || s.grow != nil || (s.widen[2] != nil) != c.widens {
				t.Errorf("%s: reason %q, grow %v, widens qty %v; want it to fit", c.what, s.reason, s.grow, s.widen[2] != nil)
			}
		}
	}
}

func TestRegistryURLs(t *testing.T) {
	for _, c := range []struct{ url, says string }{
		{"http://registry:8081", ""},
		{"https://registry.example.com/sr", ""},
		{"registry:8081", "want http(s)"},
		{"https://u:SECRETPW@registry", "never in its URL"},
	} {
		err := checkRegistryURL(c.url)
		if (c.says == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "SECRETPW"))) {
			t.Errorf("%s: %v; want %q", c.url, err, c.says)
		}
	}
	for _, o := range []Options{{Format: FormatAvro}, {SchemaRegistry: "http://r", Format: FormatCSV}} {
		if o.Validate() == nil {
			t.Errorf("%+v is valid", o)
		}
	}
}
