package warehouse

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// publishedTable is the table, beside each target in its schema, where
// sluice records which table version every target holds.
const publishedTable = "sluice_published"

// record is what the swap writes to sluice_published: the table's
// identity (catalog.Table.Identity: its id, or for a table older than
// ids its absolute root URL), which is what tells one table from
// another; its location, the absolute root URL, for people to read; the
// version, rows and run.
type record struct {
	identity string
	location string
	version  int64
	rows     int64
	run      string
}

func recordsOf(tgt target) string { return pgx.Identifier{tgt.schema, publishedTable}.Sanitize() }

// alreadyPublished tells whether tgt exists and holds version of the
// table identity, as the last swap recorded. A record without identity
// (written before records had one) matches nothing: it costs one reload,
// never a wrong "unchanged".
func alreadyPublished(ctx context.Context, conn *pgx.Conn, tgt target, identity string, version int64) (bool, error) {
	var v int64
	var id *string
	// to_jsonb reads the identity whether or not the column exists yet.
	err := conn.QueryRow(ctx, "SELECT to_jsonb(r) ->> 'identity', r.version FROM "+recordsOf(tgt)+
		" r WHERE r.target = $1 AND to_regclass($2) IS NOT NULL", tgt.name, tgt.sql()).Scan(&id, &v)
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table: never published here
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", publishedTable, err)
	}
	return id != nil && *id == identity && v == version, nil
}

// writeRecord records r for tgt inside the swap transaction, creating
// the records table the first time (serialised per schema, so two first
// publishes do not race to create it) and giving one of an older sluice
// its identity column.
func writeRecord(ctx context.Context, tx pgx.Tx, tgt target, r record) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "sluice published "+tgt.schema); err != nil {
		return fmt.Errorf("lock %s: %w", publishedTable, err)
	}
	if err := execOne(ctx, tx, "CREATE TABLE IF NOT EXISTS "+recordsOf(tgt)+` (
		target text PRIMARY KEY, location text NOT NULL, version bigint NOT NULL,
		rows bigint NOT NULL, run text NOT NULL, published_at timestamptz NOT NULL DEFAULT now(), identity text)`); err != nil {
		return fmt.Errorf("create %s: %w", publishedTable, err)
	}
	var has bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'identity' AND NOT attisdropped)",
		recordsOf(tgt)).Scan(&has); err != nil {
		return fmt.Errorf("read %s: %w", publishedTable, err)
	}
	if !has { // altered only when needed: a role that may write the records need not own them
		if err := execOne(ctx, tx, "ALTER TABLE "+recordsOf(tgt)+" ADD COLUMN IF NOT EXISTS identity text"); err != nil {
			return fmt.Errorf("add the identity column to %s: %w", publishedTable, err)
		}
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+recordsOf(tgt)+` (target, identity, location, version, rows, run) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (target) DO UPDATE SET identity = EXCLUDED.identity, location = EXCLUDED.location, version = EXCLUDED.version,
		rows = EXCLUDED.rows, run = EXCLUDED.run, published_at = now()`, tgt.name, r.identity, r.location, r.version, r.rows, r.run)
	if err != nil {
		return fmt.Errorf("record in %s: %w", publishedTable, err)
	}
	return nil
}
