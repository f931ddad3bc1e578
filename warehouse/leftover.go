package warehouse

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A publish drops only the NAME_new and NAME_old it made: NAME_new is
// marked by its comment from its creation until the swap gives it NAME's
// comment, and a NAME_old kept by Options.KeepOld by its comment from the
// swap on (NAME's own comment lives on in the new NAME). Anything else by
// those names is someone's, and the publish refuses rather than drop it.

// newMark is the comment of a NAME_new being loaded: a publish that dies
// after its load leaves it, and the next publish of NAME drops it.
func newMark(tgt target) string {
	return "sluice publish: " + tgt.String() + "_new, being loaded; a later publish of " + tgt.String() + " drops it"
}

// oldMark is the comment of a NAME_old that a publish with KeepOld kept.
func oldMark(tgt target) string {
	return "sluice publish: the " + tgt.String() + " that a publish with --keep-old replaced; the next publish of " + tgt.String() + " drops it"
}

// leftover tells whether schema.name exists and whether its comment is
// mark (pg_description, which Redshift has too).
func leftover(ctx context.Context, q querier, t target, mark string) (exists, ours bool, err error) {
	var comment *string
	err = q.QueryRow(ctx, `SELECT d.description FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
		WHERE n.nspname = $1 AND c.relname = $2`, t.schema, t.name).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("look up %s: %w", t, err)
	}
	return true, comment != nil && *comment == mark, nil
}

// taken is the refusal to drop someone's NAME_new or NAME_old.
func taken(t, tgt target) error {
	return fmt.Errorf("%w: %s exists and no publish of %s made it; rename or drop it, then publish again", ErrTaken, t, tgt)
}

// checkLeftovers refuses, before anything is loaded, a NAME_new that is
// not a publish's own, and, when NAME exists (the swap would replace an
// old one), a NAME_old that is not one a publish kept.
func checkLeftovers(ctx context.Context, q querier, tgt target, nameExists bool) error {
	exists, ours, err := leftover(ctx, q, tgt.with("_new"), newMark(tgt))
	if err != nil {
		return err
	}
	if exists && !ours {
		return taken(tgt.with("_new"), tgt)
	}
	if !nameExists {
		return nil
	}
	exists, ours, err = leftover(ctx, q, tgt.with("_old"), oldMark(tgt))
	if err != nil {
		return err
	}
	if exists && !ours {
		return taken(tgt.with("_old"), tgt)
	}
	return nil
}
