package jobs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/scheduler"
)

// validate refuses, with the file, line and key, the options every run
// would refuse: before, validate passed them and each run failed.
func TestValidateRunsEachKindsFullValidation(t *testing.T) {
	const head = `lake: lake
tables:
  events: {location: lake/events}
  daily: {location: lake/daily}
jobs:
  j:
    schedule: "CRON_TZ=UTC @daily"
`
	cases := map[string]struct{ kind, want string }{
		"rollup measure avg": {`rollup: {out: daily, source: events, snapshot: s.csv, key: [id], time: ts, measure: "x=avg(id)"}`,
			`jobs.j.rollup.measure: `},
		"publish negative lock timeout": {`publish: {table: events, to: "postgres://u@h/db", as: events, lock_timeout: -5s}`,
			`jobs.j.publish.lock_timeout: -5s: want a duration above 0`},
		"publish bad scheme": {`publish: {table: events, to: "mysql://u@h/db", as: events}`,
			`jobs.j.publish.to: invalid warehouse URL: scheme "mysql"`},
		"publish bad name": {`publish: {table: events, to: "postgres://u@h/db", as: "x;drop"}`,
			`jobs.j.publish.as: invalid target name: "x;drop"`},
		"ingest negative max records": {`ingest: {table: events, from: landing, max_records: -5}`,
			`jobs.j.ingest.max_records: -5: want a whole number >= 1`},
		"ingest format xml": {`ingest: {table: events, from: landing, format: xml}`,
			`jobs.j.ingest.format: "xml": want jsonl, csv, parquet, avro, protobuf or json-sr`},
		"ingest bad until": {`ingest: {table: events, from: landing, until: tomorrow}`,
			`jobs.j.ingest.until: "tomorrow": want an RFC 3339 time`},
		"compact target huge": {`compact: {table: events, target_file_size: huge}`,
			`jobs.j.compact.target_file_size: "huge": want a size such as 256MiB`},
		"compact zero workers": {`compact: {table: events, workers: 0}`,
			`jobs.j.compact.workers: 0: want a whole number >= 1`},
		"rollup bad tz": {`rollup: {out: daily, source: events, snapshot: s.csv, key: [id], time: ts, measure: "x=sum(n)", tz: Mars/Base}`,
			`jobs.j.rollup.tz: "Mars/Base": not a time zone`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := head + "    " + c.kind + "\n"
			_, err := scheduler.Parse(filepath.Join(t.TempDir(), "p.yaml"), []byte(src), Kinds(Env{}), func(string) (string, bool) { return "", false })
			if !errors.Is(err, scheduler.ErrInvalid) {
				t.Fatalf("Parse: %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), "p.yaml:8:") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse error:\n%v\nwant one at p.yaml:8 containing %q", err, c.want)
			}
		})
	}
}

// A table the file says is a Delta table is compacted and vacuumed as
// one (its format given to compact's and vacuum's --format, unless the
// job says otherwise) and may be rollup's source or publish's table; any
// other job writing it is refused as not built, and so is a format the
// file cannot name.
func TestTableFormatReachesCompactAndVacuum(t *testing.T) {
	const head = `tables:
  events: {location: lake/events, format: delta}
  daily: {location: lake/daily}
jobs:
  j:
    schedule: "@daily"
`
	kinds := Kinds(Env{})
	parse := func(job string) (*scheduler.Pipeline, error) {
		return scheduler.Parse(filepath.Join(t.TempDir(), "p.yaml"), []byte(head+"    "+job+"\n"), kinds, func(string) (string, bool) { return "", false })
	}
	for job, want := range map[string]string{
		`compact: {table: events}`:                 "delta",
		`compact: {table: events, format: sluice}`: "sluice",
		`compact: {table: daily}`:                  "",
	} {
		p, err := parse(job)
		if err != nil {
			t.Fatalf("%s: %v", job, err)
		}
		built, errs := kinds["compact"].(*kind).build(p, p.Jobs["j"])
		if len(errs) > 0 {
			t.Fatalf("%s: %v", job, errs[0])
		}
		if got := built.(*Compact).Format; got != want {
			t.Errorf("%s: --format %q; want %q", job, got, want)
		}
	}
	p, err := parse(`vacuum: {table: events, retain: 200h}`)
	if err != nil {
		t.Fatal(err)
	}
	built, errs := kinds["vacuum"].(*kind).build(p, p.Jobs["j"])
	if len(errs) > 0 || built.(*Vacuum).Format != "delta" {
		t.Errorf("vacuum of a delta table: %v, %+v; want --format delta", errs, built)
	}
	for _, job := range []string{
		`rollup: {out: daily, source: events, snapshot: s.csv, key: [id], time: ts, measure: "x=sum(n)"}`,
		`publish: {table: events, to: "sqlite:///x.db", as: events}`,
	} {
		if _, err := parse(job); err != nil {
			t.Errorf("%s: %v; a job reading a delta table is valid", job, err)
		}
	}
	for job, says := range map[string]string{
		`ingest: {table: events, from: "in/*.jsonl"}`:                                                     "jobs.j.ingest.table: table events is a delta table: ingest on it is not built yet",
		`rollup: {out: events, source: daily, snapshot: s.csv, key: [id], time: ts, measure: "x=sum(n)"}`: "jobs.j.rollup.out: table events is a delta table: rollup on it is not built yet",
	} {
		if _, err := parse(job); !errors.Is(err, scheduler.ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v; want it refused saying %q", job, err, says)
		}
	}
	_, err = scheduler.Parse(filepath.Join(t.TempDir(), "p.yaml"), []byte("tables:\n  e: {location: x, format: hudi}\njobs: {}\n"), Kinds(Env{}), func(string) (string, bool) { return "", false })
	if !errors.Is(err, scheduler.ErrInvalid) || !strings.Contains(err.Error(), `tables.e.format: "hudi": want one of sluice, delta, iceberg`) {
		t.Errorf("format hudi: %v", err)
	}
}

// A table whose location names an Iceberg catalog's table is an Iceberg
// table: its compact and vacuum jobs get --format iceberg and a compact
// job compacts every partition (an interval's days are not its spec's);
// a job writing it is refused, and so is a location and format that
// disagree, or a schema given for it.
func TestIcebergTableInAPipeline(t *testing.T) {
	const loc = "iceberg+sqlite:///var/lib/lake/catalog.db#lake.events"
	kinds := Kinds(Env{})
	parse := func(tables, job string) (*scheduler.Pipeline, error) {
		yaml := "lake: /lake\ntables:\n" + tables + "jobs:\n  j:\n    schedule: \"@daily\"\n    " + job + "\n"
		return scheduler.Parse(filepath.Join(t.TempDir(), "p.yaml"), []byte(yaml), kinds, func(string) (string, bool) { return "", false })
	}
	tables := "  events: {location: \"" + loc + "\"}\n  daily: {location: /lake/daily}\n"
	p, err := parse(tables, `compact: {table: events}`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tables["events"].Format != "iceberg" {
		t.Errorf("format %q; want iceberg, from the location", p.Tables["events"].Format)
	}
	built, errs := kinds["compact"].(*kind).build(p, p.Jobs["j"])
	if len(errs) > 0 || built.(*Compact).Format != "iceberg" {
		t.Fatalf("compact: %v, %+v; want --format iceberg", errs, built)
	}
	compactInterval(built, p.Jobs["j"], scheduler.Interval{Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)})
	if c := built.(*Compact); len(c.Partitions) != 0 {
		t.Errorf("an interval scoped the Iceberg table's compaction to %v", c.Partitions)
	}
	p, err = parse(tables, `vacuum: {table: events, retain: 200h}`)
	if err != nil {
		t.Fatal(err)
	}
	if built, errs := kinds["vacuum"].(*kind).build(p, p.Jobs["j"]); len(errs) > 0 || built.(*Vacuum).Format != "iceberg" {
		t.Errorf("vacuum: %v, %+v; want --format iceberg", errs, built)
	}
	for _, c := range []struct{ tables, job, says string }{
		{tables, `ingest: {table: events, from: "in/*.jsonl"}`, "table events is an iceberg table: ingest on it is not built yet"},
		{tables, `publish: {table: events, to: "sqlite:///x.db", as: events}`, "table events is an iceberg table: publish on it is not built yet"},
		{"  events: {location: /lake/events, format: iceberg}\n", `compact: {table: events}`, "an Iceberg table is named by its catalog"},
		{"  events: {location: \"" + loc + "\", format: delta}\n", `compact: {table: events}`, `"delta": the location names an Iceberg table in its catalog`},
		{"  events: {location: \"" + loc + "\", schema: \"a:int64\"}\n", `compact: {table: events}`, "schema and partitioning are its catalog's"},
	} {
		if _, err := parse(c.tables, c.job); !errors.Is(err, scheduler.ErrInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %s: %v; want it refused saying %q", c.tables, c.job, err, c.says)
		}
	}
}
