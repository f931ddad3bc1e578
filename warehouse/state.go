package warehouse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// querier is a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// tableState is what a PostgreSQL table carries besides its rows, as the
// swap must carry it to the new table, and what it cannot carry.
type tableState struct {
	oid   uint32
	owner string
	// mayReplace: the publishing role holds the owner's privileges, so
	// it may rename and drop the table; ownerSettable: it may give the
	// new table to the owner (member of the owner, which may create in
	// the schema); ownedBySelf: the owner is the publishing role.
	mayReplace, ownerSettable, ownedBySelf bool
	inherits                               bool
	rls, force                             bool
	replident                              string // pg_class.relreplident
	comment                                *string
	colComments                            []colComment
	grants                                 []grant // column "" for the table's own
	indexes                                []pgIndex
	constraints                            []pgConstraint
	policies                               []pgPolicy
	publications                           []pgPublication
	dependents                             []dependent
}

type colComment struct{ column, text string }

// grant is one privilege on the table or one of its columns; role "" is
// PUBLIC.
type grant struct {
	column, role, priv string
	option             bool
}

// pgIndex is an index of the table: tail is its definition after
// "CREATE [UNIQUE] INDEX name ON table ", as pg_get_indexdef prints it
// (USING method (keys)...); constraint is "p" or "u" when the index
// backs a PRIMARY KEY or UNIQUE constraint of the same name.
type pgIndex struct {
	name, tail, constraint string
	unique, replident      bool
	deferrable, deferred   bool
}

// pgConstraint is a CHECK or FOREIGN KEY constraint of the table, def as
// pg_get_constraintdef prints it.
type pgConstraint struct{ name, def string }

// pgPolicy is a row-level security policy; a role "" is PUBLIC.
type pgPolicy struct {
	name, cmd        string
	permissive       bool
	roles            []string
	using, withCheck *string
}

// pgPublication is a publication that lists the table, with its column
// list (nil: every column) and row filter; owned says the publishing
// role may alter it.
type pgPublication struct {
	name    string
	owned   bool
	columns []string
	filter  *string
}

// dependent is something the swap cannot carry to the new table.
// droppable ones are left behind (dropped with the old table, or by drop
// first) when the user opts in with Options.DropDependents; the others
// always stop the publish.
type dependent struct {
	what      string
	droppable bool
	drop      sqlFormat // run before the old table is dropped; "" when it goes with the table
	dropArgs  []string
}

// readState reads what the table oid carries. Everything is read by
// bind parameters; names and SQL the server prints are carried back to
// it only through execFormat.
func readState(ctx context.Context, q querier, oid uint32) (*tableState, error) {
	s := &tableState{oid: oid}
	err := q.QueryRow(ctx, `SELECT pg_get_userbyid(c.relowner), pg_has_role(c.relowner, 'USAGE'),
		pg_has_role(c.relowner, 'MEMBER') AND has_schema_privilege(c.relowner, c.relnamespace, 'CREATE'),
		c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user),
		c.relispartition OR EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = c.oid),
		c.relrowsecurity, c.relforcerowsecurity, c.relreplident::text, obj_description(c.oid, 'pg_class')
		FROM pg_class c WHERE c.oid = $1`, oid).Scan(&s.owner, &s.mayReplace, &s.ownerSettable, &s.ownedBySelf, &s.inherits,
		&s.rls, &s.force, &s.replident, &s.comment)
	if err != nil {
		return nil, fmt.Errorf("read the table: %w", err)
	}
	for _, read := range []func(context.Context, querier) error{s.readGrants, s.readColComments, s.readIndexes,
		s.readConstraints, s.readPolicies, s.readPublications, s.readDependents} {
		if err := read(ctx, q); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// collect runs query with the table's oid and scans each row with scan.
func collect(ctx context.Context, q querier, what, query string, oid uint32, scan func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, query, oid)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// privileges are the privileges a GRANT may name; aclexplode reports
// nothing else, and anything else is refused rather than carried.
var privileges = map[string]sqlFormat{"SELECT": "SELECT", "INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE",
	"TRUNCATE": "TRUNCATE", "REFERENCES": "REFERENCES", "TRIGGER": "TRIGGER", "MAINTAIN": "MAINTAIN"}

func (s *tableState) readGrants(ctx context.Context, q querier) error {
	return collect(ctx, q, "privileges", `SELECT '', CASE WHEN a.grantee = 0 THEN '' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type, a.is_grantable
		FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = $1 AND a.grantee <> c.relowner
		UNION ALL
		SELECT att.attname, CASE WHEN a.grantee = 0 THEN '' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type, a.is_grantable
		FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid, aclexplode(att.attacl) a
		WHERE c.oid = $1 AND att.attnum > 0 AND NOT att.attisdropped AND a.grantee <> c.relowner
		ORDER BY 1, 2, 3`, s.oid, func(r pgx.Rows) error {
		var g grant
		err := r.Scan(&g.column, &g.role, &g.priv, &g.option)
		s.grants = append(s.grants, g)
		return err
	})
}

func (s *tableState) readColComments(ctx context.Context, q querier) error {
	return collect(ctx, q, "column comments", `SELECT attname, col_description(attrelid, attnum) FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped AND col_description(attrelid, attnum) IS NOT NULL ORDER BY attnum`,
		s.oid, func(r pgx.Rows) error {
			var c colComment
			err := r.Scan(&c.column, &c.text)
			s.colComments = append(s.colComments, c)
			return err
		})
}

// readIndexes reads the table's indexes, each definition split after
// the prefix the server prints (which the server builds here too, so the
// split is exact); an index whose definition does not start so, or that
// backs an exclusion constraint (which no USING INDEX can attach), is a
// dependent.
func (s *tableState) readIndexes(ctx context.Context, q querier) error {
	return collect(ctx, q, "indexes", `SELECT ic.relname, i.indisunique, i.indisreplident, coalesce(k.contype::text, ''),
		coalesce(k.condeferrable, false), coalesce(k.condeferred, false), pg_get_indexdef(i.indexrelid),
		format('CREATE %sINDEX %I ON %I.%I ', CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END, ic.relname, n.nspname, c.relname)
		FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x')
		WHERE i.indrelid = $1 ORDER BY ic.relname`, s.oid, func(r pgx.Rows) error {
		var x pgIndex
		var def, prefix string
		if err := r.Scan(&x.name, &x.unique, &x.replident, &x.constraint, &x.deferrable, &x.deferred, &def, &prefix); err != nil {
			return err
		}
		switch {
		case x.constraint == "x":
			s.dependents = append(s.dependents, dependent{what: "exclusion constraint " + x.name, droppable: true})
		case !strings.HasPrefix(def, prefix):
			s.dependents = append(s.dependents, dependent{what: "index " + x.name + " (a definition sluice cannot read)", droppable: true})
		default:
			x.tail = def[len(prefix):]
			s.indexes = append(s.indexes, x)
		}
		return nil
	})
}

// readConstraints reads CHECK and FOREIGN KEY constraints. NOT NULL is
// the table's schema's word (PostgreSQL 18 lists it as a constraint);
// a constraint trigger is a trigger, which the swap does not carry.
func (s *tableState) readConstraints(ctx context.Context, q querier) error {
	return collect(ctx, q, "constraints", `SELECT conname, contype::text, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = $1 AND contype NOT IN ('p', 'u', 'x', 'n') ORDER BY conname`, s.oid, func(r pgx.Rows) error {
		var c pgConstraint
		var kind string
		if err := r.Scan(&c.name, &kind, &c.def); err != nil {
			return err
		}
		if kind == "c" || kind == "f" {
			s.constraints = append(s.constraints, c)
		} else {
			s.dependents = append(s.dependents, dependent{what: "constraint trigger " + c.name, droppable: true})
		}
		return nil
	})
}

func (s *tableState) readPolicies(ctx context.Context, q querier) error {
	return collect(ctx, q, "policies", `SELECT polname, polcmd::text, polpermissive,
		ARRAY(SELECT CASE WHEN r = 0 THEN '' ELSE pg_get_userbyid(r) END FROM unnest(polroles) r ORDER BY 1),
		pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid)
		FROM pg_policy WHERE polrelid = $1 ORDER BY polname`, s.oid, func(r pgx.Rows) error {
		var p pgPolicy
		if err := r.Scan(&p.name, &p.cmd, &p.permissive, &p.roles, &p.using, &p.withCheck); err != nil {
			return err
		}
		if _, ok := policyCommands[p.cmd]; !ok {
			s.dependents = append(s.dependents, dependent{what: "policy " + p.name + " (of a command unknown to sluice)", droppable: true})
			return nil
		}
		s.policies = append(s.policies, p)
		return nil
	})
}

// readPublications reads the publications that list the table by name
// (FOR ALL TABLES and FOR TABLES IN SCHEMA take the new table by
// themselves). Column lists and row filters exist from PostgreSQL 15:
// they are read through to_jsonb so that older servers answer too.
func (s *tableState) readPublications(ctx context.Context, q querier) error {
	return collect(ctx, q, "publications", `SELECT p.pubname, pg_has_role(p.pubowner, 'USAGE'),
		(SELECT array_agg(a.attname ORDER BY a.attnum) FROM pg_attribute a
			WHERE a.attrelid = r.prrelid AND a.attnum = ANY (string_to_array(to_jsonb(r) ->> 'prattrs', ' ')::int2[])),
		(SELECT to_jsonb(pt) ->> 'rowfilter' FROM pg_publication_tables pt JOIN pg_class c ON c.oid = r.prrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE pt.pubname = p.pubname AND pt.schemaname = n.nspname AND pt.tablename = c.relname)
		FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE r.prrelid = $1 ORDER BY 1`, s.oid,
		func(r pgx.Rows) error {
			var p pgPublication
			if err := r.Scan(&p.name, &p.owned, &p.columns, &p.filter); err != nil {
				return err
			}
			if !p.owned {
				s.dependents = append(s.dependents, dependent{what: "publication " + p.name + " (owned by a role whose privileges the publishing role lacks)", droppable: true})
				return nil
			}
			s.publications = append(s.publications, p)
			return nil
		})
}

// readDependents reads every other object that depends on the table or
// its row type, from pg_depend, named as the server describes it. What
// the swap carries itself (indexes, its own constraints and policies,
// views, the publications) or what is internal to the table is left
// out; triggers, rules, statistics, owned sequences, materialized views
// and foreign keys of other tables are droppable; anything else
// (functions and columns of the row type, policies of other tables,
// inheritance) always stops the publish.
func (s *tableState) readDependents(ctx context.Context, q querier) error {
	return collect(ctx, q, "dependent objects", `WITH t AS (SELECT oid, reltype FROM pg_class WHERE oid = $1),
	deps AS (SELECT DISTINCT d.classid, d.objid, d.deptype FROM pg_depend d, t
		WHERE (d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid) OR (d.refclassid = 'pg_type'::regclass AND d.refobjid = t.reltype))
	SELECT kind, pg_describe_object(classid, objid, 0), names FROM (SELECT d.classid, d.objid, CASE
		WHEN d.deptype = 'i' THEN 'carried'
		WHEN d.classid = 'pg_class'::regclass THEN (SELECT CASE
			WHEN o.relkind IN ('i', 'I', 't') AND EXISTS (SELECT 1 FROM pg_index x WHERE x.indexrelid = o.oid AND x.indrelid = t.oid) THEN 'carried'
			WHEN o.relkind = 'S' AND d.deptype = 'a' THEN 'droppable' ELSE 'other' END FROM pg_class o WHERE o.oid = d.objid)
		WHEN d.classid = 'pg_constraint'::regclass THEN (SELECT CASE
			WHEN k.conrelid = t.oid THEN 'carried' WHEN k.contype = 'f' THEN 'foreign key' ELSE 'other' END FROM pg_constraint k WHERE k.oid = d.objid)
		WHEN d.classid = 'pg_rewrite'::regclass THEN (SELECT CASE
			WHEN r.ev_class = t.oid THEN 'droppable' WHEN v.relkind = 'v' THEN 'carried' WHEN v.relkind = 'm' THEN 'materialized view' ELSE 'other' END
			FROM pg_rewrite r JOIN pg_class v ON v.oid = r.ev_class WHERE r.oid = d.objid)
		WHEN d.classid = 'pg_trigger'::regclass THEN (SELECT CASE
			WHEN g.tgconstraint <> 0 THEN 'carried' WHEN g.tgrelid = t.oid THEN 'droppable' ELSE 'other' END FROM pg_trigger g WHERE g.oid = d.objid)
		WHEN d.classid = 'pg_policy'::regclass THEN (SELECT CASE WHEN p.polrelid = t.oid THEN 'carried' ELSE 'other' END FROM pg_policy p WHERE p.oid = d.objid)
		WHEN d.classid = 'pg_attrdef'::regclass THEN (SELECT CASE WHEN a.adrelid = t.oid THEN 'carried' ELSE 'other' END FROM pg_attrdef a WHERE a.oid = d.objid)
		WHEN d.classid = 'pg_statistic_ext'::regclass THEN 'droppable'
		WHEN d.classid = 'pg_publication_rel'::regclass THEN 'carried'
		ELSE 'other' END AS kind,
		CASE WHEN d.classid = 'pg_constraint'::regclass THEN (SELECT ARRAY[n.nspname, c.relname, k.conname] FROM pg_constraint k
			JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE k.oid = d.objid)
		WHEN d.classid = 'pg_rewrite'::regclass THEN (SELECT ARRAY[n.nspname, v.relname] FROM pg_rewrite r
			JOIN pg_class v ON v.oid = r.ev_class JOIN pg_namespace n ON n.oid = v.relnamespace WHERE r.oid = d.objid)
		END AS names
		FROM deps d, t) x WHERE kind <> 'carried' ORDER BY 2`, s.oid, func(r pgx.Rows) error {
		var kind, what string
		var names []string
		if err := r.Scan(&kind, &what, &names); err != nil {
			return err
		}
		if slices.ContainsFunc(s.dependents, func(d dependent) bool { return d.what == what }) {
			return nil // depends on the table in more than one way
		}
		d := dependent{what: what}
		switch kind {
		case "droppable":
			d.droppable = true
		case "foreign key":
			d.droppable, d.drop, d.dropArgs = true, "ALTER TABLE %I.%I DROP CONSTRAINT %I", names
		case "materialized view":
			d.droppable, d.drop, d.dropArgs = true, "DROP MATERIALIZED VIEW %I.%I", names
		}
		s.dependents = append(s.dependents, d)
		return nil
	})
}

// blocking is what stops the publish: every dependent the swap cannot
// carry, or with dropDependents only those it may not drop either; and
// the table itself when the publishing role may not replace it.
func (s *tableState) blocking(dropDependents bool) []string {
	var out []string
	if !s.mayReplace {
		out = append(out, "the table itself (owned by "+s.owner+", whose privileges the publishing role lacks)")
	}
	if s.inherits {
		out = append(out, "the table's place in an inheritance or partition tree")
	}
	if !s.ownedBySelf && !s.ownerSettable && !dropDependents {
		out = append(out, "its owner "+s.owner+" (the publishing role may not give the new table to it)")
	}
	for _, d := range s.dependents {
		if !d.droppable || !dropDependents {
			out = append(out, d.what)
		}
	}
	return out
}

// structure is the indexes and constraints as text, to tell whether
// they changed between the load, which built them on the new table, and
// the swap.
func (s *tableState) structure() string {
	var b strings.Builder
	for _, x := range s.indexes {
		fmt.Fprintf(&b, "%q %q %v %q %v %v;", x.name, x.tail, x.unique, x.constraint, x.deferrable, x.deferred)
	}
	for _, c := range s.constraints {
		fmt.Fprintf(&b, "%q %q;", c.name, c.def)
	}
	return b.String()
}

// refuse is the error naming what stops the publish.
func refuse(tgt target, what []string, dropDependents bool) error {
	slices.Sort(what)
	hint := " (--drop-dependents leaves behind, dropped with the old table, what the new table cannot take)"
	if dropDependents {
		hint = " (not even --drop-dependents drops these: drop or change them, publish, and create them again)"
	}
	return fmt.Errorf("%w: %s: %s%s", ErrDependents, tgt, strings.Join(what, ", "), hint)
}
