package warehouse

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// cancelOn is a slog handler that cancels a context at the first line
// whose message is msg: a publish killed at that point.
type cancelOn struct {
	msg    string
	cancel context.CancelFunc
}

func (c cancelOn) Enabled(context.Context, slog.Level) bool { return true }

func (c cancelOn) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == c.msg {
		c.cancel()
	}
	return nil
}

func (c cancelOn) WithAttrs([]slog.Attr) slog.Handler { return c }

func (c cancelOn) WithGroup(string) slog.Handler { return c }

// TestPublishLeavesOthersNewAndOld pins the review's finding that
// publishing X dropped any table named X_new or X_old. Only what a
// publish made is dropped: a stale X_new of a publish that died after
// its load is rebuilt, and an X_old kept by --keep-old is replaced; an
// X_new or X_old someone else made (by hand, or by publishing --as
// X_new) makes the publish refuse, naming it, and stays as it was.
func TestPublishLeavesOthersNewAndOld(t *testing.T) {
	forEachPG(t, func(t *testing.T, c pgCase) {
		ctx := context.Background()
		pub := connectT(t, c.publisher)
		tbl := newTable(t, "x:int64", xRows(0, 10))
		other := newTable(t, "x:int64", xRows(0, 3))
		refused := func(name string, rows int64) {
			t.Helper()
			loaded := false
			_, err := Publish(ctx, tbl, Options{To: c.publisher, As: "facts", Progress: func(int64, int64) { loaded = true }})
			if err == nil || !strings.Contains(err.Error(), "public."+name+" ") || loaded {
				t.Fatalf("publish beside someone's %s: %v (loaded %v), want a refusal naming it before the load", name, err, loaded)
			}
			if n := count(t, pub, "SELECT count(*) FROM "+name); n != rows {
				t.Fatalf("%s has %d rows, want its %d", name, n, rows)
			}
		}

		// Someone's facts_new, by hand and then by a publish --as facts_new.
		execAll(t, pub, "CREATE TABLE facts_new (x bigint)", "INSERT INTO facts_new VALUES (1), (2)")
		refused("facts_new", 2)
		execAll(t, pub, "DROP TABLE facts_new")
		mustPublish(t, other, Options{To: c.publisher, As: "facts_new"})
		refused("facts_new", 3)
		execAll(t, pub, "DROP TABLE facts_new")

		// A publish that died after its load leaves a facts_new of its
		// own: the next publish drops it and loads again.
		dying, cancel := context.WithCancel(ctx)
		_, err := Publish(dying, tbl, Options{To: c.publisher, As: "facts", Logger: slog.New(cancelOn{msg: "loaded", cancel: cancel})})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the dying publish: %v", err)
		}
		if n := count(t, pub, "SELECT count(*) FROM facts_new"); n != 10 {
			t.Fatalf("the dying publish left facts_new with %d rows, want the 10 loaded", n)
		}
		if res := mustPublish(t, tbl, Options{To: c.publisher, As: "facts"}); res.Rows != 10 {
			t.Fatalf("publish after a dead one: %+v", res)
		}

		// Someone's facts_old, a backup made by hand.
		execAll(t, pub, "CREATE TABLE facts_old AS SELECT * FROM facts WHERE x < 4")
		appendRows(t, tbl, xRows(10, 5))
		refused("facts_old", 4)
		execAll(t, pub, "DROP TABLE facts_old")

		// The facts_old a publish kept is the next publish's to replace.
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts", KeepOld: true})
		if n := count(t, pub, "SELECT count(*) FROM facts_old"); n != 10 {
			t.Fatalf("facts_old has %d rows, want the 10 replaced", n)
		}
		appendRows(t, tbl, xRows(15, 5))
		mustPublish(t, tbl, Options{To: c.publisher, As: "facts"})
		if n := count(t, pub, "SELECT count(*) FROM pg_class WHERE relname IN ('facts_new', 'facts_old')"); n != 0 {
			t.Fatalf("%d of facts_new/_old left behind", n)
		}
		if n := count(t, pub, "SELECT count(*) FROM facts"); n != 20 {
			t.Fatalf("facts has %d rows, want 20", n)
		}
	})
}

// TestPublishLeavesOthersNewAndOldSQLite: a SQLite publish loads and
// swaps in one transaction, so it never leaves a NAME_new behind; any
// NAME_new or NAME_old it did not keep itself is someone else's.
func TestPublishLeavesOthersNewAndOldSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	to := "sqlite://" + path
	db := openSQLite(t, path)
	tbl := newTable(t, "x:int64", xRows(0, 10))
	refused := func(name string, rows int64) {
		t.Helper()
		_, err := Publish(context.Background(), tbl, Options{To: to, As: "facts"})
		if err == nil || !strings.Contains(err.Error(), "main."+name+" ") {
			t.Fatalf("publish beside someone's %s: %v, want a refusal naming it", name, err)
		}
		if n := sqliteCount(t, db, "SELECT count(*) FROM "+name); n != rows {
			t.Fatalf("%s has %d rows, want its %d", name, n, rows)
		}
	}
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE facts_new (x INTEGER)")
	exec("INSERT INTO facts_new VALUES (1), (2)")
	refused("facts_new", 2)
	exec("DROP TABLE facts_new")
	mustPublish(t, newTable(t, "x:int64", xRows(0, 3)), Options{To: to, As: "facts_new"})
	refused("facts_new", 3)
	exec("DROP TABLE facts_new")

	mustPublish(t, tbl, Options{To: to, As: "facts"})
	exec("CREATE TABLE facts_old AS SELECT * FROM facts WHERE x < 4")
	appendRows(t, tbl, xRows(10, 5))
	refused("facts_old", 4)
	exec("DROP TABLE facts_old")

	mustPublish(t, tbl, Options{To: to, As: "facts", KeepOld: true})
	if n := sqliteCount(t, db, "SELECT count(*) FROM facts_old"); n != 10 {
		t.Fatalf("facts_old has %d rows, want the 10 replaced", n)
	}
	appendRows(t, tbl, xRows(15, 5))
	mustPublish(t, tbl, Options{To: to, As: "facts"})
	if n := sqliteCount(t, db, "SELECT count(*) FROM sqlite_master WHERE name IN ('facts_new', 'facts_old')"); n != 0 {
		t.Fatalf("%d of facts_new/_old left behind", n)
	}
}
