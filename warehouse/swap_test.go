package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/testenv"
)

func xRows(from, n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(from + i)}
	}
	return rows
}

// TestPublishCarriesGrantsCommentAndViews: after a second publish, a role
// granted SELECT on the table keeps it, the comment stays, and a view on
// the table (and a view on that view) shows the new rows.
func TestPublishCarriesGrantsCommentAndViews(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	conn := connectT(t, url)
	// Roles are the server's, not the database's: name it after the
	// test's own database.
	db, _, _ := strings.Cut(url[strings.LastIndex(url, "/")+1:], "?")
	role := "dash_" + db
	if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = conn.Exec(context.Background(), "DROP ROLE "+role)
	})
	tbl := newTable(t, "x:int64", xRows(0, 10))
	mustPublish(t, tbl, Options{To: url, As: "facts"})
	for _, q := range []string{"GRANT SELECT ON facts TO " + role, "COMMENT ON TABLE facts IS 'the facts, it''s said'",
		"CREATE VIEW big_facts AS SELECT x FROM facts WHERE x >= 5", "CREATE VIEW big_count AS SELECT count(*) AS n FROM big_facts",
		"GRANT SELECT ON big_facts TO " + role} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	appendRows(t, tbl, xRows(10, 10))
	res := mustPublish(t, tbl, Options{To: url, As: "facts"})
	if res.Rows != 20 || res.Attempts != 1 {
		t.Fatalf("result %+v: want 20 rows in one attempt", res)
	}
	if n := count(t, conn, "SELECT count(*) FROM facts"); n != 20 {
		t.Fatalf("facts has %d rows, want 20", n)
	}
	if n := count(t, conn, "SELECT count(*) FROM big_facts"); n != 15 {
		t.Fatalf("the view big_facts shows %d rows, want 15 of the new table", n)
	}
	if n := count(t, conn, "SELECT n FROM big_count"); n != 15 {
		t.Fatalf("the view on the view shows %d, want 15", n)
	}
	var can bool
	if err := conn.QueryRow(ctx, "SELECT has_table_privilege($1, 'public.facts', 'SELECT')", role).Scan(&can); err != nil || !can {
		t.Fatalf("%s lost SELECT on facts (%v)", role, err)
	}
	var comment string
	if err := conn.QueryRow(ctx, "SELECT obj_description('public.facts'::regclass, 'pg_class')").Scan(&comment); err != nil || comment != "the facts, it's said" {
		t.Fatalf("comment %q (%v): want the old one", comment, err)
	}
	if n := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname IN ('facts_new', 'facts_old')"); n != 0 {
		t.Fatalf("%d of facts_new/_old left behind", n)
	}

	// --keep-old keeps the replaced table; the next publish replaces it.
	appendRows(t, tbl, xRows(20, 1))
	mustPublish(t, tbl, Options{To: url, As: "facts", KeepOld: true})
	if n := count(t, conn, "SELECT count(*) FROM facts_old"); n != 20 {
		t.Fatalf("facts_old has %d rows, want the 20 replaced", n)
	}
	if n := count(t, conn, "SELECT count(*) FROM big_facts"); n != 16 {
		t.Fatalf("the view shows %d rows after --keep-old, want 16 of the new table", n)
	}
}

// TestPublishSameVersionChangesNothing: publishing the version already
// there says so and leaves the table as it is (same identity); Force
// reloads it.
func TestPublishSameVersionChangesNothing(t *testing.T) {
	url := testenv.PostgresURL(t)
	conn := connectT(t, url)
	tbl := newTable(t, "x:int64", xRows(0, 3))
	mustPublish(t, tbl, Options{To: url, As: "facts"})
	oid := count(t, conn, "SELECT 'facts'::regclass::oid::bigint")
	res := mustPublish(t, tbl, Options{To: url, As: "facts"})
	if !res.Unchanged || res.Rows != 0 {
		t.Fatalf("republish: %+v, want Unchanged with nothing loaded", res)
	}
	if again := count(t, conn, "SELECT 'facts'::regclass::oid::bigint"); again != oid {
		t.Fatalf("republish rebuilt the table (oid %d -> %d)", oid, again)
	}
	res = mustPublish(t, tbl, Options{To: url, As: "facts", Force: true})
	if res.Unchanged || res.Rows != 3 {
		t.Fatalf("forced republish: %+v, want 3 rows loaded", res)
	}
	if again := count(t, conn, "SELECT 'facts'::regclass::oid::bigint"); again == oid {
		t.Fatal("forced republish left the old table in place")
	}
	if v := count(t, conn, "SELECT version FROM sluice_published WHERE target = 'facts'"); v != res.Version {
		t.Fatalf("sluice_published records version %d, want %d", v, res.Version)
	}
	// Someone dropped the table: the record alone does not stop a publish.
	if _, err := conn.Exec(context.Background(), "DROP TABLE facts"); err != nil {
		t.Fatal(err)
	}
	if res := mustPublish(t, tbl, Options{To: url, As: "facts"}); res.Unchanged || res.Rows != 3 {
		t.Fatalf("publish after a drop: %+v, want 3 rows loaded", res)
	}
}

// TestPublishDropsStaleNew: a NAME_new left by a publish that died after
// its load (another shape, other rows) is dropped and rebuilt.
func TestPublishDropsStaleNew(t *testing.T) {
	url := testenv.PostgresURL(t)
	conn := connectT(t, url)
	junk := newTable(t, "junk:string", [][]any{{"half"}, {"loaded"}})
	dying, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := Publish(dying, junk, Options{To: url, As: "facts", Logger: slog.New(cancelOn{msg: "loaded", cancel: cancel})}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the dying publish: %v", err)
	}
	if n := count(t, conn, "SELECT count(*) FROM facts_new WHERE junk IS NOT NULL"); n != 2 {
		t.Fatalf("the dying publish left facts_new with %d rows, want 2", n)
	}
	tbl := newTable(t, "x:int64", xRows(0, 4))
	mustPublish(t, tbl, Options{To: url, As: "facts"})
	if n := count(t, conn, "SELECT count(*) FROM facts WHERE x >= 0"); n != 4 {
		t.Fatalf("facts has %d rows, want 4", n)
	}
	if n := count(t, conn, "SELECT count(*) FROM pg_class WHERE relname = 'facts_new'"); n != 0 {
		t.Fatal("facts_new left behind")
	}
}

// TestPublishBadInput: each bad input fails with one line saying what,
// and the warehouse is unchanged.
func TestPublishBadInput(t *testing.T) {
	url := testenv.PostgresURL(t)
	conn := connectT(t, url)
	if _, err := conn.Exec(context.Background(), "CREATE TABLE y (a int); CREATE VIEW a_view AS SELECT 1 AS a"); err != nil {
		t.Fatal(err)
	}
	tbl := newTable(t, "x:int64", xRows(0, 2))
	const secret = "Wr0ng-Pa55-sentinel"
	wrong := strings.Replace(url, testenv.PostgresPassword, secret, 1)
	cases := map[string]struct {
		to, as string
		is     error
		want   string
	}{
		"an unreachable host":          {to: "postgres://postgres:" + secret + "@127.0.0.1:1/x?connect_timeout=5", as: "t", want: "connect"},
		"a wrong password":             {to: wrong, as: "t", want: "password authentication failed"},
		"a missing database":           {to: strings.Replace(url, "/sluice_", "/nosuch_", 1), as: "t", want: "does not exist"},
		"an injecting name":            {to: url, as: "x; DROP TABLE y", is: ErrInvalidName},
		"a name starting with a digit": {to: url, as: "1abc", is: ErrInvalidName},
		"three parts":                  {to: url, as: "a.b.c", is: ErrInvalidName},
		"a quoted name":                {to: url, as: `"y"`, is: ErrInvalidName},
		"sluice's own record table":    {to: url, as: "public.Sluice_Published", is: ErrInvalidName, want: "records"},
		"a name too long for NAME_new": {to: url, as: strings.Repeat("n", 60), is: ErrInvalidName},
		"a name that is a view":        {to: url, as: "a_view", is: ErrNotATable, want: "view"},
		"redshift from a local table":  {to: "redshift://u:" + secret + "@h/db", as: "t", is: ErrNotOnS3, want: "s3://"},
		"an unknown scheme":            {to: "mysql://h/db", as: "t", want: "postgres://"},
		"a URL that does not parse":    {to: "postgres://u:" + secret + "@h:port/db", as: "t", want: "warehouse URL"},
	}
	before := relations(t, conn)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Publish(context.Background(), tbl, Options{To: c.to, As: c.as})
			if err == nil {
				t.Fatal("publish succeeded")
			}
			msg := err.Error()
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", msg, c.is)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not say %q", msg, c.want)
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, secret) {
				t.Errorf("error %q: want one line without the password", msg)
			}
		})
	}
	if after := relations(t, conn); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("the warehouse changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestColumnWithoutMappingFailsFirst: a column type with no SQL mapping
// fails before any statement, naming the column, in every warehouse's
// mapping. (Every type a table can hold today has one, so no table can
// be made to show it through Publish.)
func TestColumnWithoutMappingFailsFirst(t *testing.T) {
	sc := mustSchema(t, "x:int64,y:string")
	sc.Columns[1].Type.Kind = "interval"
	for name, defs := range map[string]func(catalog.Schema) (string, error){
		"postgres": columnDefs, "sqlite": sqliteColumnDefs, "redshift": redshiftColumnDefs} {
		_, err := defs(sc)
		if !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), `column "y": interval`) {
			t.Errorf("%s column defs: %v, want ErrUnsupportedType naming y", name, err)
		}
	}
}

// TestReadersSeeWholeTables: a reader querying count and sum in a tight
// loop, as a role granted only SELECT, while 20 publishes alternate two
// versions, sees only one or the other, never an error (the role keeps
// its grant through every swap); a view on the table shows the version
// just published after each.
func TestReadersSeeWholeTables(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	small := newTable(t, "x:int64", xRows(0, 1000))
	big := newTable(t, "x:int64", xRows(0, 3000), xRows(3000, 2000))
	mustPublish(t, small, Options{To: url, As: "facts"})
	conn := connectT(t, url)
	role := testRole(t, conn, "reader")
	for _, q := range []string{"GRANT SELECT ON facts TO " + role, "CREATE VIEW facts_sum AS SELECT count(*) AS n, sum(x) AS s FROM facts",
		"GRANT SELECT ON facts_sum TO " + role} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	reader := connectT(t, url)
	if _, err := reader.Exec(ctx, "SET ROLE "+role); err != nil {
		t.Fatal(err)
	}
	query := func(q string) (got [2]int64, err error) {
		err = reader.QueryRow(ctx, q).Scan(&got[0], &got[1])
		return got, err
	}
	seen := readWhilePublishing(t, query, "SELECT count(*), sum(x) FROM facts", func(i int, tbl *catalog.Table) {
		mustPublish(t, tbl, Options{To: url, As: "facts"})
		var got [2]int64
		if err := conn.QueryRow(ctx, "SELECT n, s FROM facts_sum").Scan(&got[0], &got[1]); err != nil || got != wholeOf(tbl == big) {
			t.Fatalf("after publish %d the view shows %v (%v), want %v", i, got, err, wholeOf(tbl == big))
		}
	}, small, big)
	t.Logf("reader saw %v", seen)
}

// TestReadersSeeWholeTablesSQLite is TestReadersSeeWholeTables on a
// SQLite file: a reader on its own connection, a view.
func TestReadersSeeWholeTablesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	to := "sqlite://" + path
	small := newTable(t, "x:int64", xRows(0, 1000))
	big := newTable(t, "x:int64", xRows(0, 3000), xRows(3000, 2000))
	mustPublish(t, small, Options{To: to, As: "facts"})
	db := openSQLite(t, path)
	if _, err := db.Exec("CREATE VIEW facts_sum AS SELECT count(*) AS n, sum(x) AS s FROM facts"); err != nil {
		t.Fatal(err)
	}
	readerDB := openSQLite(t, path)
	readerDB.SetMaxOpenConns(1)
	query := func(q string) (got [2]int64, err error) {
		err = readerDB.QueryRow(q).Scan(&got[0], &got[1])
		return got, err
	}
	seen := readWhilePublishing(t, query, "SELECT count(*), sum(x) FROM facts", func(i int, tbl *catalog.Table) {
		mustPublish(t, tbl, Options{To: to, As: "facts"})
		var got [2]int64
		if err := db.QueryRow("SELECT n, s FROM facts_sum").Scan(&got[0], &got[1]); err != nil || got != wholeOf(tbl == big) {
			t.Fatalf("after publish %d the view shows %v (%v), want %v", i, got, err, wholeOf(tbl == big))
		}
	}, small, big)
	t.Logf("reader saw %v", seen)
}

// wholeOf is the count and sum of the big or the small version.
func wholeOf(big bool) [2]int64 {
	if big {
		return [2]int64{5000, 4999 * 5000 / 2}
	}
	return [2]int64{1000, 999 * 1000 / 2}
}

// readWhilePublishing runs query in a tight loop while publish is called
// 20 times, alternating big and small (big first); the reader must see
// only one whole version or the other, and no error. It returns how
// often it saw each.
func readWhilePublishing(t *testing.T, query func(string) ([2]int64, error), q string,
	publish func(int, *catalog.Table), small, big *catalog.Table) map[[2]int64]int {
	t.Helper()
	want := map[[2]int64]bool{wholeOf(false): true, wholeOf(true): true}
	done := make(chan struct{})
	errc := make(chan error, 1)
	seen := map[[2]int64]int{}
	stopped := false
	defer func() { // a publish that failed the test stops the reader too
		if !stopped {
			close(done)
			<-errc
		}
	}()
	go func() {
		defer close(errc)
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := query(q)
			if err != nil {
				errc <- fmt.Errorf("reader: %w", err)
				return
			}
			if !want[got] {
				errc <- fmt.Errorf("reader saw count %d, sum %d: neither whole version", got[0], got[1])
				return
			}
			seen[got]++
		}
	}()
	for i := 0; i < 20; i++ {
		tbl := big
		if i%2 == 1 {
			tbl = small
		}
		publish(i, tbl)
	}
	close(done)
	stopped = true
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("the reader ran no query")
	}
	return seen
}

// testRole creates a role named after the test's database (roles are the
// server's, shared by every test database), dropped at the end.
func testRole(t *testing.T, conn *pgx.Conn, prefix string) string {
	t.Helper()
	ctx := context.Background()
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	role := prefix + "_" + db
	if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE ROLE "+role); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = conn.Exec(context.Background(), "DROP ROLE "+role)
	})
	return role
}
