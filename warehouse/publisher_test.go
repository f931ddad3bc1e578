package warehouse

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/internal/testenv"
)

// pgCase is a database of the test server as a publish meets it in the
// field: the superuser's URL (the administrator, and the table owners
// the tests stand in for) and the URL of a publishing role that is no
// superuser, granted what a publisher needs and nothing more.
type pgCase struct {
	super, publisher string
	role             string // the publishing role
	scs              string // standard_conforming_strings: on or off
}

// forEachPG runs fn once with standard_conforming_strings on and once
// with it off (a legal setting older clusters keep, under which a
// backslash escapes a quote inside '...'), each on a new database, as a
// publishing role that is not a superuser.
func forEachPG(t *testing.T, fn func(t *testing.T, c pgCase)) {
	for _, scs := range []string{"on", "off"} {
		t.Run("standard_conforming_strings="+scs, func(t *testing.T) {
			super := testenv.PostgresURL(t)
			admin := connectT(t, super)
			ctx := context.Background()
			var db string
			if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
				t.Fatal(err)
			}
			role := loginRole(t, admin, "publisher")
			for _, q := range []string{
				"ALTER DATABASE " + db + " SET standard_conforming_strings = " + scs,
				// What a publisher needs: create and replace tables in
				// the schema, and own a publication of them.
				"GRANT USAGE, CREATE ON SCHEMA public TO " + role,
				"GRANT CREATE ON DATABASE " + db + " TO " + role,
			} {
				if _, err := admin.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			u, err := url.Parse(super)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(role, rolePassword)
			c := pgCase{super: super, publisher: u.String(), role: role, scs: scs}
			// The setting and the role are what the test says they are.
			pub := connectT(t, c.publisher)
			var got string
			var superuser bool
			if err := pub.QueryRow(ctx, "SELECT current_setting('standard_conforming_strings'), rolsuper FROM pg_roles WHERE rolname = current_user").
				Scan(&got, &superuser); err != nil || got != scs || superuser {
				t.Fatalf("publisher: standard_conforming_strings %q, superuser %v (%v): want %s, no superuser", got, superuser, err, scs)
			}
			pub.Close(ctx)
			fn(t, c)
		})
	}
}

// rolePassword is the test roles' password, a test-only value.
const rolePassword = "sluice-test-role"

// loginRole is testRole that may log in with rolePassword.
func loginRole(t *testing.T, conn *pgx.Conn, prefix string) string {
	t.Helper()
	role := testRole(t, conn, prefix)
	if _, err := conn.Exec(context.Background(), "ALTER ROLE "+role+" LOGIN PASSWORD '"+rolePassword+"'"); err != nil {
		t.Fatal(err)
	}
	return role
}

// execAll runs each statement on conn, failing the test on the first
// error.
func execAll(t *testing.T, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func xyRows(from, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(from + i), fmt.Sprintf("y%d", from+i)}
	}
	return rows
}
