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

// record is what the swap writes to sluice_published.
type record struct {
	location string
	version  int64
	rows     int64
	run      string
}

func recordsOf(tgt target) string { return pgx.Identifier{tgt.schema, publishedTable}.Sanitize() }

// alreadyPublished tells whether tgt exists and holds version of the
// table at location, as the last swap recorded.
func alreadyPublished(ctx context.Context, conn *pgx.Conn, tgt target, location string, version int64) (bool, error) {
	var v int64
	var loc string
	err := conn.QueryRow(ctx, "SELECT location, version FROM "+recordsOf(tgt)+
		" WHERE target = $1 AND to_regclass($2) IS NOT NULL", tgt.name, tgt.sql()).Scan(&loc, &v)
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case errors.As(err, &pe) && pe.Code == "42P01": // undefined_table: never published here
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", publishedTable, err)
	}
	return loc == location && v == version, nil
}

// writeRecord records r for tgt inside the swap transaction, creating
// the records table the first time (serialised per schema, so two first
// publishes do not race to create it).
func writeRecord(ctx context.Context, tx pgx.Tx, tgt target, r record) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "sluice published "+tgt.schema); err != nil {
		return fmt.Errorf("lock %s: %w", publishedTable, err)
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+recordsOf(tgt)+` (
		target text PRIMARY KEY, location text NOT NULL, version bigint NOT NULL,
		rows bigint NOT NULL, run text NOT NULL, published_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create %s: %w", publishedTable, err)
	}
	_, err := tx.Exec(ctx, "INSERT INTO "+recordsOf(tgt)+` (target, location, version, rows, run) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (target) DO UPDATE SET location = EXCLUDED.location, version = EXCLUDED.version,
		rows = EXCLUDED.rows, run = EXCLUDED.run, published_at = now()`, tgt.name, r.location, r.version, r.rows, r.run)
	if err != nil {
		return fmt.Errorf("record in %s: %w", publishedTable, err)
	}
	return nil
}
