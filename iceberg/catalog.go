package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	ice "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// tables
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" driver, pure Go

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// CatalogName is the catalog name the mirror's rows carry in the SQL
// catalog's tables (their catalog_name column): a JDBC catalog reading
// them must be configured under this name.
const CatalogName = "sluice"

// Catalog is an Iceberg SQL catalog: SQLite (one file, no server) or
// PostgreSQL.
type Catalog struct {
	url    string // redacted, to print
	stored string // without its password, to record in a table's settings
	db     *sql.DB
	cat    *icesql.Catalog
}

// ErrCatalogURL is returned for a catalog URL that is neither
// sqlite:///path nor postgres://.
var ErrCatalogURL = errors.New("bad catalog URL")

// OpenCatalog opens the SQL catalog at rawURL, creating its tables if
// missing: sqlite:///path/catalog.db, or postgres://user@host/db (a
// PostgreSQL connection URL). The caller closes it.
func OpenCatalog(ctx context.Context, rawURL string) (*Catalog, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrCatalogURL, redact(rawURL), err)
	}
	var sqlitePath string
	switch u.Scheme {
	case "sqlite":
		if u.Path == "" || u.Host != "" {
			return nil, fmt.Errorf("%w %q: want sqlite:///path/catalog.db (three slashes, an absolute path)", ErrCatalogURL, rawURL)
		}
		sqlitePath = u.Path
	case "postgres", "postgresql":
	default:
		return nil, fmt.Errorf("%w %q: want sqlite:///path/catalog.db or a postgres:// URL", ErrCatalogURL, redact(rawURL))
	}
	db, dialect, err := openSQL(ctx, sqlitePath, rawURL)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", redact(rawURL), err)
	}
	cat, err := icesql.NewCatalog(CatalogName, db, dialect, ioProperties())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog %s: %w", redact(rawURL), err)
	}
	return &Catalog{url: redact(rawURL), stored: storableURL(rawURL), db: db, cat: cat}, nil
}

// openSQL opens and pings a SQL catalog's database: the SQLite file at
// sqlitePath when it is set, else the PostgreSQL database at pgURL. WAL
// and a busy timeout let a reader and a writer share a SQLite file;
// transactions take the write lock when they begin, so two writers wait
// for each other rather than fail upgrading a read lock (SQLITE_BUSY,
// which no busy timeout retries).
func openSQL(ctx context.Context, sqlitePath, pgURL string) (*sql.DB, icesql.SupportedDialect, error) {
	driver, dialect, dsn := "pgx", icesql.Postgres, pgURL
	if sqlitePath != "" {
		driver, dialect = "sqlite", icesql.SQLite
		dsn = "file:" + sqlitePath + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, "", err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, "", err
	}
	return db, dialect, nil
}

// ioProperties are the properties iceberg-go's file IO takes for the
// stores sluice reaches: an S3-compatible endpoint from AWS_ENDPOINT_URL,
// as sluice's own S3 store takes it (path-style); credentials and region
// come from the AWS chain, as for sluice.
func ioProperties() ice.Properties {
	props := ice.Properties{}
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		props[iceio.S3EndpointURL] = ep
	}
	return props
}

// URL is the catalog's URL, its password removed.
func (c *Catalog) URL() string { return c.url }

// Close releases the catalog's connections.
func (c *Catalog) Close() error {
	err := c.cat.Close()
	return errors.Join(err, c.db.Close())
}

// Load returns the mirror table ident.
func (c *Catalog) Load(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return c.cat.LoadTable(ctx, ident)
}

// create creates the mirror ident (and its namespace) for tbl, with the
// schema and partitioning of its first version, located in the table's
// _iceberg folder, and the properties every mirror carries (latest is
// the table's latest version, for its id). created is false when a rival
// sync created it first: it is loaded.
func (c *Catalog) create(ctx context.Context, ident table.Identifier, tbl *catalog.Table, first, latest *catalog.Manifest) (it *table.Table, created bool, err error) {
	sch, err := icebergSchema(first.Schema, first.Spec)
	if err != nil {
		return nil, false, err
	}
	spec, err := icebergSpec(first.Spec, sch)
	if err != nil {
		return nil, false, err
	}
	ns := icecat.NamespaceFromIdent(ident)
	if err := c.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return nil, false, fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
	}
	loc := fileLocation(tbl.Store().URL(MetadataFolder))
	it, err = c.cat.CreateTable(ctx, ident, sch, icecat.WithLocation(loc), icecat.WithPartitionSpec(&spec),
		icecat.WithProperties(ice.Properties{"format-version": "2", PropGCEnabled: "false", PropTableID: tbl.Identity(latest)}))
	if errors.Is(err, icecat.ErrTableAlreadyExists) {
		it, err = c.cat.LoadTable(ctx, ident)
		if err != nil {
			return nil, false, fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
		}
		return it, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", strings.Join(ident, "."), err)
	}
	return it, true, nil
}

// MetadataFolder is the folder under the table root holding the mirror's
// Iceberg metadata (metadata/*.metadata.json, manifest lists, manifests).
const MetadataFolder = "_iceberg"

// redact drops the password (and any query secret) of a catalog URL.
func redact(raw string) string { return cloud.Redact(raw) }
