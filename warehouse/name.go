package warehouse

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// maxIdentifier is PostgreSQL's identifier limit in bytes (NAMEDATALEN-1);
// a longer name is silently truncated by the server, so it is refused.
const maxIdentifier = 63

// suffixRoom is the room NAME_new and NAME_old need beyond NAME.
const suffixRoom = len("_new")

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// target is a validated table name in the warehouse.
type target struct {
	schema string // "" until resolved: the connection's current schema
	name   string
}

// parseTarget validates NAME or SCHEMA.NAME: each part a plain SQL
// identifier (letters, digits, underscore, not starting with a digit),
// folded to lower case as PostgreSQL folds an unquoted name, so that
// `SELECT * FROM NAME` finds what was published. Anything else, an
// injection attempt included, fails with ErrInvalidName.
func parseTarget(s string) (target, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return target{}, fmt.Errorf("%w: %q: want NAME or SCHEMA.NAME", ErrInvalidName, s)
	}
	for i, p := range parts {
		limit := maxIdentifier
		if i == len(parts)-1 {
			limit -= suffixRoom
		}
		if !identRE.MatchString(p) || len(p) > limit {
			return target{}, fmt.Errorf("%w: %q: each part must be letters, digits and _ (not starting with a digit), the name at most %d bytes", ErrInvalidName, s, maxIdentifier-suffixRoom)
		}
	}
	t := target{name: strings.ToLower(parts[len(parts)-1])}
	if t.name == publishedTable {
		return target{}, fmt.Errorf("%w: %q is where sluice records what it published", ErrInvalidName, s)
	}
	if len(parts) == 2 {
		t.schema = strings.ToLower(parts[0])
	}
	return t, nil
}

// with returns the target's table with suffix appended to its name.
func (t target) with(suffix string) target { return target{schema: t.schema, name: t.name + suffix} }

// sql is the quoted, schema-qualified name for a statement.
func (t target) sql() string { return pgx.Identifier{t.schema, t.name}.Sanitize() }

// String is schema.name as a user writes it.
func (t target) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}
