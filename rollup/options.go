package rollup

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// Func is a measure's aggregate function.
type Func string

// The measure functions. Sum is a running total; the others are per-day
// values.
const (
	Sum    Func = "sum"
	SumDay Func = "sum_day"
	Count  Func = "count"
	Min    Func = "min"
	Max    Func = "max"
)

// Running tells whether the measure is a running total, which the snapshot
// gives a base value for.
func (f Func) Running() bool { return f == Sum }

// Measure is one output column: Name = Func(Column). Column is empty for
// Count.
type Measure struct {
	Name   string
	Func   Func
	Column string
	// float is set once the column is known to be float64: the
	// measure's values and output column are float64 then. dec is set
	// for a decimal column, of type src: sums are exact, in 128 bits.
	float, dec bool
	src        catalog.Type
}

// String renders the measure as the command line writes it.
func (m Measure) String() string { return fmt.Sprintf("%s=%s(%s)", m.Name, m.Func, m.Column) }

var measureSyntax = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(sum|sum_day|count|min|max)\(\s*([A-Za-z_][A-Za-z0-9_]*)?\s*\)$`)

// ParseMeasure parses "name=sum(col)", "name=count()", "name=min(col)",
// "name=max(col)" or "name=sum_day(col)".
func ParseMeasure(s string) (Measure, error) {
	g := measureSyntax.FindStringSubmatch(strings.TrimSpace(s))
	if g == nil {
		return Measure{}, fmt.Errorf("measure %q: want name=sum(col), name=count(), name=min(col), name=max(col) or name=sum_day(col)", s)
	}
	m := Measure{Name: g[1], Func: Func(g[2]), Column: g[3]}
	if m.Func == Count && m.Column != "" {
		return Measure{}, fmt.Errorf("measure %q: count() takes no column", s)
	}
	if m.Func != Count && m.Column == "" {
		return Measure{}, fmt.Errorf("measure %q: %s needs a column", s, m.Func)
	}
	return m, nil
}

// Options say what to roll up. Source, Snapshot, Keys, Time and Measures
// are required.
type Options struct {
	// Source is the events table's location.
	Source string
	// Snapshot is the snapshot's location: a sluice table, a Parquet file
	// (a location ending in .parquet) or a CSV file with a header line
	// (.csv).
	Snapshot string
	// Keys are the key columns, in output order.
	Keys []string
	// Time is the events' date or timestamp column.
	Time string
	// Measures are the output's measure columns, in output order.
	Measures []Measure
	// Through is the last output day (its date; the clock part is
	// ignored). Zero: the last event day.
	Through time.Time
	// Location is the time zone whose days a timestamp is counted in.
	// Nil: UTC.
	Location *time.Location
	// Full recomputes the whole table whatever the output holds.
	Full bool
	// RunID is recorded in the output's manifest.
	RunID string
	// Logger receives one line per phase; nil: none.
	Logger *slog.Logger
	// Progress, when set, is told the bytes of the source's files read so
	// far and the bytes of those the run reads, after each file, from
	// the goroutine that called Run. A run that restarts (it lost the
	// commit race) starts again from 0.
	Progress func(bytesDone, bytesTotal int64)
}

// Validate names every bad field.
func (o Options) Validate() error {
	var errs []error
	if o.Source == "" {
		errs = append(errs, errors.New("source: required"))
	}
	if o.Snapshot == "" {
		errs = append(errs, errors.New("snapshot: required"))
	}
	if len(o.Keys) == 0 {
		errs = append(errs, errors.New("key: at least one key column is required"))
	}
	if o.Time == "" {
		errs = append(errs, errors.New("time: required"))
	}
	if len(o.Measures) == 0 {
		errs = append(errs, errors.New("measure: at least one is required"))
	}
	seen := map[string]string{}
	name := func(kind, n string) {
		l := strings.ToLower(n)
		if prev, ok := seen[l]; ok {
			errs = append(errs, fmt.Errorf("%s %q: the output already has a column %q (names are unique regardless of case)", kind, n, prev))
		}
		seen[l] = n
	}
	name("column", "date")
	for _, k := range o.Keys {
		name("key", k)
	}
	for _, m := range o.Measures {
		name("measure", m.Name)
	}
	return errors.Join(errs...)
}

// spec is the canonical text of the options that shape the output table:
// a change of any of them means a full recompute.
func (o Options) spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "keys=%s;time=%s;tz=%s", strings.Join(o.Keys, ","), o.Time, o.location())
	for _, m := range o.Measures {
		b.WriteString(";" + m.String())
	}
	return b.String()
}

func (o Options) location() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

// specDiff says how two spec() texts differ, part by part: "measures:
// was a=sum(x), b=count(), now a=sum(x)".
func specDiff(was, now string) string {
	parse := func(s string) (map[string]string, []string) {
		kv, measures := map[string]string{}, []string(nil)
		for _, part := range strings.Split(s, ";") {
			if k, v, ok := strings.Cut(part, "="); ok && (k == "keys" || k == "time" || k == "tz") {
				kv[k] = v
			} else if part != "" {
				measures = append(measures, part)
			}
		}
		return kv, measures
	}
	wkv, wm := parse(was)
	nkv, nm := parse(now)
	var diffs []string
	for _, k := range []string{"keys", "time", "tz"} {
		if wkv[k] != nkv[k] {
			diffs = append(diffs, fmt.Sprintf("%s: was %s, now %s", k, orNone(wkv[k]), orNone(nkv[k])))
		}
	}
	if w, n := strings.Join(wm, ", "), strings.Join(nm, ", "); w != n {
		diffs = append(diffs, fmt.Sprintf("measures: was %s, now %s", orNone(w), orNone(n)))
	}
	if len(diffs) == 0 {
		return "the output's columns differ from those these options make"
	}
	return strings.Join(diffs, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
