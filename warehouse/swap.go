package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lockNotAvailable is SQLSTATE 55P03, what lock_timeout raises.
const lockNotAvailable = "55P03"

// swap runs the swap transaction, retrying with backoff while it cannot
// take its locks within o.LockTimeout. It returns how long it waited for
// locks in all (failed attempts and backoff included) and the attempts.
func swap(ctx context.Context, conn *pgx.Conn, tgt target, rec record, o Options, log *slog.Logger) (time.Duration, int, error) {
	start := time.Now()
	var wait time.Duration
	attempts := 0
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 200 * time.Millisecond
	bo.MaxInterval = 10 * time.Second
	bo.MaxElapsedTime = o.SwapRetryFor
	err := backoff.Retry(func() error {
		attempts++
		locked, err := swapOnce(ctx, conn, tgt, rec, o)
		if err == nil {
			wait = locked.Sub(start)
			return nil
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == lockNotAvailable {
			log.Info("swap could not lock within the lock timeout: retrying", "attempt", attempts, "waited", time.Since(start))
			return err
		}
		return backoff.Permanent(err)
	}, backoff.WithContext(bo, ctx))
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == lockNotAvailable {
			return time.Since(start), attempts, fmt.Errorf("swap %s: readers held it through %d attempts over %s (lock timeout %s each): %w",
				tgt, attempts, time.Since(start).Round(time.Millisecond), o.LockTimeout, err)
		}
		return time.Since(start), attempts, err
	}
	return wait, attempts, nil
}

// swapOnce is one attempt of the swap transaction; it returns when its
// locks were taken.
func swapOnce(ctx context.Context, conn *pgx.Conn, tgt target, rec record, o Options) (time.Time, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("begin swap: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// SET LOCAL takes no parameters: the value is a whole number of ms.
	ms := max(o.LockTimeout.Milliseconds(), 1)
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", ms)); err != nil {
		return time.Time{}, fmt.Errorf("set lock_timeout: %w", err)
	}
	newT, oldT := tgt.with("_new"), tgt.with("_old")
	var oid uint32
	err = tx.QueryRow(ctx, "SELECT coalesce(to_regclass($1)::oid, 0)", tgt.sql()).Scan(&oid)
	if err != nil {
		return time.Time{}, fmt.Errorf("look up %s: %w", tgt, err)
	}
	lock := "LOCK TABLE " + newT.sql()
	if oid != 0 {
		lock += ", " + tgt.sql()
	}
	if _, err := tx.Exec(ctx, lock+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		return time.Time{}, fmt.Errorf("lock %s: %w", tgt, err)
	}
	locked := time.Now()
	var views []view
	if oid != 0 {
		if err := checkTargetTx(ctx, tx, tgt); err != nil {
			return time.Time{}, err
		}
		if err := carryGrants(ctx, tx, oid, newT); err != nil {
			return time.Time{}, err
		}
		if views, err = dependentViews(ctx, tx, oid); err != nil {
			return time.Time{}, err
		}
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+oldT.sql()); err != nil {
			return time.Time{}, fmt.Errorf("drop %s left by an earlier publish: %w", oldT, err)
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE "+tgt.sql()+" RENAME TO "+pgx.Identifier{oldT.name}.Sanitize()); err != nil {
			return time.Time{}, fmt.Errorf("rename %s to %s: %w", tgt, oldT, err)
		}
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE "+newT.sql()+" RENAME TO "+pgx.Identifier{tgt.name}.Sanitize()); err != nil {
		return time.Time{}, fmt.Errorf("rename %s to %s: %w", newT, tgt, err)
	}
	for _, v := range views {
		if _, err := tx.Exec(ctx, v.replace()); err != nil {
			return time.Time{}, fmt.Errorf("recreate view %s on the new %s: %w", v.name, tgt, err)
		}
	}
	if oid != 0 && !o.KeepOld {
		if _, err := tx.Exec(ctx, "DROP TABLE "+oldT.sql()); err != nil {
			return time.Time{}, fmt.Errorf("drop %s: %w", oldT, err)
		}
	}
	if err := writeRecord(ctx, tx, tgt, rec); err != nil {
		return time.Time{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return time.Time{}, fmt.Errorf("commit swap: %w", err)
	}
	return locked, nil
}

// checkTargetTx is checkTarget under the swap's lock: the target may have
// changed while NAME_new loaded.
func checkTargetTx(ctx context.Context, tx pgx.Tx, tgt target) error {
	var kind string
	if err := tx.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)", tgt.sql()).Scan(&kind); err != nil {
		return fmt.Errorf("look up %s: %w", tgt, err)
	}
	if kind != "r" {
		return fmt.Errorf("%s is a %s: %w", tgt, relkindName(kind), ErrNotATable)
	}
	return nil
}

// privileges are the table privileges a GRANT may name; aclexplode
// reports nothing else, and anything else is refused rather than spliced
// into SQL.
var privileges = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true,
	"TRUNCATE": true, "REFERENCES": true, "TRIGGER": true, "MAINTAIN": true}

// carryGrants grants on newT what was granted on the table oid (to PUBLIC
// too), its owner's own rights aside, and copies the table's comment and
// its owner when they differ.
func carryGrants(ctx context.Context, tx pgx.Tx, oid uint32, newT target) error {
	rows, err := tx.Query(ctx, `SELECT CASE WHEN a.grantee = 0 THEN '' ELSE pg_get_userbyid(a.grantee) END, a.privilege_type, a.is_grantable
		FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = $1 AND a.grantee <> c.relowner`, oid)
	if err != nil {
		return fmt.Errorf("read privileges: %w", err)
	}
	type grant struct {
		role, priv string
		option     bool
	}
	grants, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (grant, error) {
		var g grant
		err := r.Scan(&g.role, &g.priv, &g.option)
		return g, err
	})
	if err != nil {
		return fmt.Errorf("read privileges: %w", err)
	}
	for _, g := range grants {
		if !privileges[g.priv] {
			return fmt.Errorf("carry privilege %q: unknown to sluice", g.priv)
		}
		to := "PUBLIC"
		if g.role != "" {
			to = pgx.Identifier{g.role}.Sanitize()
		}
		stmt := "GRANT " + g.priv + " ON TABLE " + newT.sql() + " TO " + to
		if g.option {
			stmt += " WITH GRANT OPTION"
		}
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("grant %s to %s on the new table: %w", g.priv, to, err)
		}
	}
	var comment *string
	var owner, newOwner string
	err = tx.QueryRow(ctx, `SELECT obj_description($1, 'pg_class'), pg_get_userbyid(relowner),
		(SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass($2)) FROM pg_class WHERE oid = $1`,
		oid, newT.sql()).Scan(&comment, &owner, &newOwner)
	if err != nil {
		return fmt.Errorf("read comment and owner: %w", err)
	}
	if comment != nil {
		// COMMENT takes no parameters: quote the text as a literal.
		lit := "'" + strings.ReplaceAll(*comment, "'", "''") + "'"
		if _, err := tx.Exec(ctx, "COMMENT ON TABLE "+newT.sql()+" IS "+lit); err != nil {
			return fmt.Errorf("carry the comment: %w", err)
		}
	}
	if owner != newOwner {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+newT.sql()+" OWNER TO "+pgx.Identifier{owner}.Sanitize()); err != nil {
			return fmt.Errorf("give the new table to %s, the owner of the old: %w", owner, err)
		}
	}
	return nil
}
