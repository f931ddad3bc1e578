package iceberg

import (
	"errors"
	"fmt"

	ice "github.com/apache/iceberg-go"

	"github.com/sluice-data/sluice/internal/pqio"
)

// dataSchema is the schema of the data files sluice writes for an
// Iceberg table: its current schema's columns, in order, each with its
// Iceberg field id (nested fields, list elements, map keys and values
// too), since Iceberg readers resolve a Parquet column by its id. Types
// sluice's files do not hold as Iceberg asks are refused, naming the
// column: float (32-bit), uuid and fixed (fixed-length binaries),
// timestamp without a zone (sluice writes UTC-adjusted timestamps),
// nanosecond timestamps, time, variant and geo types.
func dataSchema(s *ice.Schema) (pqio.Schema, error) {
	var out pqio.Schema
	for _, f := range s.Fields() {
		c, err := dataColumn(f)
		if err != nil {
			return pqio.Schema{}, err
		}
		out.Columns = append(out.Columns, c)
	}
	return out, nil
}

// dataColumn is field f as a column of sluice's files.
func dataColumn(f ice.NestedField) (pqio.Column, error) {
	t, err := dataType(f.Type)
	if err != nil {
		return pqio.Column{}, fmt.Errorf("column %q: %w", f.Name, err)
	}
	return pqio.Column{Name: f.Name, Type: t, Nullable: !f.Required, ID: f.ID}, nil
}

// dataType is the sluice type an Iceberg type is written as.
func dataType(t ice.Type) (pqio.Type, error) {
	switch x := t.(type) {
	case ice.BooleanType:
		return pqio.Type{Kind: pqio.KindBool}, nil
	case ice.Int32Type:
		return pqio.Type{Kind: pqio.KindInt32}, nil
	case ice.Int64Type:
		return pqio.Type{Kind: pqio.KindInt64}, nil
	case ice.Float64Type:
		return pqio.Type{Kind: pqio.KindFloat64}, nil
	case ice.StringType:
		return pqio.Type{Kind: pqio.KindString}, nil
	case ice.BinaryType:
		return pqio.Type{Kind: pqio.KindBinary}, nil
	case ice.DateType:
		return pqio.Type{Kind: pqio.KindDate}, nil
	case ice.TimestampTzType:
		return pqio.Type{Kind: pqio.KindTimestamp}, nil
	case ice.DecimalType:
		return pqio.Type{Kind: pqio.KindDecimal, Precision: x.Precision(), Scale: x.Scale()}, nil
	case *ice.StructType:
		var fields []pqio.Column
		for _, f := range x.FieldList {
			c, err := dataColumn(f)
			if err != nil {
				return pqio.Type{}, err
			}
			fields = append(fields, c)
		}
		return pqio.Type{Kind: pqio.KindStruct, Fields: fields}, nil
	case *ice.ListType:
		elem, err := dataType(x.Element)
		if err != nil {
			return pqio.Type{}, fmt.Errorf("element: %w", err)
		}
		l := pqio.ListOf(elem, !x.ElementRequired)
		l.Fields[0].ID = x.ElementID
		return l, nil
	case *ice.MapType:
		k, err := dataType(x.KeyType)
		if err != nil {
			return pqio.Type{}, fmt.Errorf("key: %w", err)
		}
		v, err := dataType(x.ValueType)
		if err != nil {
			return pqio.Type{}, fmt.Errorf("value: %w", err)
		}
		m := pqio.MapOf(k, v, !x.ValueRequired)
		m.Fields[0].ID, m.Fields[1].ID = x.KeyID, x.ValueID
		return m, nil
	}
	return pqio.Type{}, fmt.Errorf("%w: Iceberg type %s (sluice rewrites boolean, int, long, double, decimal, string, binary, date, timestamptz, struct, list and map)", ErrUnsupportedType, t)
}

// ErrUnsupportedType is returned for an Iceberg table with a column of
// a type sluice does not rewrite.
var ErrUnsupportedType = errors.New("unsupported column type")
