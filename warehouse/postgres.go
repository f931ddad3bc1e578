package warehouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
)

// connectTimeout bounds connecting when the URL sets no connect_timeout.
const connectTimeout = 15 * time.Second

// publishPostgres is Publish into PostgreSQL.
func publishPostgres(ctx context.Context, t catalog.Readable, tgt target, o Options) (Result, error) {
	m, err := t.Latest(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("read table: %w", err)
	}
	schema := catalog.ReadSchema(m)
	cols, err := columnDefs(schema) // before anything is created
	if err != nil {
		return Result{}, err
	}
	conn, err := connect(ctx, o.To)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if tgt.schema == "" {
		if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&tgt.schema); err != nil {
			return Result{}, fmt.Errorf("current schema: %w", err)
		}
	}
	res := Result{Target: tgt.String(), Version: m.Version}
	log := o.Logger.With("target", res.Target, "version", m.Version)

	// One publish of a target at a time: the session lock outlives the
	// load and the swap, and the server drops it with a dead connection.
	release, err := advisoryLock(ctx, conn, tgt, log)
	if err != nil {
		return res, err
	}
	defer release()

	oid, err := checkTarget(ctx, conn, tgt)
	if err != nil {
		return res, err
	}
	if !o.Force {
		done, err := alreadyPublished(ctx, conn, tgt, t.Identity(m), m.Version)
		if err != nil {
			return res, err
		}
		if done {
			res.Unchanged = true
			log.Info("version already published: nothing to do")
			return res, nil
		}
	}
	// Before anything is loaded: what NAME carries that the swap cannot
	// carry, and a NAME_new or NAME_old that is not sluice's to drop.
	if err := checkLeftovers(ctx, conn, tgt, oid != 0); err != nil {
		return res, err
	}
	plan, err := planCarry(ctx, conn, tgt, oid, columnNames(schema), o.DropDependents)
	if err != nil {
		return res, err
	}
	files, size, err := liveFiles(ctx, t, m)
	if err != nil {
		return res, err
	}
	res.Bytes = size
	began := time.Now()
	if res.Rows, err = load(ctx, conn, t, m, schema, files, tgt, cols, plan, o); err != nil {
		return res, err
	}
	log.Info("loaded", "table", tgt.with("_new").String(), "rows", res.Rows, "bytes", res.Bytes, "seconds", time.Since(began).Seconds())
	if _, err := conn.Exec(ctx, "ANALYZE "+tgt.with("_new").sql()); err != nil {
		return res, fmt.Errorf("analyze %s: %w", tgt.with("_new"), err)
	}
	log.Info("analyzed: swapping", "table", tgt.with("_new").String())
	rec := newRecord(t, m, res.Rows, o.RunID)
	if res.LockWait, res.Attempts, err = swap(ctx, conn, tgt, rec, plan, o, log); err != nil {
		return res, err
	}
	log.Info("swapped", "lock_wait", res.LockWait, "attempts", res.Attempts)
	return res, nil
}

func columnNames(schema catalog.Schema) []string {
	names := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		names[i] = c.Name
	}
	return names
}

// connect opens one connection to url. pgx reads the password from the
// URL, PGPASSWORD or ~/.pgpass; its errors name user, host and database,
// never the password.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("warehouse URL: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", oneLine{err})
	}
	return conn, nil
}

// oneLine is an error printed on one line: pgx lists each address it
// tried on a line of its own.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	return strings.Join(strings.Fields(strings.ReplaceAll(e.err.Error(), "\n\t", "; ")), " ")
}

func (e oneLine) Unwrap() error { return e.err }

// advisoryLock takes the session advisory lock of tgt, waiting (and
// saying so) while another publish of it holds the lock.
func advisoryLock(ctx context.Context, conn *pgx.Conn, tgt target, log interface {
	Info(string, ...any)
}) (release func(), err error) {
	key := "sluice publish " + tgt.String()
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key).Scan(&got); err != nil {
		return nil, fmt.Errorf("advisory lock: %w", err)
	}
	if !got {
		log.Info("another publish of the target runs: waiting for it")
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", key); err != nil {
			return nil, fmt.Errorf("wait for another publish of %s: %w", tgt, err)
		}
	}
	return func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)
	}, nil
}

// checkTarget fails with ErrNotATable when tgt names something that is
// not an ordinary table, before anything is created; it returns the
// table's oid, 0 when there is none.
func checkTarget(ctx context.Context, conn *pgx.Conn, tgt target) (uint32, error) {
	var kind string
	var oid uint32
	err := conn.QueryRow(ctx, `SELECT c.relkind::text, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, tgt.schema, tgt.name).Scan(&kind, &oid)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("look up %s: %w", tgt, err)
	case kind != "r":
		return 0, fmt.Errorf("%s is a %s: %w (sluice replaces only a table it can rename)", tgt, relkindName(kind), ErrNotATable)
	}
	return oid, nil
}

func relkindName(k string) string {
	switch k {
	case "v":
		return "view"
	case "m":
		return "materialized view"
	case "p":
		return "partitioned table"
	case "f":
		return "foreign table"
	case "S":
		return "sequence"
	case "i", "I":
		return "index"
	}
	return "relation of kind " + k
}

// load rebuilds NAME_new (dropping a stale one of a dead publish),
// marked as a publish's own, tries on it what plan carries, fills it with
// binary COPY, then builds NAME's indexes and constraints on it. It
// returns the rows loaded, which must be the version's.
//
// On one connection all of it is one transaction: a load that dies
// leaves nothing, and COPY FREEZE writes the rows frozen (the table was
// created in the transaction). On several, the empty NAME_new is
// committed first so that the loaders' connections can see it; each
// loader copies the files it takes from a shared queue in a transaction
// of its own, and none commits before every one has copied its share and
// the rows add up to the version's, so a loader that fails rolls back
// every share. NAME_new is then dropped; one that a dead process leaves
// is marked and invisible as NAME, and the next publish drops it.
func load(ctx context.Context, conn *pgx.Conn, t catalog.Readable, m *catalog.Manifest, schema catalog.Schema, files []catalog.DataFile,
	tgt target, cols string, plan *carryPlan, o Options) (int64, error) {
	prog := &progress{total: m.Rows, fn: o.Progress}
	if n := min(o.Connections, len(files)); n > 1 {
		return loadParallel(ctx, conn, t, m, schema, files, tgt, cols, plan, o, n, prog)
	}
	newT := tgt.with("_new")
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin load: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := createNew(ctx, tx, tgt, cols, plan, o); err != nil {
		return 0, err
	}
	// COPY FREEZE takes a table created or truncated in the current
	// subtransaction, and the dry run's savepoints leave one open:
	// truncating the empty table there costs nothing.
	if err := execOne(ctx, tx, "TRUNCATE "+newT.sql()); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", newT, err)
	}
	n, err := copyIn(ctx, tx.Conn().PgConn(), t, schema, newT, &fileQueue{files: files}, true, prog)
	if err != nil {
		return 0, err
	}
	if n != m.Rows {
		return 0, fmt.Errorf("copy into %s: %d rows, version %d has %d: %w", newT, n, m.Version, m.Rows, ErrRowCount)
	}
	// Built after the rows, as a restore does: faster than row by row,
	// and before the swap, which stays short.
	if err := plan.runSteps(ctx, tx, plan.structureSteps(tgt)); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit load of %s: %w", newT, err)
	}
	return n, nil
}

// createNew creates NAME_new in tx, marked as a publish's own, after
// dropping a stale one of a dead publish, and tries on it what plan
// carries.
func createNew(ctx context.Context, tx pgx.Tx, tgt target, cols string, plan *carryPlan, o Options) error {
	newT := tgt.with("_new")
	exists, ours, err := leftover(ctx, tx, newT, newMark(tgt))
	if err != nil {
		return err
	}
	if exists && !ours {
		return taken(newT, tgt)
	}
	if exists {
		if err := execOne(ctx, tx, "DROP TABLE "+newT.sql()); err != nil {
			return fmt.Errorf("drop stale %s: %w", newT, err)
		}
	}
	if err := execOne(ctx, tx, "CREATE TABLE "+newT.sql()+" ("+cols+")"); err != nil {
		return fmt.Errorf("create %s: %w", newT, err)
	}
	if err := execFormat(ctx, tx, "COMMENT ON TABLE %I.%I IS %L", newT.schema, newT.name, newMark(tgt)); err != nil {
		return fmt.Errorf("mark %s: %w", newT, err)
	}
	if err := tx.QueryRow(ctx, "SELECT to_regclass($1)::oid", newT.sql()).Scan(&plan.newOID); err != nil {
		return fmt.Errorf("look up %s: %w", newT, err)
	}
	return plan.dryRun(ctx, tx, tgt, o.DropDependents)
}
