package warehouse

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// carryPlan is what a publish carries from NAME to NAME_new: NAME's
// state read before the load, and the items the user let it leave
// behind (Options.DropDependents) because they cannot be carried.
type carryPlan struct {
	state  *tableState // nil when NAME does not exist
	skip   map[string]bool
	stuck  []string // what cannot be carried, refused after the dry run
	newOID uint32   // NAME_new, once created
}

// planCarry reads NAME (oid 0: absent) before the load and lists what
// the swap cannot carry to a table of the columns cols: a dependent that
// cannot follow, a privilege or comment of a column the new table lacks.
// The load's dry run adds what it finds and refuses them all, naming
// each, before the COPY (see dryRun).
func planCarry(ctx context.Context, conn *pgx.Conn, tgt target, oid uint32, cols []string, dropDependents bool) (*carryPlan, error) {
	p := &carryPlan{skip: map[string]bool{}}
	if oid == 0 {
		return p, nil
	}
	s, err := readState(ctx, conn, oid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tgt, err)
	}
	p.state = s
	stuck := s.blocking(dropDependents)
	for _, item := range s.missingColumns(cols) {
		if dropDependents {
			p.skip[item] = true
		} else {
			stuck = append(stuck, item)
		}
	}
	p.stuck = stuck
	return p, nil
}

// missingColumns lists the column privileges and comments of columns
// the new table does not have: nothing to carry them to.
func (s *tableState) missingColumns(cols []string) []string {
	var out []string
	for _, g := range s.grants {
		if g.column != "" && !slices.Contains(cols, g.column) {
			out = append(out, grantItem(g))
		}
	}
	for _, c := range s.colComments {
		if !slices.Contains(cols, c.column) {
			out = append(out, "comment on column "+c.column)
		}
	}
	for _, p := range s.publications {
		for _, c := range p.columns {
			if !slices.Contains(cols, c) {
				out = append(out, "publication "+p.name+" (its column list names "+c+")")
				break
			}
		}
	}
	return out
}

func grantItem(g grant) string {
	to := g.role
	if to == "" {
		to = "PUBLIC"
	}
	if g.column == "" {
		return g.priv + " granted to " + to
	}
	return g.priv + " on column " + g.column + " granted to " + to
}

// structureSteps are the statements that build NAME's indexes and
// constraints on NAME_new, each with the item it carries; an index takes
// a temporary name (index names are unique in a schema, and NAME's are
// still taken) until the swap renames it.
func (p *carryPlan) structureSteps(tgt target) []step {
	if p.state == nil {
		return nil
	}
	newT := tgt.with("_new")
	var out []step
	for i, x := range p.state.indexes {
		tmp := p.tempIndex(i)
		f := sqlFormat("CREATE INDEX %I ON %I.%I %s")
		if x.unique {
			f = "CREATE UNIQUE INDEX %I ON %I.%I %s"
		}
		st := step{item: "index " + x.name, sql: []stmt{{f, []string{tmp, newT.schema, newT.name, x.tail}}}}
		if x.constraint != "" {
			f := sqlFormat("ALTER TABLE %I.%I ADD CONSTRAINT %I UNIQUE USING INDEX %I")
			if x.constraint == "p" {
				f = "ALTER TABLE %I.%I ADD CONSTRAINT %I PRIMARY KEY USING INDEX %I"
			}
			if x.deferrable {
				f += " DEFERRABLE"
			}
			if x.deferred {
				f += " INITIALLY DEFERRED"
			}
			st.sql = append(st.sql, stmt{f, []string{newT.schema, newT.name, tmp, tmp}})
		}
		out = append(out, st)
	}
	for _, c := range p.state.constraints {
		out = append(out, step{item: "constraint " + c.name, sql: []stmt{{"ALTER TABLE %I.%I ADD CONSTRAINT %I %s",
			[]string{newT.schema, newT.name, c.name, c.def}}}})
	}
	return out
}

// tempIndex is the temporary name of NAME's i-th index on NAME_new:
// NAME_new's oid makes it unique among the relations of the database.
func (p *carryPlan) tempIndex(i int) string { return fmt.Sprintf("sluice_%d_%d", p.newOID, i) }

// policySteps create NAME's row-level security policies on NAME_new.
func (p *carryPlan) policySteps(s *tableState, tgt target) []step {
	newT := tgt.with("_new")
	var out []step
	for _, pol := range s.policies {
		f := sqlFormat("CREATE POLICY %I ON %I.%I AS RESTRICTIVE FOR ")
		if pol.permissive {
			f = "CREATE POLICY %I ON %I.%I AS PERMISSIVE FOR "
		}
		f += policyCommands[pol.cmd] + " TO "
		args := []string{pol.name, newT.schema, newT.name}
		for i, r := range pol.roles {
			if i > 0 {
				f += ", "
			}
			if r == "" {
				f += "PUBLIC"
			} else {
				f += "%I"
				args = append(args, r)
			}
		}
		if pol.using != nil {
			f += " USING (%s)"
			args = append(args, *pol.using)
		}
		if pol.withCheck != nil {
			f += " WITH CHECK (%s)"
			args = append(args, *pol.withCheck)
		}
		out = append(out, step{item: "policy " + pol.name, sql: []stmt{{f, args}}})
	}
	return out
}

// publicationSteps add NAME_new to the publications that list NAME, with
// the same column list and row filter.
func (p *carryPlan) publicationSteps(s *tableState, tgt target) []step {
	newT := tgt.with("_new")
	var out []step
	for _, pub := range s.publications {
		f := sqlFormat("ALTER PUBLICATION %I ADD TABLE ONLY %I.%I")
		args := []string{pub.name, newT.schema, newT.name}
		if pub.columns != nil {
			f += " ("
			for i, c := range pub.columns {
				if i > 0 {
					f += ", "
				}
				f += "%I"
				args = append(args, c)
			}
			f += ")"
		}
		if pub.filter != nil {
			f += " WHERE (%s)"
			args = append(args, *pub.filter)
		}
		out = append(out, step{item: "publication " + pub.name, sql: []stmt{{f, args}}})
	}
	return out
}

// policyCommands are the commands a policy applies to, by polcmd; a
// policy of another is a dependent (readPolicies).
var policyCommands = map[string]sqlFormat{"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "*": "ALL"}

// step is what carries one item: its statements, in order.
type step struct {
	item string
	sql  []stmt
}

type stmt struct {
	f    sqlFormat
	args []string
}

func (s step) run(ctx context.Context, tx pgx.Tx) error {
	for _, st := range s.sql {
		if err := execFormat(ctx, tx, st.f, st.args...); err != nil {
			return fmt.Errorf("carry %s: %w", s.item, err)
		}
	}
	return nil
}

// runSteps runs the steps not left behind.
func (p *carryPlan) runSteps(ctx context.Context, tx pgx.Tx, steps []step) error {
	for _, s := range steps {
		if p.skip[s.item] {
			continue
		}
		if err := s.run(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// dryRun tries every index, constraint, policy and publication of NAME on
// the empty NAME_new, each in a savepoint rolled back at once, so that
// one the new columns cannot take (it names a column the table no longer
// has, say) stops the publish before the load, not after; with
// dropDependents it is left behind instead.
func (p *carryPlan) dryRun(ctx context.Context, tx pgx.Tx, tgt target, dropDependents bool) error {
	if p.state == nil {
		return nil
	}
	steps := slices.Concat(p.structureSteps(tgt), p.policySteps(p.state, tgt), p.publicationSteps(p.state, tgt))
	stuck := p.stuck
	for _, s := range steps {
		if p.skip[s.item] {
			continue
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		err = s.run(ctx, sp)
		if rerr := sp.Rollback(ctx); rerr != nil {
			return fmt.Errorf("roll back to savepoint: %w", rerr)
		}
		if err != nil {
			if dropDependents {
				p.skip[s.item] = true
				continue
			}
			stuck = append(stuck, s.item+" ("+oneLine{err}.Error()+")")
		}
	}
	if len(stuck) > 0 {
		return refuse(tgt, stuck, dropDependents)
	}
	return nil
}

// carryInSwap carries, inside the swap transaction, what NAME carries as
// s reads it under the swap's lock onto NAME_new: privileges, comments,
// row-level security and its policies, replica identity FULL or NOTHING,
// publications. Indexes and constraints were built with the load.
func (p *carryPlan) carryInSwap(ctx context.Context, tx pgx.Tx, s *tableState, tgt target) error {
	newT := tgt.with("_new")
	var steps []step
	for _, g := range s.grants {
		priv, ok := privileges[g.priv]
		if !ok {
			return fmt.Errorf("carry privilege %q: unknown to sluice", g.priv)
		}
		f, args := "GRANT "+priv+" ON TABLE %I.%I TO ", []string{newT.schema, newT.name}
		if g.column != "" {
			f, args = "GRANT "+priv+" (%I) ON TABLE %I.%I TO ", []string{g.column, newT.schema, newT.name}
		}
		if g.role == "" {
			f += "PUBLIC"
		} else {
			f += "%I"
			args = append(args, g.role)
		}
		if g.option {
			f += " WITH GRANT OPTION"
		}
		steps = append(steps, step{item: grantItem(g), sql: []stmt{{f, args}}})
	}
	comment := stmt{"COMMENT ON TABLE %I.%I IS NULL", []string{newT.schema, newT.name}} // NAME_new's mark goes
	if s.comment != nil {
		comment = stmt{"COMMENT ON TABLE %I.%I IS %L", []string{newT.schema, newT.name, *s.comment}}
	}
	steps = append(steps, step{item: "the comment", sql: []stmt{comment}})
	for _, c := range s.colComments {
		steps = append(steps, step{item: "comment on column " + c.column,
			sql: []stmt{{"COMMENT ON COLUMN %I.%I.%I IS %L", []string{newT.schema, newT.name, c.column, c.text}}}})
	}
	if s.rls {
		steps = append(steps, step{item: "row-level security", sql: []stmt{{"ALTER TABLE %I.%I ENABLE ROW LEVEL SECURITY", []string{newT.schema, newT.name}}}})
	}
	if s.force {
		steps = append(steps, step{item: "forced row-level security", sql: []stmt{{"ALTER TABLE %I.%I FORCE ROW LEVEL SECURITY", []string{newT.schema, newT.name}}}})
	}
	switch s.replident {
	case "f":
		steps = append(steps, step{item: "replica identity", sql: []stmt{{"ALTER TABLE %I.%I REPLICA IDENTITY FULL", []string{newT.schema, newT.name}}}})
	case "n":
		steps = append(steps, step{item: "replica identity", sql: []stmt{{"ALTER TABLE %I.%I REPLICA IDENTITY NOTHING", []string{newT.schema, newT.name}}}})
	}
	steps = slices.Concat(steps, p.policySteps(s, tgt), p.publicationSteps(s, tgt))
	return p.runSteps(ctx, tx, steps)
}

// finishSwap, once NAME_new is NAME and the old table is gone or out of
// the way, gives the indexes built under temporary names NAME's names
// (with their constraints), sets a replica identity that uses one, and
// gives the table to NAME's owner when the publishing role may.
func (p *carryPlan) finishSwap(ctx context.Context, tx pgx.Tx, s *tableState, tgt target) error {
	for i, x := range p.state.indexes {
		if p.skip["index "+x.name] {
			continue
		}
		if err := execFormat(ctx, tx, "ALTER INDEX %I.%I RENAME TO %I", tgt.schema, p.tempIndex(i), x.name); err != nil {
			return fmt.Errorf("name index %s: %w", x.name, err)
		}
		if x.replident && s.replident == "i" {
			if err := execFormat(ctx, tx, "ALTER TABLE %I.%I REPLICA IDENTITY USING INDEX %I", tgt.schema, tgt.name, x.name); err != nil {
				return fmt.Errorf("carry replica identity: %w", err)
			}
		}
	}
	if s.ownedBySelf || !s.ownerSettable {
		return nil // not settable: refused before the load unless left behind
	}
	if err := execFormat(ctx, tx, "ALTER TABLE %I.%I OWNER TO %I", tgt.schema, tgt.name, s.owner); err != nil {
		return fmt.Errorf("give the new table to %s, the owner of the old: %w", s.owner, err)
	}
	return nil
}

// moveOldIndexes renames the kept NAME_old's indexes that NAME_new takes
// the names of, out of their way.
func (p *carryPlan) moveOldIndexes(ctx context.Context, tx pgx.Tx, tgt target) error {
	for i, x := range p.state.indexes {
		if p.skip["index "+x.name] {
			continue
		}
		if err := execFormat(ctx, tx, "ALTER INDEX %I.%I RENAME TO %I", tgt.schema, x.name, fmt.Sprintf("sluice_%d_%d", p.state.oid, i)); err != nil {
			return fmt.Errorf("rename index %s of the kept %s: %w", x.name, tgt.with("_old"), err)
		}
	}
	return nil
}
