package catalog

import (
	"fmt"
	"math"
	"time"
)

// PartitionOf returns the Hive partition folder and values of a row under
// spec; identity fields (values only in folder names) cannot be computed
// from a row and yield an error. To route many rows, use a Partitioner.
func PartitionOf(schema Schema, spec PartitionSpec, row []any) (string, map[string]*string, error) {
	return NewPartitioner(schema, spec).Of(row)
}

// Partitioner routes rows to their Hive partition folders, remembering
// each day's folder and values: building them is otherwise most of the
// cost of routing a row. Not safe for concurrent use.
type Partitioner struct {
	schema Schema
	spec   PartitionSpec
	cache  map[int64]partitionOf
	// dayCol is the column of a spec of one day field, else -1; last is
	// the partition of day lastDay, the last one routed by it (rows of a
	// batch mostly share a day); noDay before the first.
	dayCol  int
	last    partitionOf
	lastDay int64
}

// noDay is no day a time has: Unix seconds divided by 86400 stay far
// above it.
const noDay = math.MinInt64

type partitionOf struct {
	folder string
	vals   map[string]*string
}

// NewPartitioner returns a Partitioner for rows of schema under spec.
func NewPartitioner(schema Schema, spec PartitionSpec) *Partitioner {
	p := &Partitioner{schema: schema, spec: spec, cache: map[int64]partitionOf{}, dayCol: -1, lastDay: noDay}
	if len(spec.Fields) == 1 && spec.Fields[0].Transform == "day" {
		p.dayCol = p.sourceIndex(spec.Fields[0].Source)
	}
	return p
}

// Of returns the folder and values of row's partition. The values map is
// shared by every row of the partition: callers must not change it.
func (p *Partitioner) Of(row []any) (string, map[string]*string, error) {
	if len(p.spec.Fields) == 0 {
		return "", nil, nil
	}
	// One day field, the common case: cached by day.
	if idx := p.dayCol; idx >= 0 && idx < len(row) {
		if t, ok := row[idx].(time.Time); ok {
			day := t.Unix()
			if day < 0 {
				day -= 86399
			}
			day /= 86400
			if day == p.lastDay {
				return p.last.folder, p.last.vals, nil
			}
			if e, ok := p.cache[day]; ok {
				p.last, p.lastDay = e, day
				return e.folder, e.vals, nil
			}
			folder, vals, err := partitionOfRow(p.schema, p.spec, row)
			if err == nil && len(p.cache) < 1<<16 {
				p.cache[day] = partitionOf{folder, vals}
			}
			return folder, vals, err
		}
	}
	return partitionOfRow(p.schema, p.spec, row)
}

func (p *Partitioner) sourceIndex(name string) int {
	for i, c := range p.schema.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func partitionOfRow(schema Schema, spec PartitionSpec, row []any) (string, map[string]*string, error) {
	if len(spec.Fields) == 0 {
		return "", nil, nil
	}
	folder := ""
	vals := make(map[string]*string, len(spec.Fields))
	for _, f := range spec.Fields {
		if f.Transform != "day" {
			return "", nil, fmt.Errorf("partition field %q: rows cannot be routed to an identity partition", f.Name)
		}
		idx := -1
		for i, c := range schema.Columns {
			if c.Name == f.Source {
				idx = i
			}
		}
		if idx < 0 || idx >= len(row) {
			return "", nil, fmt.Errorf("partition field %q: no column %q", f.Name, f.Source)
		}
		var v *string
		switch x := row[idx].(type) {
		case time.Time:
			s := x.UTC().Format("2006-01-02")
			v = &s
		case nil:
		default:
			return "", nil, fmt.Errorf("partition field %q: column %q holds %T, want a time", f.Name, f.Source, row[idx])
		}
		vals[f.Name] = v
		seg := f.Name + "=" + HiveDefaultPartition
		if v != nil {
			seg = f.Name + "=" + hiveEscape(*v)
		}
		if folder != "" {
			folder += "/"
		}
		folder += seg
	}
	return folder, vals, nil
}
