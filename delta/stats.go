package delta

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/internal/pqio"
)

// defaultIndexedCols is how many leaf columns Delta writers collect
// statistics for when delta.dataSkippingNumIndexedCols is unset.
const defaultIndexedCols = 32

// fileStats is an add action's stats: the row count and, per column,
// bounds and null counts, nested as the columns' structs nest.
type fileStats struct {
	NumRecords int64          `json:"numRecords"`
	MinValues  map[string]any `json:"minValues,omitempty"`
	MaxValues  map[string]any `json:"maxValues,omitempty"`
	NullCount  map[string]any `json:"nullCount,omitempty"`
}

// statsColumns says which columns of a table get statistics, as its
// configuration sets it: delta.dataSkippingStatsColumns (a list of column
// names, nested ones dotted), else the first
// delta.dataSkippingNumIndexedCols leaf columns (32; -1 for all).
type statsColumns struct {
	names map[string]bool // lower case; nil: by count
	left  int             // leaves still to index; < 0: all
}

func newStatsColumns(conf map[string]string) *statsColumns {
	if s := strings.TrimSpace(conf["delta.dataSkippingStatsColumns"]); s != "" {
		names := map[string]bool{}
		for n := range strings.SplitSeq(s, ",") {
			names[strings.ToLower(strings.Trim(strings.TrimSpace(n), "`"))] = true
		}
		return &statsColumns{names: names}
	}
	n := defaultIndexedCols
	if v, err := strconv.Atoi(conf["delta.dataSkippingNumIndexedCols"]); err == nil {
		n = v
	}
	return &statsColumns{left: n}
}

// take reports whether the leaf at path gets statistics, counting it.
func (c *statsColumns) take(path string) bool {
	if c.names != nil {
		lower := strings.ToLower(path)
		for p := lower; ; {
			if c.names[p] {
				return true
			}
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				return false
			}
			p = p[:i] // a struct named takes its fields
		}
	}
	if c.left == 0 {
		return false
	}
	if c.left > 0 {
		c.left--
	}
	return true
}

// statsJSON gives a written file's statistics as Delta writers record
// them in an add action: numRecords; minValues and maxValues of numbers,
// strings, dates, timestamps and decimals (not of booleans, binaries or
// inside lists and maps, as Spark collects none); nullCount of every
// leaf. A string bound sluice truncated stays a bound: the minimum a
// prefix, the maximum a prefix rounded up, or left out when it has none.
// Timestamps are kept to milliseconds, the minimum rounded down and the
// maximum up, so that both still bound the file's values.
func statsJSON(schema pqio.Schema, fs pqio.FileStats, conf map[string]string) string {
	out := fileStats{NumRecords: fs.Rows, MinValues: map[string]any{}, MaxValues: map[string]any{}, NullCount: map[string]any{}}
	cols := newStatsColumns(conf)
	for _, c := range schema.Columns {
		addStats(&out, cols, c.Name, []string{c.Name}, c.Type, fs)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "" // no stats: readers then skip nothing
	}
	return string(b)
}

// addStats adds the statistics of the column at path (its names from the
// top, dotted in key) to out.
func addStats(out *fileStats, cols *statsColumns, key string, path []string, t pqio.Type, fs pqio.FileStats) {
	if t.Kind == pqio.KindStruct {
		for _, f := range t.Fields {
			addStats(out, cols, key+"."+f.Name, append(path[:len(path):len(path)], f.Name), f.Type, fs)
		}
		return
	}
	if !cols.take(key) || t.Nested() {
		return // lists and maps: no statistics
	}
	cs, ok := fs.Columns[key]
	if !ok {
		return
	}
	setPath(out.NullCount, path, cs.NullCount)
	if cs.Min != nil {
		if v, ok := boundValue(t, *cs.Min, false); ok {
			setPath(out.MinValues, path, v)
		}
	}
	if cs.Max != nil {
		if v, ok := boundValue(t, *cs.Max, true); ok {
			setPath(out.MaxValues, path, v)
		}
	}
}

// setPath sets v at path in m, making the structs on the way.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = v
}

// statsTimeLayout is how Delta writers spell a timestamp bound.
const statsTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// boundValue is the JSON value of a bound given in sluice's canonical
// text; ok is false for a type Delta keeps no bound of, or a value JSON
// cannot hold (NaN).
func boundValue(t pqio.Type, s string, upper bool) (any, bool) {
	switch t.Kind {
	case pqio.KindString, pqio.KindUUID, pqio.KindDate:
		return s, true
	case pqio.KindInt32, pqio.KindInt64, pqio.KindDecimal:
		return json.Number(s), isNumber(s)
	case pqio.KindFloat64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	case pqio.KindTimestamp:
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, false
		}
		ms := ts.Truncate(time.Millisecond)
		if upper && ms.Before(ts) {
			ms = ms.Add(time.Millisecond)
		}
		return ms.UTC().Format(statsTimeLayout), true
	}
	return nil, false // booleans, binaries
}

func isNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}
