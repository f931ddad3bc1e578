package rollup

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// job is the options resolved against the source's schema.
type job struct {
	o       Options
	keyCols []catalog.Column
	timeCol catalog.Column
	// mCols[m] is measure m's column (its name is the source column's;
	// Name empty for count()).
	mCols []catalog.Column
	// byDay tells whether the source is partitioned by the day of the
	// time column, so that a partition names the UTC day of its events.
	byDay bool
	out   catalog.Schema
}

// keyKinds are the types a key column may have.
var keyKinds = map[catalog.Kind]bool{catalog.KindInt32: true, catalog.KindInt64: true, catalog.KindBool: true,
	catalog.KindDate: true, catalog.KindString: true, catalog.KindUUID: true, catalog.KindBinary: true}

func newJob(o Options, src string, s catalog.Schema, spec catalog.PartitionSpec) (*job, error) {
	j := &job{o: o}
	for _, k := range o.Keys {
		c, ok := s.Column(k)
		if !ok {
			return nil, fmt.Errorf("source %s has no key column %q", src, k)
		}
		if !keyKinds[c.Type.Kind] {
			return nil, fmt.Errorf("source %s: key column %q is %s: a key is an integer, string, uuid, bool, date or binary", src, k, c.Type)
		}
		j.keyCols = append(j.keyCols, c)
	}
	c, ok := s.Column(o.Time)
	if !ok {
		return nil, fmt.Errorf("source %s has no time column %q", src, o.Time)
	}
	if c.Type.Kind != catalog.KindDate && c.Type.Kind != catalog.KindTimestamp {
		return nil, fmt.Errorf("source %s: time column %q is %s: want date or timestamp", src, o.Time, c.Type)
	}
	j.timeCol = c
	for _, m := range o.Measures {
		if m.Func == Count {
			j.mCols = append(j.mCols, catalog.Column{})
			continue
		}
		c, ok := s.Column(m.Column)
		if !ok {
			return nil, fmt.Errorf("source %s has no column %q for measure %s", src, m.Column, m)
		}
		if !numeric(c.Type.Kind) && c.Type.Kind != catalog.KindDecimal {
			return nil, fmt.Errorf("source %s: measure %s is over column %q, which is %s: want int32, int64, float64 or decimal", src, m, m.Column, c.Type)
		}
		if c.Type.Kind == catalog.KindDecimal && c.Type.Precision > 18 {
			return nil, fmt.Errorf("source %s: measure %s is over column %q, which is %s: rollup aggregates decimals of up to 18 digits", src, m, m.Column, c.Type)
		}
		j.mCols = append(j.mCols, c)
	}
	// The measures as the run uses them: each knows whether it is over
	// a float64 column.
	ms := append([]Measure(nil), o.Measures...)
	for m := range ms {
		ms[m].float = j.mCols[m].Type.Kind == catalog.KindFloat64
		ms[m].dec, ms[m].src = j.mCols[m].Type.Kind == catalog.KindDecimal, j.mCols[m].Type
	}
	j.o.Measures = ms
	j.byDay = len(spec.Fields) == 1 && spec.Fields[0].Name == "date" && spec.Fields[0].Transform == "day" && spec.Fields[0].Source == o.Time
	j.out = outputSchema(j.keyCols, ms)
	return j, nil
}

// outputSchema is the keys, date, then the measures: int64 (float64 for
// a measure over a float64 column; count() is int64), NULL for a min or
// max of a day without values.
func outputSchema(keys []catalog.Column, ms []Measure) catalog.Schema {
	cols := append([]catalog.Column(nil), keys...)
	cols = append(cols, catalog.Column{Name: "date", Type: catalog.Type{Kind: catalog.KindDate}})
	for _, m := range ms {
		cols = append(cols, catalog.Column{Name: m.Name, Type: m.valueType(), Nullable: m.Func == Min || m.Func == Max})
	}
	return catalog.Schema{Columns: cols}
}

func parseDay(s string) (int64, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, false
	}
	return dayOfDate(t), true
}

// margin is how many days a UTC day's events may fall from it in the
// rollup's time zone.
func (j *job) margin() int64 {
	if j.o.location() == time.UTC || j.timeCol.Type.Kind == catalog.KindDate {
		return 0
	}
	return 1
}

// checkpointKey is the output manifest's checkpoint a rollup keeps its
// state under.
const checkpointKey = "rollup"

// state is what the output reflects: written with every rollup commit.
type state struct {
	Source string `json:"source"`
	// SourceTable names the table a source of another format is (its
	// identity: "delta:" and a Delta table's id); empty for a sluice
	// table.
	SourceTable   string `json:"source_table,omitempty"`
	SourceVersion int64  `json:"source_version"`
	Snapshot      string `json:"snapshot"`
	Spec          string `json:"spec"`
	Through       string `json:"through"`
}

func readState(m *catalog.Manifest) (*state, json.RawMessage) {
	raw := m.Checkpoints[checkpointKey]
	if raw == nil {
		return nil, nil
	}
	var s state
	if json.Unmarshal(raw, &s) != nil {
		return nil, raw
	}
	return &s, raw
}

// changes is what the source's commits since the output's version changed.
type changes struct {
	earliest int64           // the earliest day (in the rollup's zone) that may have changed
	parts    map[string]bool // the source partitions those commits touched
	full     string          // not empty: a full recompute is needed, and why
	// byStats: the partitions do not name days (the source is not
	// partitioned by day of the time column): the days changed are the
	// ones the added and removed files' statistics span (changedDays).
	byStats bool
}

// sourceChanges reads the source's manifests after version from: a
// compaction changes no data and is skipped; any other commit's
// partitions name the UTC days that changed, or on a source not
// partitioned by day the partitions whose added and removed files say
// which days changed (byStats).
func (j *job) sourceChanges(versions []*catalog.Manifest) changes {
	ch := changes{earliest: math.MaxInt64, parts: map[string]bool{}}
	for _, m := range versions {
		if m.RolledBackTo != 0 {
			ch.full = fmt.Sprintf("the source was rolled back to version %d", m.RolledBackTo)
			return ch
		}
		if !m.Summary.DataChange {
			continue
		}
		if len(m.Summary.Partitions) == 0 && m.Summary.FilesAdded+m.Summary.FilesRemoved > 0 {
			ch.full = fmt.Sprintf("source version %d does not say which partitions it changed", m.Version)
			return ch
		}
		if !j.byDay {
			ch.byStats = true
			for _, p := range m.Summary.Partitions {
				ch.parts[p] = true
			}
			continue
		}
		for _, p := range m.Summary.Partitions {
			day, isDate := strings.CutPrefix(p, "date=")
			v, ok := parseDay(day)
			if !isDate || !ok {
				ch.full = fmt.Sprintf("source partition %q is not a day", p)
				return ch
			}
			ch.parts[p] = true
			ch.earliest = min(ch.earliest, v-j.margin())
		}
	}
	return ch
}

// valueType is the type of measure m's values: its output column's, and
// for a running total its base's.
// A decimal's sum is decimal(38, s); its min or max the column's type.
func (m Measure) valueType() catalog.Type {
	switch {
	case m.float && m.Func != Count:
		return catalog.Type{Kind: catalog.KindFloat64}
	case m.dec && (m.Func == Min || m.Func == Max):
		return m.src
	case m.dec && m.Func != Count:
		return catalog.Type{Kind: catalog.KindDecimal, Precision: sumPrecision, Scale: m.src.Scale}
	}
	return catalog.Type{Kind: catalog.KindInt64}
}

// wide tells whether measure m's cells are 128-bit decimal sums.
func (m Measure) wide() bool { return m.dec && (m.Func == Sum || m.Func == SumDay) }

// intSum tells an int64 sum or sum_day, whose cells may wrap (see sumInts).
func (m Measure) intSum() bool { return !m.dec && !m.float && (m.Func == Sum || m.Func == SumDay) }
