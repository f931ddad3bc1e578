package warehouse

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
)

// SQLite stores what its few storage classes hold; the declared types
// below give each column the affinity that keeps the value as sluice
// wrote it, and tell a reader (sqlite3, DuckDB's sqlite scanner) what it
// is. Text forms sort as their values do.
const (
	sqliteTimestampLayout = "2006-01-02 15:04:05.000000" // UTC, microseconds
	sqliteDateLayout      = "2006-01-02"
)

// sqliteType is the declared SQLite type of a column of logical type t:
// integers INTEGER, float64 REAL, bool BOOLEAN (0 or 1), string TEXT,
// binary BLOB, uuid TEXT (lower case), date DATE and timestamp TIMESTAMP
// (ISO 8601 text in UTC, as SQLite's date functions read it), and
// decimal(p,s) TEXT in canonical form at full precision: a NUMERIC
// column would round it to a double's 15 digits.
func sqliteType(t catalog.Type) (string, bool) {
	switch t.Kind {
	case catalog.KindInt32, catalog.KindInt64:
		return "INTEGER", true
	case catalog.KindFloat64:
		return "REAL", true
	case catalog.KindBool:
		return "BOOLEAN", true
	case catalog.KindString, catalog.KindUUID, catalog.KindDecimal:
		// DATE and TIMESTAMP have NUMERIC affinity, which keeps text that
		// is not a number as text: these do not look like one.
		return "TEXT", true
	case catalog.KindBinary:
		return "BLOB", true
	case catalog.KindDate:
		return "DATE", true
	case catalog.KindTimestamp:
		return "TIMESTAMP", true
	}
	return "", false
}

// sqliteColumnDefs renders the column list of CREATE TABLE, failing with
// ErrUnsupportedType naming the first column without a mapping.
func sqliteColumnDefs(schema catalog.Schema) (string, error) {
	defs := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		typ, ok := sqliteType(c.Type)
		if !ok {
			return "", fmt.Errorf("column %q: %s: %w", c.Name, c.Type, ErrUnsupportedType)
		}
		if strings.IndexByte(c.Name, 0) >= 0 {
			return "", fmt.Errorf("column %q: %w: a NUL character", c.Name, ErrInvalidName)
		}
		d := pgx.Identifier{c.Name}.Sanitize() + " " + typ
		if !c.Nullable {
			d += " NOT NULL"
		}
		defs[i] = d
	}
	return strings.Join(defs, ", "), nil
}

// sqliteConverters turn a value in catalog's Go representation into what
// the sqlite driver binds as the column's storage.
func sqliteConverters(schema catalog.Schema) []converter {
	out := make([]converter, len(schema.Columns))
	for i, c := range schema.Columns {
		switch c.Type.Kind {
		case catalog.KindUUID:
			out[i] = func(v any) (any, error) {
				u, err := uuid.Parse(v.(string))
				if err != nil {
					return nil, err
				}
				return u.String(), nil
			}
		case catalog.KindTimestamp:
			out[i] = func(v any) (any, error) { return v.(time.Time).UTC().Format(sqliteTimestampLayout), nil }
		case catalog.KindDate:
			out[i] = func(v any) (any, error) { return v.(time.Time).UTC().Format(sqliteDateLayout), nil }
		case catalog.KindFloat64:
			out[i] = func(v any) (any, error) {
				// SQLite turns a NaN into NULL: refuse it rather than lose it.
				if math.IsNaN(v.(float64)) {
					return nil, errors.New("NaN, which SQLite cannot store (it would read back as NULL)")
				}
				return v, nil
			}
		case catalog.KindInt32:
			out[i] = func(v any) (any, error) { return int64(v.(int32)), nil }
		case catalog.KindBool:
			out[i] = func(v any) (any, error) {
				if v.(bool) {
					return int64(1), nil
				}
				return int64(0), nil
			}
		default:
			out[i] = func(v any) (any, error) { return v, nil }
		}
	}
	return out
}
