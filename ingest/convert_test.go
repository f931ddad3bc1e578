package ingest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// decodeAll decodes one value of column ts (a timestamp, or a date) on
// every text path: a JSON field as the flat scan reads it, the same field
// in a record only fastjson's tree reads, and a CSV field. It returns the
// value each path made, or its reason.
func decodeAll(t *testing.T, typ, unit, jsonValue string) map[string]string {
	t.Helper()
	schema, err := catalog.ParseSchema("ts:" + typ)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.EpochUnit = EpochUnit(unit)
	d := newDecoder(schema, o)
	out := map[string]string{}
	show := func(row []any, bad error) string {
		if bad != nil {
			return "bad: " + bad.Error()
		}
		return row[0].(time.Time).UTC().Format(time.RFC3339Nano)
	}
	for path, rec := range map[string]string{
		"flat": `{"ts":` + jsonValue + `}`,
		"tree": `{"ts":` + jsonValue + `,"nested":[1]}`,
	} {
		r := d.decodeJSON(rawRecord{b: []byte(rec), size: len(rec)})
		out[path] = show(r.row, r.bad)
	}
	csvFile := "ts\n" + strings.Trim(jsonValue, `"`) + "\n"
	err = d.decodeCSV(context.Background(), strings.NewReader(csvFile), func(_ int64, _ []byte, row []any, bad error) error {
		out["csv"] = show(row, bad)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every text path takes one range of timestamps and dates, 0001-01-01
// through 9999-12-31 UTC, and quarantines what lies outside it with a
// reason: an epoch number past the end no longer makes a date=10000-01-01
// partition that the RFC 3339 path would refuse (issue 13, item 7).
func TestTimestampsOutsideTheCalendarAreQuarantinedOnEveryPath(t *testing.T) {
	cases := []struct {
		name, typ, unit, value string
		want                   string // the value made, or "" for out of range
	}{
		{"the last second as epoch seconds", "timestamp", "s", `253402300799`, "9999-12-31T23:59:59Z"},
		{"the second after as epoch seconds", "timestamp", "s", `253402300800`, ""},
		{"the first second as epoch seconds", "timestamp", "s", `-62135596800`, "0001-01-01T00:00:00Z"},
		{"the second before as epoch seconds", "timestamp", "s", `-62135596801`, ""},
		{"a fraction of a second within the range", "timestamp", "s", `253402300799.5`, "9999-12-31T23:59:59.5Z"},
		{"a fraction of a second past it", "timestamp", "s", `253402300800.5`, ""},
		{"epoch seconds in a string", "timestamp", "s", `"253402300800"`, ""},
		{"epoch milliseconds past the end", "timestamp", "ms", `253402300800000`, ""},
		{"epoch microseconds at the end", "timestamp", "us", `253402300799999999`, "9999-12-31T23:59:59.999999Z"},
		{"epoch microseconds past the end", "timestamp", "us", `253402300800000000`, ""},
		{"an epoch overflowing int64 microseconds", "timestamp", "s", `9223372036854775807`, ""},
		{"the last microsecond in RFC 3339", "timestamp", "s", `"9999-12-31T23:59:59.999999Z"`, "9999-12-31T23:59:59.999999Z"},
		{"an offset carrying into year 10000", "timestamp", "s", `"9999-12-31T23:00:00-05:00"`, ""},
		{"an offset carrying back into year 0", "timestamp", "s", `"0001-01-01T00:30:00+01:00"`, ""},
		{"an offset within the range", "timestamp", "s", `"0001-01-01T01:30:00+01:00"`, "0001-01-01T00:30:00Z"},
		{"year 0000 in RFC 3339", "timestamp", "s", `"0000-06-01T00:00:00Z"`, ""},
		{"year 0000 as a date", "date", "s", `"0000-06-01"`, ""},
		{"the last date", "date", "s", `"9999-12-31"`, "9999-12-31T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for path, got := range decodeAll(t, c.typ, c.unit, c.value) {
				switch {
				case c.want != "" && got != c.want:
					t.Errorf("%s: %s, want %s", path, got, c.want)
				case c.want == "" && !strings.Contains(got, "outside 0001-01-01 through 9999-12-31 (UTC)"):
					t.Errorf("%s: %s, want it quarantined as out of range", path, got)
				}
			}
		})
	}
}

// Every scalar type and the nested ones over them are types ingest
// converts to; a kind it does not know is refused with one line naming
// the column.
func TestColumnTypesChecked(t *testing.T) {
	nested, err := catalog.ParseSchema("id:int64,ctx:struct<a:int64,b:list<map<string,uuid?>>?>?")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkColumnTypes(nested); err != nil {
		t.Fatalf("nested columns: %v", err)
	}
	flat, err := catalog.ParseSchema(flatSchema)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkColumnTypes(flat); err != nil {
		t.Fatalf("every scalar type: %v", err)
	}
	bad := catalog.Schema{Columns: []catalog.Column{{Name: "ctx", Type: catalog.StructOf(catalog.Column{Name: "v", Type: catalog.Type{Kind: "variant"}})}}}
	if err := checkColumnTypes(bad); err == nil || err.Error() != "column ctx: column v: type variant is not supported by ingest" {
		t.Fatalf("got %v, want column ctx refused", err)
	}
}
