package warehouse

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// How statements reach PostgreSQL. No value read from the database (a
// comment, a role or column name, a publication) or given by the user is
// ever spliced into SQL text by this package: a value is a bind
// parameter; a statement that takes none (COMMENT, GRANT, CREATE POLICY,
// ALTER PUBLICATION...) is built by the server with format() from a
// constant of this package and bind parameters, %I quoting identifiers and
// %L literals as the server's own settings require (standard_conforming_
// strings included); and every statement runs alone, by the extended
// protocol, where the server refuses a string of more than one. What is
// spliced client-side is only the target's name (validated letters,
// digits and _, then quoted), column names of the table (quoted by
// pgx.Identifier), numbers and keywords of this package, and SQL text the
// server deparsed itself (pg_get_viewdef, pg_get_expr, pg_get_indexdef),
// which is code by nature and runs as one statement.

// sqlFormat is a format() string for execFormat. Being a type of its
// own, it takes untyped constants as they are but a string variable only
// by an explicit conversion: a value cannot slip in as the format.
type sqlFormat string

// execOne runs stmt alone by the extended protocol, whose Parse the
// server refuses for a string of more than one statement.
func execOne(ctx context.Context, tx pgx.Tx, stmt string) error {
	_, err := tx.Conn().PgConn().ExecParams(ctx, stmt, nil, nil, nil, nil).Close()
	return err
}

// execFormat has the server build one statement with format(f, args...)
// and run it with EXECUTE in a DO block; f is a constant of this package
// and args travel as a bind parameter, never as SQL text. It must run in
// a transaction: the statement is handed to the DO block in a setting
// local to it.
func execFormat(ctx context.Context, tx pgx.Tx, f sqlFormat, args ...string) error {
	if args == nil {
		args = []string{}
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('sluice.statement', format($1, VARIADIC $2::text[]), true)", string(f), args); err != nil {
		return err
	}
	return execOne(ctx, tx, "DO $sluice$BEGIN EXECUTE current_setting('sluice.statement'); END$sluice$")
}

// setLockTimeout sets the transaction's lock_timeout, a bind parameter
// as every value.
func setLockTimeout(ctx context.Context, tx pgx.Tx, ms int64) error {
	if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)", fmt.Sprintf("%dms", ms)); err != nil {
		return fmt.Errorf("set lock_timeout: %w", err)
	}
	return nil
}
