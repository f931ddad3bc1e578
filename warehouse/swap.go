package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
func swap(ctx context.Context, conn *pgx.Conn, tgt target, rec record, plan *carryPlan, o Options, log *slog.Logger) (time.Duration, int, error) {
	start := time.Now()
	var wait time.Duration
	attempts := 0
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 200 * time.Millisecond
	bo.MaxInterval = 10 * time.Second
	bo.MaxElapsedTime = o.SwapRetryFor
	err := backoff.Retry(func() error {
		attempts++
		locked, err := swapOnce(ctx, conn, tgt, rec, plan, o)
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
func swapOnce(ctx context.Context, conn *pgx.Conn, tgt target, rec record, plan *carryPlan, o Options) (time.Time, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("begin swap: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := setLockTimeout(ctx, tx, max(o.LockTimeout.Milliseconds(), 1)); err != nil {
		return time.Time{}, err
	}
	newT := tgt.with("_new")
	var oid uint32
	err = tx.QueryRow(ctx, "SELECT coalesce(to_regclass($1)::oid, 0)", tgt.sql()).Scan(&oid)
	if err != nil {
		return time.Time{}, fmt.Errorf("look up %s: %w", tgt, err)
	}
	if (oid == 0) != (plan.state == nil) || (oid != 0 && oid != plan.state.oid) {
		return time.Time{}, fmt.Errorf("%s was created, dropped or replaced while %s loaded: publish again", tgt, newT)
	}
	lock := "LOCK TABLE " + newT.sql()
	if oid != 0 {
		lock += ", " + tgt.sql()
	}
	if err := execOne(ctx, tx, lock+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		return time.Time{}, fmt.Errorf("lock %s: %w", tgt, err)
	}
	locked := time.Now()
	if oid == 0 {
		if err := execFormat(ctx, tx, "COMMENT ON TABLE %I.%I IS NULL", newT.schema, newT.name); err != nil {
			return time.Time{}, fmt.Errorf("unmark %s: %w", newT, err)
		}
		if err := execOne(ctx, tx, "ALTER TABLE "+newT.sql()+" RENAME TO "+pgx.Identifier{tgt.name}.Sanitize()); err != nil {
			return time.Time{}, fmt.Errorf("rename %s to %s: %w", newT, tgt, err)
		}
	} else if err := replace(ctx, tx, tgt, plan, o); err != nil {
		return time.Time{}, err
	}
	if err := writeRecord(ctx, tx, tgt, rec); err != nil {
		return time.Time{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return time.Time{}, fmt.Errorf("commit swap: %w", err)
	}
	return locked, nil
}

// replace is the swap of an existing NAME, under the swap's locks: NAME
// is read again (it may have changed while NAME_new loaded) and carried
// to NAME_new, renamed to NAME_old, NAME_new to NAME, views recreated on
// it, and NAME_old dropped (kept and marked with KeepOld), with the
// dependents the user let it drop.
func replace(ctx context.Context, tx pgx.Tx, tgt target, plan *carryPlan, o Options) error {
	newT, oldT := tgt.with("_new"), tgt.with("_old")
	if err := checkTargetTx(ctx, tx, tgt); err != nil {
		return err
	}
	s, err := readState(ctx, tx, plan.state.oid)
	if err != nil {
		return fmt.Errorf("%s: %w", tgt, err)
	}
	if stuck := s.blocking(o.DropDependents); len(stuck) > 0 {
		return refuse(tgt, stuck, o.DropDependents)
	}
	if s.structure() != plan.state.structure() {
		return fmt.Errorf("the indexes or constraints of %s changed while %s loaded: publish again", tgt, newT)
	}
	if err := plan.carryInSwap(ctx, tx, s, tgt); err != nil {
		return err
	}
	views, err := dependentViews(ctx, tx, s.oid)
	if err != nil {
		return err
	}
	exists, ours, err := leftover(ctx, tx, oldT, oldMark(tgt))
	if err != nil {
		return err
	}
	if exists && !ours {
		return taken(oldT, tgt)
	}
	if exists {
		if err := execOne(ctx, tx, "DROP TABLE "+oldT.sql()); err != nil {
			return fmt.Errorf("drop %s kept by an earlier publish: %w", oldT, err)
		}
	}
	if err := execOne(ctx, tx, "ALTER TABLE "+tgt.sql()+" RENAME TO "+pgx.Identifier{oldT.name}.Sanitize()); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tgt, oldT, err)
	}
	if err := execOne(ctx, tx, "ALTER TABLE "+newT.sql()+" RENAME TO "+pgx.Identifier{tgt.name}.Sanitize()); err != nil {
		return fmt.Errorf("rename %s to %s: %w", newT, tgt, err)
	}
	for _, v := range views {
		if err := execOne(ctx, tx, v.replace()); err != nil {
			return fmt.Errorf("recreate view %s on the new %s: %w", v.name, tgt, err)
		}
	}
	if o.KeepOld {
		if err := plan.moveOldIndexes(ctx, tx, tgt); err != nil {
			return err
		}
		if err := execFormat(ctx, tx, "COMMENT ON TABLE %I.%I IS %L", oldT.schema, oldT.name, oldMark(tgt)); err != nil {
			return fmt.Errorf("mark %s: %w", oldT, err)
		}
	} else {
		for _, d := range s.dependents {
			if d.drop == "" {
				continue
			}
			if err := execFormat(ctx, tx, d.drop, d.dropArgs...); err != nil {
				return fmt.Errorf("drop %s (--drop-dependents): %w", d.what, err)
			}
		}
		if err := execOne(ctx, tx, "DROP TABLE "+oldT.sql()); err != nil {
			return fmt.Errorf("drop %s: %w", oldT, err)
		}
	}
	return plan.finishSwap(ctx, tx, s, tgt)
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
