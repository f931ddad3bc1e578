package iceberg

import (
	"math"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// metrics are the per-column statistics of one data file, by Iceberg
// field id, as Iceberg manifests carry them for pruning.
type metrics struct {
	values, nulls map[int]int64
	lower, upper  map[int][]byte
}

// columnMetrics maps the statistics the sluice manifest keeps for file f
// (each top-level column's min, max and null count, read from its footer
// when it was committed) onto the Iceberg schema sch. A bound Iceberg
// cannot take as is is left out, never guessed: a truncated string or
// binary bound is still a bound (a prefix below every value, or one
// rounded up above), a missing one is missing, a NaN is not one.
func columnMetrics(f catalog.DataFile, s catalog.Schema, sch *ice.Schema) metrics {
	m := metrics{values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}}
	for _, c := range s.Columns {
		st, ok := f.Columns[c.Name]
		if !ok || c.Type.Nested() {
			continue
		}
		field, ok := sch.FindFieldByName(c.Name)
		if !ok {
			continue
		}
		m.values[field.ID] = f.Rows
		m.nulls[field.ID] = st.NullCount
		if b, ok := boundBytes(c.Type, field.Type, st.Min); ok {
			m.lower[field.ID] = b
		}
		if b, ok := boundBytes(c.Type, field.Type, st.Max); ok {
			m.upper[field.ID] = b
		}
	}
	return m
}

// boundBytes is a bound's Iceberg single-value binary form, from its
// sluice text (see pqio.FormatValue); false when there is none to give.
func boundBytes(t catalog.Type, it ice.Type, text *string) ([]byte, bool) {
	if text == nil {
		return nil, false
	}
	v, err := pqio.ParseValue(t, *text)
	if err != nil {
		return nil, false
	}
	var lit ice.Literal
	switch x := v.(type) {
	case string:
		if t.Kind == catalog.KindDecimal {
			if lit, err = ice.StringLiteral(x).To(it); err != nil {
				return nil, false
			}
		} else {
			lit = ice.StringLiteral(x)
		}
	case int32:
		lit = ice.Int32Literal(x)
	case int64:
		lit = ice.Int64Literal(x)
	case float64:
		if math.IsNaN(x) {
			return nil, false
		}
		lit = ice.Float64Literal(x)
	case bool:
		lit = ice.BoolLiteral(x)
	case []byte:
		lit = ice.BinaryLiteral(x)
	case time.Time:
		if t.Kind == catalog.KindDate {
			lit = ice.DateLiteral(ice.Date(x.Unix() / 86400))
		} else {
			lit = ice.TimestampLiteral(ice.Timestamp(x.UnixMicro()))
		}
	default:
		return nil, false
	}
	b, err := lit.MarshalBinary()
	return b, err == nil
}
