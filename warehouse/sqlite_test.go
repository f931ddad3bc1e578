package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func sqliteCount(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// sqliteObjects lists the database's schema objects: what "the
// warehouse unchanged" compares.
func sqliteObjects(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT type || ':' || name || ':' || coalesce(sql, '') FROM sqlite_master ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

// TestPublishSQLiteSwap: republishing swaps in the new rows, a view on
// the table shows them, someone's NAME_new is refused, not dropped (a
// SQLite publish never leaves one of its own), no _new or _old is left
// (kept with KeepOld), the same version again changes nothing, and Force
// reloads.
func TestPublishSQLiteSwap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	to := "sqlite://" + path
	tbl := newTable(t, "x:int64", xRows(0, 10))
	mustPublish(t, tbl, Options{To: to, As: "facts"})
	db := openSQLite(t, path)
	for _, q := range []string{"CREATE VIEW big_facts AS SELECT x FROM facts WHERE x >= 5",
		"CREATE TABLE facts_new (junk TEXT)", "INSERT INTO facts_new VALUES ('half')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	appendRows(t, tbl, xRows(10, 10))
	if _, err := Publish(context.Background(), tbl, Options{To: to, As: "facts"}); !errors.Is(err, ErrTaken) {
		t.Fatalf("publish beside someone's facts_new: %v, want ErrTaken", err)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts_new"); n != 1 {
		t.Fatalf("facts_new has %d rows, want its 1", n)
	}
	if _, err := db.Exec("DROP TABLE facts_new"); err != nil {
		t.Fatal(err)
	}
	res := mustPublish(t, tbl, Options{To: to, As: "facts"})
	if res.Rows != 20 || res.Unchanged || res.Attempts != 1 {
		t.Fatalf("result %+v: want 20 rows in one attempt", res)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts"); n != 20 {
		t.Fatalf("facts has %d rows, want 20", n)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM big_facts"); n != 15 {
		t.Fatalf("the view shows %d rows, want 15 of the new table", n)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM sqlite_master WHERE name IN ('facts_new', 'facts_old')"); n != 0 {
		t.Fatalf("%d of facts_new/_old left behind", n)
	}
	if v := sqliteCount(t, db, "SELECT version FROM sluice_published WHERE target = 'facts'"); v != res.Version {
		t.Fatalf("sluice_published records version %d, want %d", v, res.Version)
	}
	before := sqliteObjects(t, db)
	if again := mustPublish(t, tbl, Options{To: to, As: "facts"}); !again.Unchanged || again.Rows != 0 {
		t.Fatalf("republish: %+v, want Unchanged", again)
	}
	if after := sqliteObjects(t, db); after != before {
		t.Fatalf("republishing the same version changed the database:\n%s\n%s", before, after)
	}
	if forced := mustPublish(t, tbl, Options{To: to, As: "facts", Force: true, KeepOld: true}); forced.Unchanged || forced.Rows != 20 {
		t.Fatalf("forced republish: %+v, want 20 rows loaded", forced)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts_old"); n != 20 {
		t.Fatalf("facts_old has %d rows, want the 20 replaced", n)
	}
}

// TestPublishSQLiteBadInput: each bad input fails with one line, and the
// database is unchanged.
func TestPublishSQLiteBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	to := "sqlite://" + path
	db := openSQLite(t, path)
	if _, err := db.Exec("CREATE TABLE y (a INTEGER); CREATE VIEW a_view AS SELECT 1 AS a"); err != nil {
		t.Fatal(err)
	}
	tbl := newTable(t, "x:int64", xRows(0, 2))
	nan := newTable(t, "x:int64,f:float64?", [][]any{{int64(1), 0.5}, {int64(2), math.NaN()}})
	nested := newTable(t, "x:int64,s:struct<a:int64>?", [][]any{{int64(1), nil}})
	cases := map[string]struct {
		tbl    *catalog.Table
		to, as string
		is     error
		want   string
	}{
		"an injecting name":        {tbl: tbl, to: to, as: "x; DROP TABLE y", is: ErrInvalidName},
		"a schema other than main": {tbl: tbl, to: to, as: "mart.t", is: ErrInvalidName, want: "main"},
		"a name that is a view":    {tbl: tbl, to: to, as: "a_view", is: ErrNotATable, want: "view"},
		"a NaN":                    {tbl: nan, to: to, as: "t", want: `column "f": NaN`},
		"a nested column":          {tbl: nested, to: to, as: "t", is: ErrUnsupportedType, want: `column "s": struct<a:int64>`},
		"a missing directory":      {tbl: tbl, to: "sqlite://" + filepath.Join(path, "no", "w.db"), as: "t", want: "open"},
		"options in the URL":       {tbl: tbl, to: to + "?_pragma=x", as: "t", want: "sqlite:///path"},
	}
	before := sqliteObjects(t, db)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Publish(context.Background(), c.tbl, Options{To: c.to, As: c.as})
			if err == nil {
				t.Fatal("publish succeeded")
			}
			msg := err.Error()
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", msg, c.is)
			}
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line saying %q", msg, c.want)
			}
		})
	}
	if after := sqliteObjects(t, db); after != before {
		t.Fatalf("the database changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestPublishSQLiteRefusesNaN: SQLite would store a NaN as NULL; the
// publish fails naming the column instead, and nothing is created.
func TestPublishSQLiteRefusesNaN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	tbl := newTable(t, "x:int64,f:float64", [][]any{{int64(1), math.NaN()}})
	_, err := Publish(context.Background(), tbl, Options{To: "sqlite://" + path, As: "t"})
	if err == nil || !strings.Contains(err.Error(), `column "f": NaN, which SQLite cannot store`) {
		t.Fatalf("publish: %v, want the NaN refused naming f", err)
	}
	if n := sqliteCount(t, openSQLite(t, path), "SELECT count(*) FROM sqlite_master"); n != 0 {
		t.Fatalf("%d objects created by a failed publish", n)
	}
}

// TestPublishSQLiteTwoAtOnce: two publishes of different tables to one
// SQLite target at once both succeed, one after the other (the write
// lock), and the target holds one of them whole.
func TestPublishSQLiteTwoAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	a := newTable(t, "x:int64", xRows(0, 20000))
	b := newTable(t, "x:int64", xRows(0, 30000))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, tbl := range []*catalog.Table{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Publish(context.Background(), tbl, Options{To: "sqlite://" + path, As: "facts", LockTimeout: 50 * time.Millisecond})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := openSQLite(t, path)
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts"); n != 20000 && n != 30000 {
		t.Fatalf("facts has %d rows: a mix", n)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM sqlite_master WHERE name IN ('facts_new', 'facts_old')"); n != 0 {
		t.Fatal("facts_new or facts_old left behind")
	}
}

// TestPublishSQLiteLongReader: in WAL mode a reader's open transaction
// does not hold a SQLite publish back (one attempt), and the reader keeps
// its snapshot, the old rows, until it ends; then it reads the new ones.
func TestPublishSQLiteLongReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	to := "sqlite://" + path
	tbl := newTable(t, "x:int64", xRows(0, 10))
	mustPublish(t, tbl, Options{To: to, As: "facts"})
	appendRows(t, tbl, xRows(10, 5))
	db := openSQLite(t, path)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	inTx := func() int64 {
		var n int64
		if err := tx.QueryRow("SELECT count(*) FROM facts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := inTx(); n != 10 {
		t.Fatalf("facts has %d rows, want 10", n)
	}
	res := mustPublish(t, tbl, Options{To: to, As: "facts", LockTimeout: 100 * time.Millisecond})
	if res.Rows != 15 || res.Attempts != 1 {
		t.Fatalf("result %+v: want 15 rows in one attempt", res)
	}
	if n := inTx(); n != 10 {
		t.Fatalf("the long reader saw %d rows in its snapshot, want the old 10", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts"); n != 15 {
		t.Fatalf("facts has %d rows after the reader ended, want 15", n)
	}
}
