package pqio

import (
	"fmt"
	"strings"
)

// --- schema compatibility --------------------------------------------------

// readableAs tells whether values of type from convert to type to without
// loss, and so whether a file column of type from can be read as a table
// column of type to.
//
//   - the same type; string and uuid either way (both are text; a uuid
//     table reading a string file relies on ingest's validation upstream);
//   - int32 → int64;
//   - int32 → float64: every int32 is exact in a float64. int64 → float64
//     is refused: above 2^53 it rounds, silently;
//   - float → double is already collapsed: both map to float64;
//   - decimal(p1,s1) → decimal(p2,s2) when s2 >= s1 and p2-s2 >= p1-s1
//     (no digit lost on either side of the point);
//   - int32 → decimal(p,s) with p-s >= 10, int64 → with p-s >= 19;
//   - never date ↔ timestamp: a date has no time zone and no time of day,
//     and reading one as midnight UTC silently invents both;
//   - a nested type as the same nested type whose children read as the
//     table's (see nestedProblems).
func readableAs(from, to Type) bool {
	if from.Nested() || to.Nested() {
		return len(nestedProblems("", from, to)) == 0
	}
	if from.Equal(to) {
		return true
	}
	text := func(k Kind) bool { return k == KindString || k == KindUUID }
	switch {
	case text(from.Kind) && text(to.Kind):
		return true
	case from.Kind == KindInt32 && (to.Kind == KindInt64 || to.Kind == KindFloat64):
		return true
	case from.Kind == KindDecimal && to.Kind == KindDecimal:
		return to.Scale >= from.Scale && to.Precision-to.Scale >= from.Precision-from.Scale
	case from.Kind == KindInt32 && to.Kind == KindDecimal:
		return to.Precision-to.Scale >= 10
	case from.Kind == KindInt64 && to.Kind == KindDecimal:
		return to.Precision-to.Scale >= 19
	}
	return false
}

// CheckCompatible tells whether a file whose schema is file can be read as
// the table schema table; fileKey names the file in the error. Refused,
// with an error wrapping ErrIncompatibleSchema that names the file and
// every offending column with both types:
//
//   - a file column of a type that does not convert losslessly to the
//     table column's (see the list below), e.g. date vs timestamp either
//     way, string vs int;
//   - a file column the table does not have;
//   - a required table column the file does not have.
//
// Accepted: the same type; string and uuid either way; int32 → int64;
// int32 → float64 (exact; int64 → float64 is not, above 2^53); decimals
// that keep every digit (the scale does not shrink, nor the digits before
// the point); int32/int64 → a decimal with at least 10/19 digits before
// the point; a table column missing from the file when it is nullable (it
// reads as NULL).
//
// A nullable file column into a non-nullable table column passes this
// schema check: Spark writes every column nullable, so refusing would
// refuse every Spark file. The data decides: ReadParquetRows fails on an
// actual NULL there.
func CheckCompatible(table, file Schema, fileKey string) error {
	var problems []string
	for _, fc := range file.Columns {
		tc, ok := table.Column(fc.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("column %q (%s) is not in the table", fc.Name, fc.Type))
			continue
		}
		if fc.Type.Nested() || tc.Type.Nested() {
			problems = append(problems, nestedProblems(fc.Name, fc.Type, tc.Type)...)
			continue
		}
		if !readableAs(fc.Type, tc.Type) {
			why := ""
			if (fc.Type.Kind == KindDate && tc.Type.Kind == KindTimestamp) || (fc.Type.Kind == KindTimestamp && tc.Type.Kind == KindDate) {
				why = " (a date is never read as a timestamp, nor the reverse)"
			}
			problems = append(problems, fmt.Sprintf("column %q: the file has %s, the table %s%s", fc.Name, fc.Type, tc.Type, why))
		}
	}
	for _, tc := range table.Columns {
		if _, ok := file.Column(tc.Name); !ok && !tc.Nullable {
			problems = append(problems, fmt.Sprintf("column %q (%s, not nullable) is missing from the file", tc.Name, tc.Type))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w: %s", fileKey, ErrIncompatibleSchema, strings.Join(problems, "; "))
	}
	return nil
}

// nestedProblems says why a value of type from (a file's, at path) cannot
// be read as type to (the table's), one entry per offending path, none when
// it can: the same nested kind; a struct's file fields all in the table's
// struct and each readable as its field there, and the table's fields the
// file lacks nullable (they read as NULL); a list's element and a map's key
// and value readable as the table's; a leaf by the rules of flat columns
// (readableAs). A nullable file field into a non-nullable table field
// passes, as a column does (see CheckCompatible): the data decides.
func nestedProblems(path string, from, to Type) []string {
	if !from.Nested() && !to.Nested() {
		if readableAs(from, to) {
			return nil
		}
		why := ""
		if (from.Kind == KindDate && to.Kind == KindTimestamp) || (from.Kind == KindTimestamp && to.Kind == KindDate) {
			why = " (a date is never read as a timestamp, nor the reverse)"
		}
		return []string{fmt.Sprintf("column %q: the file has %s, the table %s%s", path, from, to, why)}
	}
	if from.Kind != to.Kind {
		return []string{fmt.Sprintf("column %q: the file has %s, the table %s", path, from, to)}
	}
	var problems []string
	if from.Kind != KindStruct {
		for i := range from.Fields {
			problems = append(problems, nestedProblems(path+"."+to.Fields[i].Name, from.Fields[i].Type, to.Fields[i].Type)...)
		}
		return problems
	}
	for _, ff := range from.Fields {
		tf, ok := fieldOf(to, ff.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("column %q (%s) is not in the table", path+"."+ff.Name, ff.Type))
			continue
		}
		problems = append(problems, nestedProblems(path+"."+ff.Name, ff.Type, tf.Type)...)
	}
	for _, tf := range to.Fields {
		if _, ok := fieldOf(from, tf.Name); !ok && !tf.Nullable {
			problems = append(problems, fmt.Sprintf("column %q (%s, not nullable) is missing from the file", path+"."+tf.Name, tf.Type))
		}
	}
	return problems
}

// fieldOf returns the struct field of t named name.
func fieldOf(t Type, name string) (Column, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Column{}, false
}

// MergeSchemas returns the narrowest schema that both a and b can be read
// as (see CheckCompatible), for adopting folders whose files were written
// with different schemas over time: a's columns in a's order, then b's
// columns that a lacks, in b's order. A column missing from either side
// becomes nullable, and a column nullable on either side stays so.
//
// Per column: the type that the other reads as (int32 and int64 → int64;
// int32 and float64 → float64; decimal(10,2) and decimal(20,5) →
// decimal(20,5)); otherwise the decimal that holds both (decimal(10,2) and
// decimal(8,4) → decimal(12,4); int64 and decimal(10,2) → decimal(21,2)),
// up to 38 digits; string with uuid → string. Anything else (date with
// timestamp, int64 with float64, string with int32) fails with an error
// wrapping ErrIncompatibleSchema that names the column and both types.
//
// Field ids (Column.ID) do not decide what merges: columns and fields
// match by name. A merged column or child keeps the id both sides give it,
// or the one only one side gives; none when they give different ones (see
// mergeID).
func MergeSchemas(a, b Schema) (Schema, error) {
	var out Schema
	var problems []string
	for _, ca := range a.Columns {
		cb, ok := b.Column(ca.Name)
		if !ok {
			ca.Nullable = true
			out.Columns = append(out.Columns, ca)
			continue
		}
		t, ok := commonType(ca.Type, cb.Type)
		if !ok {
			problems = append(problems, fmt.Sprintf("column %q: %s and %s have no common type", ca.Name, ca.Type, cb.Type))
			continue
		}
		out.Columns = append(out.Columns, Column{Name: ca.Name, Type: t, Nullable: ca.Nullable || cb.Nullable, ID: mergeID(ca.ID, cb.ID)})
	}
	for _, cb := range b.Columns {
		if _, ok := a.Column(cb.Name); !ok {
			cb.Nullable = true
			out.Columns = append(out.Columns, cb)
		}
	}
	if len(problems) > 0 {
		return Schema{}, fmt.Errorf("merge schemas: %w: %s", ErrIncompatibleSchema, strings.Join(problems, "; "))
	}
	return out, nil
}

// commonType is MergeSchemas' rule for one column.
func commonType(a, b Type) (Type, bool) {
	if a.Nested() || b.Nested() {
		return commonNested(a, b)
	}
	if a.Kind == KindUUID && b.Kind == KindString || a.Kind == KindString && b.Kind == KindUUID {
		return Type{Kind: KindString}, true
	}
	if readableAs(b, a) {
		return a, true
	}
	if readableAs(a, b) {
		return b, true
	}
	// Two decimals, or an integer and a decimal: a decimal wide enough for both.
	intDigits := func(t Type) (int, int, bool) {
		switch t.Kind {
		case KindDecimal:
			return t.Precision - t.Scale, t.Scale, true
		case KindInt32:
			return 10, 0, true
		case KindInt64:
			return 19, 0, true
		}
		return 0, 0, false
	}
	if a.Kind != KindDecimal && b.Kind != KindDecimal {
		return Type{}, false
	}
	ia, sa, okA := intDigits(a)
	ib, sb, okB := intDigits(b)
	if !okA || !okB {
		return Type{}, false
	}
	s := max(sa, sb)
	p := max(ia, ib) + s
	if p > 38 {
		return Type{}, false
	}
	return Type{Kind: KindDecimal, Precision: p, Scale: s}, true
}

// commonNested is commonType for nested types: the same kind, children
// merged as MergeSchemas merges columns (a struct's fields in a's order,
// then b's that a lacks, nullable; a child nullable on either side stays
// so).
func commonNested(a, b Type) (Type, bool) {
	if a.Kind != b.Kind {
		return Type{}, false
	}
	merge := func(fa, fb Column) (Column, bool) {
		t, ok := commonType(fa.Type, fb.Type)
		return Column{Name: fa.Name, Type: t, Nullable: fa.Nullable || fb.Nullable, ID: mergeID(fa.ID, fb.ID)}, ok
	}
	out := Type{Kind: a.Kind}
	if a.Kind != KindStruct {
		for i := range a.Fields {
			f, ok := merge(a.Fields[i], b.Fields[i])
			if !ok {
				return Type{}, false
			}
			out.Fields = append(out.Fields, f)
		}
		return out, true
	}
	for _, fa := range a.Fields {
		fb, ok := fieldOf(b, fa.Name)
		if !ok {
			fa.Nullable = true
			out.Fields = append(out.Fields, fa)
			continue
		}
		f, ok := merge(fa, fb)
		if !ok {
			return Type{}, false
		}
		out.Fields = append(out.Fields, f)
	}
	for _, fb := range b.Fields {
		if _, ok := fieldOf(a, fb.Name); !ok {
			fb.Nullable = true
			out.Fields = append(out.Fields, fb)
		}
	}
	return out, true
}
