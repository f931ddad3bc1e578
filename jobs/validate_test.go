package jobs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

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
			`jobs.j.ingest.format: "xml": want jsonl, csv or parquet`},
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
