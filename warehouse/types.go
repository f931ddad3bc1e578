package warehouse

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
)

// pgType is the PostgreSQL type of a column of logical type t.
func pgType(t catalog.Type) (string, bool) {
	switch t.Kind {
	case catalog.KindUUID:
		return "uuid", true
	case catalog.KindTimestamp:
		return "timestamptz", true
	case catalog.KindDate:
		return "date", true
	case catalog.KindDecimal:
		return fmt.Sprintf("numeric(%d,%d)", t.Precision, t.Scale), true
	case catalog.KindInt32:
		return "integer", true
	case catalog.KindInt64:
		return "bigint", true
	case catalog.KindFloat64:
		return "double precision", true
	case catalog.KindBool:
		return "boolean", true
	case catalog.KindString:
		return "text", true
	case catalog.KindBinary:
		return "bytea", true
	}
	return "", false
}

// columnDefs renders the column list of CREATE TABLE for schema, failing
// with ErrUnsupportedType naming the first column whose type has no
// mapping, or ErrInvalidName for a name PostgreSQL would truncate.
func columnDefs(schema catalog.Schema) (string, error) {
	defs := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		typ, ok := pgType(c.Type)
		if !ok {
			return "", fmt.Errorf("column %q: %s: %w", c.Name, c.Type, ErrUnsupportedType)
		}
		if len(c.Name) > maxIdentifier || strings.IndexByte(c.Name, 0) >= 0 {
			return "", fmt.Errorf("column %q: %w: longer than %d bytes", c.Name, ErrInvalidName, maxIdentifier)
		}
		d := pgx.Identifier{c.Name}.Sanitize() + " " + typ
		if !c.Nullable {
			d += " NOT NULL"
		}
		defs[i] = d
	}
	return strings.Join(defs, ", "), nil
}
