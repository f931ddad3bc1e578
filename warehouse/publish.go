package warehouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// Options say where and how to publish.
type Options struct {
	// To is the warehouse URL: postgres://user[:password]@host[:port]/db
	// (or postgresql://), redshift://user[:password]@host[:5439]/db, or sqlite:///path/warehouse.db (a file, created
	// when missing). The password may also come from PGPASSWORD or
	// ~/.pgpass; it is never logged or returned in an error.
	To string
	// As is the target table: NAME or SCHEMA.NAME, plain identifiers,
	// folded to lower case. Without a schema, the connection's current
	// schema.
	As string
	// IAMRole is the ARN of the role Redshift's COPY assumes to read the
	// table's files (redshift:// only).
	IAMRole string
	// KeepOld keeps the replaced table as NAME_old instead of dropping it.
	KeepOld bool
	// Force reloads a version already published.
	Force bool
	// DropDependents lets a publish leave behind what it cannot carry to
	// the new table (triggers, rules, foreign keys of other tables that
	// reference NAME, materialized views on it, an owner the publishing
	// role may not set...: see the package doc), dropped with the old
	// table, instead of refusing before the load, naming each.
	DropDependents bool
	// LockTimeout bounds each attempt to take the swap's locks (the
	// transaction's lock_timeout); zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// SwapRetryFor bounds how long failed lock attempts are retried, with
	// backoff; zero means DefaultSwapRetryFor.
	SwapRetryFor time.Duration
	// Connections is how many connections load NAME_new at once on
	// PostgreSQL, each copying the files it takes from a shared queue,
	// besides the one that holds the publish's lock (no more than the
	// version has files); zero means DefaultConnections, and 1 loads in
	// the transaction that creates NAME_new, with COPY FREEZE. Redshift
	// and SQLite load on one connection whatever it says.
	Connections int
	// RunID names the run in the sluice_published record.
	RunID string
	// Logger gets one line per phase; nil logs nothing.
	Logger *slog.Logger
	// Progress, when set, is called as rows are loaded with the rows so
	// far and the version's total.
	Progress func(done, total int64)
}

// ErrInvalidURL: a warehouse URL that is not one publish takes.
var ErrInvalidURL = errors.New("invalid warehouse URL")

// CheckURL checks a warehouse URL without connecting: its scheme is one
// Publish takes (postgres, postgresql, redshift, sqlite). The error never
// holds the URL, which may hold a password.
func CheckURL(to string) error {
	u, err := url.Parse(to)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	switch u.Scheme {
	case "postgres", "postgresql", "redshift", "sqlite":
		return nil
	}
	return fmt.Errorf("%w: scheme %q: want postgres://, redshift:// or sqlite://", ErrInvalidURL, u.Scheme)
}

// CheckName checks a target table's name, NAME or SCHEMA.NAME, as Publish
// will (ErrInvalidName).
func CheckName(as string) error {
	_, err := parseTarget(as)
	return err
}

// Defaults of Options.
const (
	DefaultLockTimeout  = 5 * time.Second
	DefaultSwapRetryFor = 10 * time.Minute
	DefaultConnections  = 4
)

// MaxConnections bounds Options.Connections: each is a server process
// and a reader holding a row group of its own.
const MaxConnections = 64

// ErrConnections: Options.Connections out of 0..MaxConnections.
var ErrConnections = fmt.Errorf("connections: want 1 to %d", MaxConnections)

// Result says what a publish did.
type Result struct {
	// Target is the published table, schema-qualified.
	Target string
	// Version is the table version published (or found already there).
	Version int64
	// Unchanged is true when that version was already published and
	// nothing was done.
	Unchanged bool
	// Rows and Bytes are the rows loaded and the bytes of the live data
	// files read.
	Rows, Bytes int64
	// LockWait is how long the swap waited for its locks, over every
	// attempt and the backoff between them; Attempts counts them.
	LockWait time.Duration
	Attempts int
	// Seconds is the publish's wall time.
	Seconds float64
}

// newRecord is the sluice_published record of rows of version m of t.
func newRecord(t catalog.Readable, m *catalog.Manifest, rows int64, run string) record {
	return record{identity: t.Identity(m), location: t.Store().URL(""), version: m.Version, rows: rows, run: run}
}

// Publish loads the latest version of t into the warehouse o.To as o.As
// with the _new/_old swap (see the package doc).
func Publish(ctx context.Context, t catalog.Readable, o Options) (Result, error) {
	start := time.Now()
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.SwapRetryFor <= 0 {
		o.SwapRetryFor = DefaultSwapRetryFor
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Connections == 0 {
		o.Connections = DefaultConnections
	}
	if o.Connections < 0 || o.Connections > MaxConnections {
		return Result{}, fmt.Errorf("%w, not %d", ErrConnections, o.Connections)
	}
	tgt, err := parseTarget(o.As)
	if err != nil {
		return Result{}, err
	}
	u, err := url.Parse(o.To)
	if err != nil {
		// url.Error holds the URL, password and all: keep only the why.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Result{}, fmt.Errorf("warehouse URL: %w", err)
	}
	var res Result
	switch u.Scheme {
	case "postgres", "postgresql":
		res, err = publishPostgres(ctx, t, tgt, o)
	case "redshift":
		res, err = publishRedshift(ctx, t, tgt, u, o, execCopy)
	case "sqlite":
		path, perr := sqlitePath(u)
		if perr != nil {
			return Result{}, perr
		}
		res, err = publishSQLite(ctx, t, tgt, path, o)
	default:
		return Result{}, errors.New("warehouse URL: want postgres://user@host/db, redshift://user@host:5439/db or sqlite:///path/warehouse.db")
	}
	res.Seconds = time.Since(start).Seconds()
	return res, err
}
