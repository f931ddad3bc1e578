package warehouse

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/catalog"
)

// openAt opens (creating when asked) the table at loc, a location as a
// user types it, relative ones included.
func openAt(t *testing.T, loc string, create bool, batches ...[][]any) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	if create {
		if _, err := tbl.Create(ctx, mustSchema(t, "x:int64"), catalog.PartitionSpec{}, nil, "test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, rows := range batches {
		appendRows(t, tbl, rows)
	}
	return tbl
}

// identityCases publishes into to: two tables that are both ./t, each
// from its own working directory, with the same version numbers; then
// the second again as its absolute path. The second is not the first,
// whatever its relative location: it must be loaded, not reported
// "unchanged". The same table by another spelling of its location is
// unchanged and not reloaded. sum reads the target's sum(x).
func identityCases(t *testing.T, to string, sum func() int64) {
	t.Helper()
	a, b := t.TempDir(), t.TempDir()
	t.Chdir(a)
	first := openAt(t, "./t", true, xRows(0, 10))
	if res := mustPublish(t, first, Options{To: to, As: "facts"}); res.Unchanged || res.Rows != 10 {
		t.Fatalf("first publish: %+v", res)
	}
	t.Chdir(b)
	second := openAt(t, "./t", true, xRows(100, 10))
	res := mustPublish(t, second, Options{To: to, As: "facts"})
	if res.Unchanged || res.Rows != 10 {
		t.Fatalf("another table at another ./t, same version: %+v, want it loaded", res)
	}
	if got, want := sum(), int64(1045); got != want {
		t.Fatalf("facts sums to %d, want %d of the second table", got, want)
	}
	again := openAt(t, filepath.Join(b, "t"), false)
	if res := mustPublish(t, again, Options{To: to, As: "facts"}); !res.Unchanged {
		t.Fatalf("the same table by its absolute path: %+v, want unchanged", res)
	}
}

// TestPublishKnowsATableByItsIdentity pins the review's finding that
// sluice_published keyed a table by its location as typed.
func TestPublishKnowsATableByItsIdentity(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		conn := connectT(t, c.super)
		identityCases(t, c.publisher, func() int64 { return count(t, conn, "SELECT sum(x) FROM facts") })
	})
}

// TestPublishKnowsATableByItsIdentitySQLite is the same in a SQLite file.
func TestPublishKnowsATableByItsIdentitySQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db := openSQLite(t, path)
	identityCases(t, "sqlite://"+path, func() int64 { return sqliteCount(t, db, "SELECT sum(x) FROM facts") })
}

// oldRecordTable is an existing table with the version's record
// written as sluice wrote it before records held an identity: columns
// target, location, version, rows, run, published_at, the location as
// typed.
func oldRecordTable(t *testing.T) (*catalog.Table, int64) {
	t.Helper()
	t.Chdir(t.TempDir())
	tbl := openAt(t, "./t", true, xRows(0, 4))
	m, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl, m.Version
}

// publishTwiceOverOldRecord: the old record causes one reload, never an
// "unchanged" taken on trust; the next publish of that version is
// unchanged.
func publishTwiceOverOldRecord(t *testing.T, tbl *catalog.Table, to string) {
	t.Helper()
	if res := mustPublish(t, tbl, Options{To: to, As: "facts"}); res.Unchanged || res.Rows != 4 {
		t.Fatalf("publish over an old record: %+v, want 4 rows loaded", res)
	}
	if res := mustPublish(t, tbl, Options{To: to, As: "facts"}); !res.Unchanged {
		t.Fatalf("publish again: %+v, want unchanged", res)
	}
}

// TestPublishOldRecordReloadsOnce: a sluice_published of an older
// sluice (written by the same publishing role) names the table by its
// location alone, which cannot tell it from another table.
func TestPublishOldRecordReloadsOnce(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		tbl, version := oldRecordTable(t)
		conn := connectT(t, c.publisher)
		execAll(t, conn, `CREATE TABLE sluice_published (target text PRIMARY KEY, location text NOT NULL, version bigint NOT NULL,
			rows bigint NOT NULL, run text NOT NULL, published_at timestamptz NOT NULL DEFAULT now())`,
			"CREATE TABLE facts (x bigint)")
		if _, err := conn.Exec(context.Background(), "INSERT INTO sluice_published (target, location, version, rows, run) VALUES ('facts', $1, $2, 0, 'old')",
			tbl.Location(), version); err != nil {
			t.Fatal(err)
		}
		publishTwiceOverOldRecord(t, tbl, c.publisher)
		if n := count(t, conn, "SELECT count(*) FROM facts"); n != 4 {
			t.Fatalf("facts has %d rows, want 4", n)
		}
	})
}

// TestPublishOldRecordReloadsOnceSQLite is the same in a SQLite file.
func TestPublishOldRecordReloadsOnceSQLite(t *testing.T) {
	tbl, version := oldRecordTable(t)
	path := filepath.Join(t.TempDir(), "w.db")
	db := openSQLite(t, path)
	for _, q := range []string{`CREATE TABLE sluice_published (target TEXT PRIMARY KEY, location TEXT NOT NULL, version INTEGER NOT NULL,
		rows INTEGER NOT NULL, run TEXT NOT NULL, published_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`,
		"CREATE TABLE facts (x INTEGER)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("INSERT INTO sluice_published (target, location, version, rows, run) VALUES ('facts', ?, ?, 0, 'old')", tbl.Location(), version); err != nil {
		t.Fatal(err)
	}
	publishTwiceOverOldRecord(t, tbl, "sqlite://"+path)
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts"); n != 4 {
		t.Fatalf("facts has %d rows, want 4", n)
	}
}
