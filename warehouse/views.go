package warehouse

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// view is a view that depends on the target, as it was defined before
// the swap.
type view struct {
	name    string // quoted, schema-qualified
	def     string // pg_get_viewdef: the SELECT
	options []string
}

// replace redefines the view, on whatever its names now resolve to: after
// the renames, the new table. CREATE OR REPLACE keeps the view's identity,
// so its privileges, its comment and the views built on it stay.
func (v view) replace() string {
	with := ""
	if len(v.options) > 0 {
		with = " WITH (" + strings.Join(v.options, ", ") + ")"
	}
	return "CREATE OR REPLACE VIEW " + v.name + with + " AS " + strings.TrimSuffix(strings.TrimSpace(v.def), ";")
}

// viewOptions are the options a view may have, each with the values it
// takes: an option read from the database is carried only when it is one
// of these, never spliced as read.
var viewOptions = map[string]*regexp.Regexp{
	"check_option":     regexp.MustCompile(`^(local|cascaded)$`),
	"security_barrier": regexp.MustCompile(`^(true|false|on|off)$`),
	"security_invoker": regexp.MustCompile(`^(true|false|on|off)$`),
}

// dependentViews lists the views whose rules reference the table oid.
// Materialized views are dependents the swap cannot carry (readState).
func dependentViews(ctx context.Context, tx pgx.Tx, oid uint32) ([]view, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT n.nspname, v.relname, v.relkind::text, pg_get_viewdef(v.oid), coalesce(v.reloptions, '{}')
		FROM pg_depend d
		JOIN pg_rewrite r ON r.oid = d.objid
		JOIN pg_class v ON v.oid = r.ev_class
		JOIN pg_namespace n ON n.oid = v.relnamespace
		WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = $1 AND v.oid <> $1 AND v.relkind = 'v'
		ORDER BY 1, 2`, oid)
	if err != nil {
		return nil, fmt.Errorf("find dependent views: %w", err)
	}
	defer rows.Close()
	var views []view
	for rows.Next() {
		var schema, name, kind, def string
		var opts []string
		if err := rows.Scan(&schema, &name, &kind, &def, &opts); err != nil {
			return nil, fmt.Errorf("find dependent views: %w", err)
		}
		for _, o := range opts {
			k, v, _ := strings.Cut(o, "=")
			if re := viewOptions[k]; re == nil || !re.MatchString(v) {
				return nil, fmt.Errorf("%w: view %s.%s has the option %q, unknown to sluice", ErrDependents, schema, name, o)
			}
		}
		views = append(views, view{name: pgx.Identifier{schema, name}.Sanitize(), def: def, options: opts})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find dependent views: %w", err)
	}
	return views, nil
}
