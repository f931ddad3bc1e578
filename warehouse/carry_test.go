package warehouse

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestPublishCarriesSecurityAndIndexes pins what publish used to drop
// without a word: row-level security (a role limited by a policy read
// every row after a publish), column privileges, indexes, constraints,
// replica identity, publication membership, column comments and the
// owner. Each must be on the new table after a publish by a role that is
// no superuser, and each must work.
func TestPublishCarriesSecurityAndIndexes(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		ctx := context.Background()
		admin := connectT(t, c.super)
		reader := testRole(t, admin, "reader")
		team := testRole(t, admin, "team")
		tbl := newTable(t, "x:int64,y:string?", xyRows(0, 10))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts"})
		// The publisher owns what it published; the team it belongs to
		// takes the table over, as an administrator would arrange.
		execAll(t, admin,
			"GRANT "+team+" TO "+c.role,
			"GRANT USAGE, CREATE ON SCHEMA public TO "+team,
			"ALTER TABLE facts OWNER TO "+team,
			"ALTER TABLE facts ENABLE ROW LEVEL SECURITY",
			"ALTER TABLE facts FORCE ROW LEVEL SECURITY",
			"CREATE POLICY small_only ON facts FOR SELECT TO "+reader+" USING (x < 5)",
			"CREATE POLICY owner_all ON facts TO "+team+" USING (true) WITH CHECK (x >= 0)",
			"GRANT SELECT (x) ON facts TO "+reader,
			"ALTER TABLE facts ADD CONSTRAINT facts_pkey PRIMARY KEY (x)",
			"ALTER TABLE facts ADD CONSTRAINT x_not_negative CHECK (x >= 0)",
			"CREATE UNIQUE INDEX facts_y_lower ON facts (lower(y)) WHERE y IS NOT NULL",
			"ALTER TABLE facts REPLICA IDENTITY USING INDEX facts_pkey",
			"COMMENT ON COLUMN facts.y IS $$the y, it's said$$",
			"CREATE PUBLICATION facts_pub FOR TABLE facts WHERE (x > 2)",
			"ALTER PUBLICATION facts_pub OWNER TO "+c.role,
		)
		type state struct {
			rls, force          bool
			policies, indexes   string
			constraints, owner  string
			replident, colPriv  string
			publication, colCom string
		}
		read := func() state {
			t.Helper()
			var s state
			err := admin.QueryRow(ctx, `SELECT c.relrowsecurity, c.relforcerowsecurity,
				coalesce((SELECT string_agg(polname || ' ' || polcmd::text || ' ' || array_to_string(polroles::regrole[], ',') || ' ' ||
					coalesce(pg_get_expr(polqual, polrelid), '-') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), '-'), '; ' ORDER BY polname)
					FROM pg_policy WHERE polrelid = c.oid), ''),
				coalesce((SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY pg_get_indexdef(indexrelid)) FROM pg_index WHERE indrelid = c.oid), ''),
				coalesce((SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), '; ' ORDER BY conname) FROM pg_constraint WHERE conrelid = c.oid), ''),
				pg_get_userbyid(c.relowner), c.relreplident::text ||
					coalesce((SELECT ' ' || i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident), ''),
				coalesce((SELECT string_agg(a.attname || ' ' || array_to_string(a.attacl, ','), '; ') FROM pg_attribute a
					WHERE a.attrelid = c.oid AND a.attacl IS NOT NULL), ''),
				coalesce((SELECT string_agg(pubname || ' ' || coalesce(rowfilter, '-'), '; ') FROM pg_publication_tables WHERE tablename = 'facts'), ''),
				coalesce(col_description(c.oid, 2), '')
				FROM pg_class c WHERE c.oid = 'public.facts'::regclass`).Scan(&s.rls, &s.force, &s.policies, &s.indexes,
				&s.constraints, &s.owner, &s.replident, &s.colPriv, &s.publication, &s.colCom)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := read()
		if before.policies == "" || before.publication == "" || before.colPriv == "" {
			t.Fatalf("the setup did not take: %+v", before)
		}
		appendRows(t, tbl, xyRows(10, 10))
		if res := mustPublish(t, tbl, Options{To: c.publisher, As: "facts"}); res.Rows != 20 {
			t.Fatalf("publish: %+v, want 20 rows", res)
		}
		if after := read(); after != before {
			t.Fatalf("the new table differs from the old:\nbefore %+v\nafter  %+v", before, after)
		}
		// And they work: the reader sees the rows its policy lets it see,
		// only the column granted; the unique index refuses a duplicate.
		tx, err := admin.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		execAll(t, tx.Conn(), "SET LOCAL ROLE "+reader)
		var n int64
		if err := tx.QueryRow(ctx, "SELECT count(x) FROM facts").Scan(&n); err != nil || n != 5 {
			t.Fatalf("the reader sees %d rows (%v), want the 5 its policy allows", n, err)
		}
		if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT y FROM facts"); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("the reader read y, granted only x: %v", err)
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
		execAll(t, tx.Conn(), "RESET ROLE")
		if _, err := tx.Exec(ctx, "INSERT INTO facts VALUES (100, 'Y3')"); err == nil || !strings.Contains(err.Error(), "facts_y_lower") {
			t.Fatalf("a duplicate of lower(y) went in: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(t, admin, "SELECT count(*) FROM pg_class WHERE relname ~ '^sluice_[0-9]+_[0-9]+$' OR relname IN ('facts_new', 'facts_old')"); n != 0 {
			t.Fatalf("%d relations left behind", n)
		}

		// Kept with --keep-old, the old table gives its index names up to
		// the new one; the next publish drops it.
		appendRows(t, tbl, xyRows(20, 1))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts", KeepOld: true})
		if after := read(); after != before {
			t.Fatalf("the new table differs from the old after --keep-old:\nbefore %+v\nafter  %+v", before, after)
		}
		if n := count(t, admin, "SELECT count(*) FROM pg_index WHERE indrelid = 'facts_old'::regclass"); n != 2 {
			t.Fatalf("facts_old has %d indexes, want its 2", n)
		}
		appendRows(t, tbl, xyRows(21, 1))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts"})
		if n := count(t, admin, "SELECT count(*) FROM pg_class WHERE relname ~ '^sluice_[0-9]+_[0-9]+$' OR relname IN ('facts_new', 'facts_old')"); n != 0 {
			t.Fatalf("%d relations left behind after --keep-old and a publish", n)
		}
	})
}

// TestPublishRefusesWhatItCannotCarry: a trigger, a rule, a foreign key
// of another table that references the target, and an index and a
// column privilege on a column the new table does not have (added to
// the published table by hand) cannot follow it to the new table; the
// publish refuses before loading anything, naming each, instead of
// dropping them (the trigger and the rule silently) or failing after the
// whole load (the foreign key). With DropDependents it leaves them
// behind and carries the rest.
func TestPublishRefusesWhatItCannotCarry(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		ctx := context.Background()
		tbl := newTable(t, "x:int64,y:string?", xyRows(0, 10))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts"})
		pub := connectT(t, c.publisher)
		admin := connectT(t, c.super)
		reader := testRole(t, admin, "reader")
		execAll(t, pub,
			"ALTER TABLE facts ADD PRIMARY KEY (x)",
			"ALTER TABLE facts ADD COLUMN extra int",
			"CREATE INDEX facts_extra ON facts (extra)",
			"GRANT SELECT (extra) ON facts TO "+reader,
			"CREATE TABLE notes (x bigint REFERENCES facts (x), note text)",
			"CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$",
			"CREATE TRIGGER facts_touch BEFORE INSERT ON facts FOR EACH ROW EXECUTE FUNCTION touch()",
			"CREATE RULE facts_no_delete AS ON DELETE TO facts DO INSTEAD NOTHING",
		)
		before := relations(t, pub)
		appendRows(t, tbl, xyRows(10, 10))
		loaded := false
		_, err := Publish(ctx, tbl, Options{To: c.publisher, As: "facts", Progress: func(int64, int64) { loaded = true }})
		if !errors.Is(err, ErrDependents) {
			t.Fatalf("publish: %v, want ErrDependents", err)
		}
		for _, want := range []string{"facts_touch", "facts_no_delete", "notes_x_fkey", "index facts_extra", "SELECT on column extra"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if loaded || strings.Contains(err.Error(), "\n") {
			t.Fatalf("publish loaded rows before refusing, or said it on many lines: %v", err)
		}
		if after := relations(t, pub); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Fatalf("the warehouse changed:\nbefore %v\nafter  %v", before, after)
		}

		execAll(t, pub, "INSERT INTO notes VALUES (3, 'kept')")
		if res := mustPublish(t, tbl, Options{To: c.publisher, As: "facts", DropDependents: true}); res.Rows != 20 {
			t.Fatalf("publish --drop-dependents: %+v, want 20 rows", res)
		}
		for q, want := range map[string]int64{
			"SELECT count(*) FROM pg_trigger WHERE tgrelid = 'facts'::regclass AND NOT tgisinternal": 0,
			"SELECT count(*) FROM pg_rewrite WHERE ev_class = 'facts'::regclass":                     0,
			"SELECT count(*) FROM pg_constraint WHERE conrelid = 'notes'::regclass":                  0,
			"SELECT count(*) FROM notes": 1,
			"SELECT count(*) FROM pg_index WHERE indrelid = 'facts'::regclass AND indisprimary": 1,
			"SELECT count(*) FROM pg_class WHERE relname IN ('facts_old', 'facts_extra')":       0,
		} {
			if n := count(t, pub, q); n != want {
				t.Errorf("%s: %d, want %d", q, n, want)
			}
		}
	})
}
