package warehouse

import (
	"context"
	"fmt"
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

// dependentViews lists the views whose rules reference the table oid,
// failing with ErrDependents, naming them, when one cannot be recreated
// (a materialized view).
func dependentViews(ctx context.Context, tx pgx.Tx, oid uint32) ([]view, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT n.nspname, v.relname, v.relkind::text, pg_get_viewdef(v.oid), coalesce(v.reloptions, '{}')
		FROM pg_depend d
		JOIN pg_rewrite r ON r.oid = d.objid
		JOIN pg_class v ON v.oid = r.ev_class
		JOIN pg_namespace n ON n.oid = v.relnamespace
		WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = $1 AND v.oid <> $1
		ORDER BY 1, 2`, oid)
	if err != nil {
		return nil, fmt.Errorf("find dependent views: %w", err)
	}
	var views []view
	var stuck []string
	for rows.Next() {
		var schema, name, kind, def string
		var opts []string
		if err := rows.Scan(&schema, &name, &kind, &def, &opts); err != nil {
			return nil, fmt.Errorf("find dependent views: %w", err)
		}
		q := pgx.Identifier{schema, name}.Sanitize()
		if kind != "v" {
			stuck = append(stuck, schema+"."+name+" ("+relkindName(kind)+")")
			continue
		}
		views = append(views, view{name: q, def: def, options: opts})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find dependent views: %w", err)
	}
	if len(stuck) > 0 {
		return nil, fmt.Errorf("%w: %s; drop them, publish, and create them again", ErrDependents, strings.Join(stuck, ", "))
	}
	return views, nil
}
