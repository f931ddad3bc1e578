package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jackc/pgx/v5"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sluice-data/sluice/catalog"
)

// sqlitePath is the database file of a sqlite: URL: sqlite:///abs/path.db,
// sqlite://relative.db or sqlite:relative.db.
func sqlitePath(u *url.URL) (string, error) {
	p := u.Opaque
	if p == "" {
		p = u.Host + u.Path
	}
	if p == "" || u.User != nil || u.RawQuery != "" {
		return "", errors.New("warehouse URL: want sqlite:///path/to/warehouse.db (a file path, no user or options)")
	}
	return p, nil
}

// publishSQLite is Publish into a SQLite database file. SQLite's DDL is
// transactional and the file is put in WAL mode, where readers read a
// snapshot and never wait for the writer: NAME_new is loaded and swapped
// in ONE write transaction, so a publish that dies leaves nothing behind
// and readers see the old table until the commit. The write lock (BEGIN
// IMMEDIATE) is the advisory lock: a second publish waits for the first
// whole, within o.LockTimeout per attempt, retried with backoff.
func publishSQLite(ctx context.Context, t catalog.Readable, tgt target, path string, o Options) (Result, error) {
	if tgt.schema != "" && tgt.schema != "main" {
		return Result{}, fmt.Errorf("%w: %q: a sqlite:// warehouse has one schema, main", ErrInvalidName, tgt.String())
	}
	tgt.schema = "main"
	m, err := t.Latest(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("read table: %w", err)
	}
	schema := catalog.ReadSchema(m)
	cols, err := sqliteColumnDefs(schema) // before the file is touched
	if err != nil {
		return Result{}, err
	}
	res := Result{Target: tgt.String(), Version: m.Version}
	log := o.Logger.With("target", res.Target, "version", m.Version)

	db, err := sql.Open("sqlite", path)
	if err != nil {
		return res, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("open %s: %w", path, sqliteErr(err))
	}
	defer conn.Close()
	// legacy_alter_table: RENAME leaves the text of views alone, so a
	// view on NAME reads the new NAME after the swap (SQLite binds views
	// by name); without it, renaming NAME to NAME_old would rewrite the
	// views to NAME_old.
	for _, p := range []string{fmt.Sprintf("PRAGMA busy_timeout = %d", max(o.LockTimeout.Milliseconds(), 1)),
		"PRAGMA journal_mode = WAL", "PRAGMA legacy_alter_table = ON"} {
		if err := sqlitePragma(ctx, conn, p, o); err != nil {
			return res, fmt.Errorf("open %s: %s: %w", path, p, sqliteErr(err))
		}
	}
	if res.LockWait, res.Attempts, err = beginImmediate(ctx, conn, o, log); err != nil {
		return res, err
	}
	log.Info("write lock taken: loading", "table", tgt.with("_new").String())
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := sqliteCheckTarget(ctx, conn, tgt); err != nil {
		return res, err
	}
	if !o.Force {
		done, err := sqliteAlreadyPublished(ctx, conn, tgt, t.Identity(m), m.Version)
		if err != nil {
			return res, err
		}
		if done {
			res.Unchanged = true
			log.Info("version already published: nothing to do")
			return res, nil
		}
	}
	if err := sqliteCheckLeftovers(ctx, conn, tgt, o.DropDependents); err != nil {
		return res, err
	}
	files, size, err := liveFiles(ctx, t, m)
	if err != nil {
		return res, err
	}
	res.Bytes = size
	began := time.Now()
	if res.Rows, err = sqliteLoad(ctx, conn, t, m, schema, files, tgt, cols, o.Progress); err != nil {
		return res, err
	}
	log.Info("loaded", "table", tgt.with("_new").String(), "rows", res.Rows, "bytes", res.Bytes, "seconds", time.Since(began).Seconds())
	rec := newRecord(t, m, res.Rows, o.RunID)
	if err := sqliteSwap(ctx, conn, tgt, rec, o.KeepOld); err != nil {
		return res, err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return res, fmt.Errorf("commit: %w", sqliteErr(err))
	}
	committed = true
	log.Info("swapped", "lock_wait", res.LockWait, "attempts", res.Attempts)
	return res, nil
}

// beginImmediate takes the database's write lock, each attempt waiting
// up to o.LockTimeout (busy_timeout), retried with backoff for up to
// o.SwapRetryFor. It returns how long it waited and the attempts.
func beginImmediate(ctx context.Context, conn *sql.Conn, o Options, log *slog.Logger) (time.Duration, int, error) {
	start := time.Now()
	attempts := 0
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 200 * time.Millisecond
	bo.MaxInterval = 10 * time.Second
	bo.MaxElapsedTime = o.SwapRetryFor
	err := backoff.Retry(func() error {
		attempts++
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			return nil
		}
		if isBusy(err) {
			log.Info("another writer holds the database past the lock timeout: retrying", "attempt", attempts, "waited", time.Since(start))
			return err
		}
		return backoff.Permanent(err)
	}, backoff.WithContext(bo, ctx))
	if err != nil {
		if isBusy(err) {
			return time.Since(start), attempts, fmt.Errorf("take the write lock: another writer held it through %d attempts over %s (lock timeout %s each): %w",
				attempts, time.Since(start).Round(time.Millisecond), o.LockTimeout, sqliteErr(err))
		}
		return time.Since(start), attempts, fmt.Errorf("begin: %w", sqliteErr(err))
	}
	return time.Since(start), attempts, nil
}

// sqlitePragma runs one PRAGMA, retrying with backoff for up to
// o.SwapRetryFor while the database is busy: switching a new file to WAL
// needs it to itself, and SQLite answers SQLITE_BUSY at once, without its
// busy timeout, when another publish opens the same new file.
func sqlitePragma(ctx context.Context, conn *sql.Conn, pragma string, o Options) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 10 * time.Millisecond
	bo.MaxInterval = time.Second
	bo.MaxElapsedTime = max(o.SwapRetryFor, time.Second)
	return backoff.Retry(func() error {
		_, err := conn.ExecContext(ctx, pragma)
		if err != nil && !isBusy(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(bo, ctx))
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// sqliteErr is err printed on one line.
func sqliteErr(err error) error { return oneLine{err} }

// sqliteCheckTarget fails with ErrNotATable when tgt names a view (or an
// index or trigger) in the database.
func sqliteCheckTarget(ctx context.Context, conn *sql.Conn, tgt target) error {
	var kind string
	err := conn.QueryRowContext(ctx, "SELECT type FROM main.sqlite_master WHERE name = ? COLLATE NOCASE AND type <> 'trigger'", tgt.name).Scan(&kind)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("look up %s: %w", tgt, sqliteErr(err))
	case kind != "table":
		return fmt.Errorf("%s is a %s: %w (sluice replaces only a table it can rename)", tgt, kind, ErrNotATable)
	}
	return nil
}

// sqliteAlreadyPublished is alreadyPublished in SQLite.
func sqliteAlreadyPublished(ctx context.Context, conn *sql.Conn, tgt target, identity string, version int64) (bool, error) {
	var n, hasIdentity int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name IN (?, ?)),
		(SELECT count(*) FROM pragma_table_info(?) WHERE name = 'identity')`, publishedTable, tgt.name, publishedTable).Scan(&n, &hasIdentity); err != nil {
		return false, fmt.Errorf("read %s: %w", publishedTable, sqliteErr(err))
	}
	if n < 2 || hasIdentity == 0 { // never published here, the table dropped, or records without identity
		return false, nil
	}
	var id sql.NullString
	var v int64
	err := conn.QueryRowContext(ctx, "SELECT identity, version FROM "+recordsOf(tgt)+" WHERE target = ?", tgt.name).Scan(&id, &v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", publishedTable, sqliteErr(err))
	}
	return id.Valid && id.String == identity && v == version, nil
}

// keptMark is the name of the trigger, a no-op, that marks a NAME_old
// kept by KeepOld as a publish's own: SQLite tables have no comments, and
// a trigger goes wherever its table goes and is dropped with it.
func keptMark(tgt target) string { return "sluice_kept_" + tgt.name + "_old" }

// sqliteCheckLeftovers refuses, before the load, a NAME_new (a SQLite
// publish loads and swaps in one transaction, so it never leaves one: any
// is someone's), a NAME_old that no publish kept, and indexes and
// triggers on NAME, which the swap does not carry (left behind with
// dropDependents).
func sqliteCheckLeftovers(ctx context.Context, conn *sql.Conn, tgt target, dropDependents bool) error {
	rows, err := conn.QueryContext(ctx, `SELECT m.name, m.type, m.tbl_name,
		EXISTS (SELECT 1 FROM main.sqlite_master k WHERE k.type = 'trigger' AND k.name = ? AND k.tbl_name = m.name)
		FROM main.sqlite_master m WHERE m.name IN (? COLLATE NOCASE, ? COLLATE NOCASE)
		   OR (m.tbl_name = ? COLLATE NOCASE AND m.type IN ('index', 'trigger') AND m.sql IS NOT NULL)
		ORDER BY m.name`, keptMark(tgt), tgt.with("_new").name, tgt.with("_old").name, tgt.name)
	if err != nil {
		return fmt.Errorf("look up %s: %w", tgt, sqliteErr(err))
	}
	defer rows.Close()
	var stuck []string
	for rows.Next() {
		var name, kind, table string
		var kept bool
		if err := rows.Scan(&name, &kind, &table, &kept); err != nil {
			return fmt.Errorf("look up %s: %w", tgt, sqliteErr(err))
		}
		switch {
		case strings.EqualFold(name, tgt.with("_new").name):
			return taken(tgt.with("_new"), tgt)
		case strings.EqualFold(name, tgt.with("_old").name):
			if !kept {
				return taken(tgt.with("_old"), tgt)
			}
		case !dropDependents:
			stuck = append(stuck, kind+" "+name)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("look up %s: %w", tgt, sqliteErr(err))
	}
	if len(stuck) > 0 {
		return refuse(tgt, stuck, false)
	}
	return nil
}

// sqliteLoad creates NAME_new and inserts the
// version's rows into it, in the caller's transaction.
func sqliteLoad(ctx context.Context, conn *sql.Conn, t catalog.Readable, m *catalog.Manifest, schema catalog.Schema, files []catalog.DataFile,
	tgt target, cols string, progress func(done, total int64)) (int64, error) {
	newT := tgt.with("_new")
	if _, err := conn.ExecContext(ctx, "CREATE TABLE "+newT.sql()+" ("+cols+")"); err != nil {
		return 0, fmt.Errorf("create %s: %w", newT, sqliteErr(err))
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(schema.Columns)), ", ")
	stmt, err := conn.PrepareContext(ctx, "INSERT INTO "+newT.sql()+" VALUES ("+marks+")")
	if err != nil {
		return 0, fmt.Errorf("prepare insert into %s: %w", newT, sqliteErr(err))
	}
	defer stmt.Close()
	src := newRowSource(ctx, t, schema, files, sqliteConverters(schema))
	defer src.close()
	var n int64
	for src.Next() {
		row, _ := src.Values()
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return n, fmt.Errorf("insert into %s: %w", newT, sqliteErr(err))
		}
		n++
		if progress != nil && n%batchRows == 0 {
			progress(n, m.Rows)
		}
	}
	if err := src.Err(); err != nil {
		return n, err
	}
	if progress != nil {
		progress(n, m.Rows)
	}
	if n != m.Rows {
		return n, fmt.Errorf("insert into %s: %d rows, version %d has %d: %w", newT, n, m.Version, m.Rows, ErrRowCount)
	}
	return n, nil
}

// sqliteSwap renames NAME to NAME_old and NAME_new to NAME, drops
// NAME_old unless keepOld (then marks it as kept), having dropped a
// NAME_old an earlier publish kept, and records the version, in the
// caller's transaction.
func sqliteSwap(ctx context.Context, conn *sql.Conn, tgt target, rec record, keepOld bool) error {
	newT, oldT := tgt.with("_new"), tgt.with("_old")
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", tgt.name).Scan(&n); err != nil {
		return fmt.Errorf("look up %s: %w", tgt, sqliteErr(err))
	}
	stmts := []string{}
	if n > 0 {
		// A NAME_old here is one a publish kept: sqliteCheckLeftovers
		// refused any other, in this transaction.
		stmts = append(stmts, "DROP TABLE IF EXISTS "+oldT.sql(),
			"ALTER TABLE "+tgt.sql()+" RENAME TO "+pgx.Identifier{oldT.name}.Sanitize())
	}
	stmts = append(stmts, "ALTER TABLE "+newT.sql()+" RENAME TO "+pgx.Identifier{tgt.name}.Sanitize())
	if n > 0 && keepOld {
		stmts = append(stmts, "CREATE TRIGGER "+pgx.Identifier{"main", keptMark(tgt)}.Sanitize()+" BEFORE DELETE ON "+
			pgx.Identifier{oldT.name}.Sanitize()+" WHEN 0 BEGIN SELECT 1; END")
	}
	if n > 0 && !keepOld {
		stmts = append(stmts, "DROP TABLE "+oldT.sql())
	}
	stmts = append(stmts, "CREATE TABLE IF NOT EXISTS "+recordsOf(tgt)+` (
		target TEXT PRIMARY KEY, location TEXT NOT NULL, version INTEGER NOT NULL,
		rows INTEGER NOT NULL, run TEXT NOT NULL, published_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), identity TEXT)`)
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("swap: %s: %w", s, sqliteErr(err))
		}
	}
	var has int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?) WHERE name = 'identity'", publishedTable).Scan(&has); err != nil {
		return fmt.Errorf("read %s: %w", publishedTable, sqliteErr(err))
	}
	if has == 0 { // records of an older sluice
		if _, err := conn.ExecContext(ctx, "ALTER TABLE "+recordsOf(tgt)+" ADD COLUMN identity TEXT"); err != nil {
			return fmt.Errorf("add the identity column to %s: %w", publishedTable, sqliteErr(err))
		}
	}
	_, err := conn.ExecContext(ctx, "INSERT INTO "+recordsOf(tgt)+` (target, identity, location, version, rows, run) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (target) DO UPDATE SET identity = excluded.identity, location = excluded.location, version = excluded.version,
		rows = excluded.rows, run = excluded.run, published_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
		tgt.name, rec.identity, rec.location, rec.version, rec.rows, rec.run)
	if err != nil {
		return fmt.Errorf("record in %s: %w", publishedTable, sqliteErr(err))
	}
	return nil
}
