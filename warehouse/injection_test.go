package warehouse

import (
	"context"
	"testing"
)

// TestPublishCommentIsNeverRunAsSQL pins the injection a security review
// found: the comment of the published table, which its owner may set to
// anything, was copied to the new table by splicing it, hand-quoted,
// into the text of a COMMENT statement. Under standard_conforming_strings
// = off a backslash escapes the quote that ends the literal, and the rest
// of the comment ran as SQL as the publishing role at the next publish.
// The comment must be carried verbatim and nothing in it run, with the
// setting on or off, by a publisher that is no superuser.
func TestPublishCommentIsNeverRunAsSQL(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		ctx := context.Background()
		tbl := newTable(t, "x:int64,y:string?", xyRows(0, 5))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts"})
		// What the table's owner writes (dollar-quoted: the comment is
		// the text between the $$).
		const comment = `\'; CREATE TABLE public.injected (who name DEFAULT current_user); INSERT INTO public.injected DEFAULT VALUES; --`
		admin := connectT(t, c.super)
		execAll(t, admin, "COMMENT ON TABLE facts IS $$"+comment+"$$")
		appendRows(t, tbl, xyRows(5, 5))
		res, err := Publish(ctx, tbl, Options{To: c.publisher, As: "facts"})
		var who string
		if qerr := admin.QueryRow(ctx, "SELECT who FROM public.injected").Scan(&who); qerr == nil {
			t.Fatalf("the comment ran as SQL, as %s (publish: %+v, %v)", who, res, err)
		}
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		var got string
		if err := admin.QueryRow(ctx, "SELECT obj_description('public.facts'::regclass, 'pg_class')").Scan(&got); err != nil || got != comment {
			t.Fatalf("comment %q (%v), want the old one verbatim %q", got, err, comment)
		}
		if n := count(t, admin, "SELECT count(*) FROM facts"); n != 10 {
			t.Fatalf("facts has %d rows, want 10", n)
		}
	})
}
