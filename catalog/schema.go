package catalog

import "github.com/sluice-data/sluice/internal/pqio"

// A table's schema is pqio's column-type model: the types the Parquet files
// of a table are read and written as. The names below are that model under
// the table's vocabulary, so that a job speaks of a table's schema without
// reaching into the Parquet engine.

// Kind is a column's logical type, as written in schema strings.
type Kind = pqio.Kind

// The logical types of the schema-string contract (CONTRACT.md).
const (
	KindString    = pqio.KindString
	KindUUID      = pqio.KindUUID
	KindInt32     = pqio.KindInt32
	KindInt64     = pqio.KindInt64
	KindFloat64   = pqio.KindFloat64
	KindBool      = pqio.KindBool
	KindDate      = pqio.KindDate
	KindTimestamp = pqio.KindTimestamp
	KindDecimal   = pqio.KindDecimal
	KindBinary    = pqio.KindBinary
	KindStruct    = pqio.KindStruct
	KindList      = pqio.KindList
	KindMap       = pqio.KindMap
)

// Type is a logical type; Precision and Scale are set for decimals only,
// Fields for nested types only (see pqio.Type).
type Type = pqio.Type

// MapEntry is one key and value of a map column's value.
type MapEntry = pqio.MapEntry

// ListOf is the type list<elem>, or list<elem?> when nullable.
func ListOf(elem Type, nullable bool) Type { return pqio.ListOf(elem, nullable) }

// MapOf is the type map<key,value>, or map<key,value?> when nullable.
func MapOf(key, value Type, nullable bool) Type { return pqio.MapOf(key, value, nullable) }

// StructOf is the type struct<fields...>.
func StructOf(fields ...Column) Type { return pqio.StructOf(fields...) }

// Column is one column of a table schema.
type Column = pqio.Column

// Schema is a table's ordered list of columns.
type Schema = pqio.Schema

// ColumnStats are one column's statistics over one data file.
type ColumnStats = pqio.ColumnStats

// FileStats are a data file's rows and per-column statistics.
type FileStats = pqio.FileStats

// ParseSchema parses a schema string: "name:type,name:type?,...".
func ParseSchema(s string) (Schema, error) { return pqio.ParseSchema(s) }
