package warehouse

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
)

// loadParallel is load on n connections besides conn (see load). conn,
// which holds the publish's advisory lock, creates NAME_new, builds the
// indexes and constraints after the rows, and drops NAME_new when the
// load fails; it never copies, so a loader's failure cannot take the
// lock with it.
func loadParallel(ctx context.Context, conn *pgx.Conn, t catalog.Readable, m *catalog.Manifest, schema catalog.Schema,
	files []catalog.DataFile, tgt target, cols string, plan *carryPlan, o Options, n int, prog *progress) (int64, error) {
	newT := tgt.with("_new")
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return createNew(ctx, tx, tgt, cols, plan, o) })
	if err != nil {
		return 0, err
	}
	rows, err := copyParallel(ctx, o.To, t, m, schema, newT, files, n, prog)
	if err == nil {
		// Built after the rows, as a restore does, and before the swap,
		// which stays short.
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return plan.runSteps(ctx, tx, plan.structureSteps(tgt)) })
	}
	if err != nil {
		if derr := dropNew(context.WithoutCancel(ctx), conn, tgt); derr != nil {
			return 0, fmt.Errorf("%w (and dropping %s failed: %v; the next publish of %s drops it)", err, newT, derr, tgt)
		}
		return 0, err
	}
	return rows, nil
}

// copyParallel copies the rows of files into NAME_new (into) on n
// connections of its own, each in a transaction, committed only once
// every one has copied its share and the rows add up to the version's.
func copyParallel(ctx context.Context, url string, t catalog.Readable, m *catalog.Manifest, schema catalog.Schema, into target,
	files []catalog.DataFile, n int, prog *progress) (int64, error) {
	conns := make([]*pgx.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	txs := make([]pgx.Tx, n)
	rollback := func() {
		for _, tx := range txs {
			if tx != nil {
				_ = tx.Rollback(context.WithoutCancel(ctx))
			}
		}
	}
	counts := make([]int64, n)
	q := &fileQueue{files: files}
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() error {
			c, err := connect(gctx, url)
			if err != nil {
				return fmt.Errorf("loader %d: %w", i+1, err)
			}
			conns[i] = c
			if txs[i], err = c.Begin(gctx); err != nil {
				return fmt.Errorf("loader %d: begin: %w", i+1, err)
			}
			counts[i], err = copyIn(gctx, c.PgConn(), t, schema, into, q, false, prog)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		rollback()
		return 0, err
	}
	var rows int64
	for _, c := range counts {
		rows += c
	}
	if rows != m.Rows {
		rollback()
		return 0, fmt.Errorf("copy into %s: %d rows, version %d has %d: %w", into, rows, m.Version, m.Rows, ErrRowCount)
	}
	for i, tx := range txs {
		if err := tx.Commit(ctx); err != nil {
			rollback()
			return 0, fmt.Errorf("commit loader %d of %s: %w", i+1, into, err)
		}
	}
	return rows, nil
}

// dropNew drops NAME_new after a failed load, when it is still the one a
// publish marked.
func dropNew(ctx context.Context, conn *pgx.Conn, tgt target) error {
	newT := tgt.with("_new")
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		exists, ours, err := leftover(ctx, tx, newT, newMark(tgt))
		if err != nil || !exists {
			return err
		}
		if !ours {
			return errors.New("it is no longer marked as this publish's")
		}
		return execOne(ctx, tx, "DROP TABLE "+newT.sql())
	})
}
