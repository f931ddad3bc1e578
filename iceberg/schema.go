package iceberg

import (
	"fmt"
	"strings"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/sluice-data/sluice/catalog"
)

// icebergSchema maps a sluice schema to an Iceberg schema, giving the
// columns field ids 1..n in order. Non-nullable columns become required
// fields. Identity partition fields (a value found only in the folder
// name, as Spark writes partition columns) follow as optional columns:
// they are in no data file, and Iceberg readers take their values from
// the partition tuple, as the spec says for identity partitions.
func icebergSchema(s catalog.Schema, spec catalog.PartitionSpec) (*ice.Schema, error) {
	fields := make([]ice.NestedField, 0, len(s.Columns)+len(spec.Fields))
	next := len(s.Columns) + len(spec.Fields)
	nextID := func() int { next++; return next }
	for i, c := range s.Columns {
		t, err := icebergType(c.Type, nextID)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		fields = append(fields, ice.NestedField{ID: i + 1, Name: c.Name, Type: t, Required: !c.Nullable})
	}
	for _, f := range spec.Fields {
		if f.Transform != "identity" {
			continue
		}
		if f.Type.Kind != catalog.KindString {
			return nil, fmt.Errorf("partition field %q is %s: only string identity partitions are mirrored yet", f.Name, f.Type)
		}
		if _, clash := s.Column(f.Name); clash {
			return nil, fmt.Errorf("partition field %q is also a data column: not mirrored yet", f.Name)
		}
		fields = append(fields, ice.NestedField{ID: len(fields) + 1, Name: f.Name, Type: ice.PrimitiveTypes.String})
	}
	// Nested fields were given ids after the columns; Iceberg's own order
	// (which CreateTable assigns, and the mirror is compared with) is
	// its fresh assignment's.
	return ice.AssignFreshSchemaIDs(ice.NewSchema(0, fields...), nil)
}

// icebergType is the Iceberg type a sluice column type is stored as: uuid
// is text in sluice's files, so it is an Iceberg string; timestamps are
// UTC microseconds, Iceberg's timestamptz; struct, list and map are
// Iceberg's, their fields, elements, keys and values numbered by nextID
// and required where sluice's are not nullable (a map's keys always).
func icebergType(t catalog.Type, nextID func() int) (ice.Type, error) {
	switch t.Kind {
	case catalog.KindStruct:
		fields := make([]ice.NestedField, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := icebergType(f.Type, nextID)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = ice.NestedField{ID: nextID(), Name: f.Name, Type: ft, Required: !f.Nullable}
		}
		return &ice.StructType{FieldList: fields}, nil
	case catalog.KindList:
		elem := t.Fields[0]
		et, err := icebergType(elem.Type, nextID)
		if err != nil {
			return nil, fmt.Errorf("element: %w", err)
		}
		return &ice.ListType{ElementID: nextID(), Element: et, ElementRequired: !elem.Nullable}, nil
	case catalog.KindMap:
		key, value := t.Fields[0], t.Fields[1]
		kt, err := icebergType(key.Type, nextID)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		vt, err := icebergType(value.Type, nextID)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		return &ice.MapType{KeyID: nextID(), KeyType: kt, ValueID: nextID(), ValueType: vt, ValueRequired: !value.Nullable}, nil
	case catalog.KindString, catalog.KindUUID:
		return ice.PrimitiveTypes.String, nil
	case catalog.KindInt32:
		return ice.PrimitiveTypes.Int32, nil
	case catalog.KindInt64:
		return ice.PrimitiveTypes.Int64, nil
	case catalog.KindFloat64:
		return ice.PrimitiveTypes.Float64, nil
	case catalog.KindBool:
		return ice.PrimitiveTypes.Bool, nil
	case catalog.KindDate:
		return ice.PrimitiveTypes.Date, nil
	case catalog.KindTimestamp:
		return ice.PrimitiveTypes.TimestampTz, nil
	case catalog.KindDecimal:
		return ice.DecimalTypeOf(t.Precision, t.Scale), nil
	case catalog.KindBinary:
		return ice.PrimitiveTypes.Binary, nil
	}
	return nil, fmt.Errorf("type %s has no Iceberg mapping yet", t)
}

// icebergSpec maps a sluice partition spec onto sch: day(col) becomes
// Iceberg's day transform of col, named as sluice's folder key; an
// identity field the identity transform of its own column (see
// icebergSchema).
func icebergSpec(spec catalog.PartitionSpec, sch *ice.Schema) (ice.PartitionSpec, error) {
	var opts []ice.PartitionOption
	for _, f := range spec.Fields {
		var src ice.NestedField
		var ok bool
		var tr ice.Transform
		switch f.Transform {
		case "day":
			src, ok = sch.FindFieldByName(f.Source)
			tr = ice.DayTransform{}
		case "identity":
			src, ok = sch.FindFieldByName(f.Name)
			tr = ice.IdentityTransform{}
		default:
			return ice.PartitionSpec{}, fmt.Errorf("partition field %q: transform %q has no Iceberg mapping yet", f.Name, f.Transform)
		}
		if !ok {
			return ice.PartitionSpec{}, fmt.Errorf("partition field %q: no column %q", f.Name, f.Source)
		}
		opts = append(opts, ice.AddPartitionFieldBySourceID(src.ID, f.Name, tr, sch, nil))
	}
	return ice.NewPartitionSpecOpts(opts...)
}

// partitionData returns a data file's Iceberg partition tuple, by
// partition field id, from the values the sluice manifest records: a
// day field's "2024-01-31" is the Iceberg date of that day, an identity
// field's value its string.
func partitionData(spec catalog.PartitionSpec, ispec ice.PartitionSpec, f catalog.DataFile) (map[int]any, map[int]string, error) {
	if len(spec.Fields) == 0 {
		return nil, nil, nil
	}
	data := make(map[int]any, len(spec.Fields))
	types := make(map[int]string, len(spec.Fields))
	if ispec.NumFields() != len(spec.Fields) {
		return nil, nil, fmt.Errorf("the Iceberg table has %d partition fields, the sluice table %d", ispec.NumFields(), len(spec.Fields))
	}
	for i, sf := range spec.Fields {
		pf := ispec.Field(i)
		v, ok := f.PartitionValues[sf.Name]
		if !ok {
			return nil, nil, fmt.Errorf("file %s: the manifest records no value for partition field %q", f.Path, sf.Name)
		}
		if v == nil {
			data[pf.FieldID] = nil
			continue
		}
		if sf.Transform == "identity" {
			data[pf.FieldID] = *v
			continue
		}
		day, err := time.Parse("2006-01-02", strings.TrimSpace(*v))
		if err != nil {
			return nil, nil, fmt.Errorf("file %s: partition value %s=%q: want YYYY-MM-DD", f.Path, sf.Name, *v)
		}
		data[pf.FieldID] = ice.Date(day.Unix() / 86400)
		types[pf.FieldID] = "date"
	}
	return data, types, nil
}
