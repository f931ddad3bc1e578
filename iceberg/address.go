package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/cloud"
)

// TablePrefix begins the location of a table in an Iceberg catalog:
// iceberg+sqlite:///abs/path/catalog.db#ns.table,
// iceberg+postgres://host/db#ns.table, iceberg+rest://host/path#ns.table.
const TablePrefix = "iceberg+"

// ErrTableURL is returned for a malformed iceberg+ table location.
var ErrTableURL = errors.New("bad Iceberg table location")

// ErrNotBuilt is returned for what sluice does not do with an Iceberg
// table yet; the error says what.
var ErrNotBuilt = errors.New("not built yet")

// IsTableURL reports whether loc names a table in an Iceberg catalog.
func IsTableURL(loc string) bool { return strings.HasPrefix(loc, TablePrefix) }

// TableAddress is a parsed iceberg+ location.
type TableAddress struct {
	// Kind is the catalog's kind: "sqlite", "postgres" or "rest".
	Kind string
	// CatalogURL is the catalog's own URL (sqlite:///path, a PostgreSQL
	// connection URL, rest://host/path), without the catalog= parameter
	// and the fragment.
	CatalogURL string
	// CatalogName is the name the catalog's rows carry (a SQL catalog's
	// catalog_name): ?catalog=NAME, else found by the table's name.
	CatalogName string
	// Ident is the table's namespace and name.
	Ident table.Identifier
}

// String is the location with its password removed.
func (a TableAddress) String() string {
	return TablePrefix + cloud.Redact(a.CatalogURL) + "#" + strings.Join(a.Ident, ".")
}

// ParseTableURL parses an iceberg+ location. The fragment names the
// table: its namespace (one or more levels) and its name, dot-separated.
func ParseTableURL(raw string) (TableAddress, error) {
	var a TableAddress
	rest, ok := strings.CutPrefix(raw, TablePrefix)
	if !ok {
		return a, fmt.Errorf("%w %q: want iceberg+sqlite:///abs/path/catalog.db#ns.table, iceberg+postgres://host/db#ns.table or iceberg+rest://host[:port]/path#ns.table", ErrTableURL, cloud.Redact(raw))
	}
	rest, frag, _ := strings.Cut(rest, "#")
	ident := strings.Split(frag, ".")
	if len(ident) < 2 || slices.Contains(ident, "") {
		return a, fmt.Errorf("%w %q: name the table after '#' as namespace.table (e.g. #lake.events)", ErrTableURL, cloud.Redact(raw))
	}
	u, err := url.Parse(rest)
	if err != nil {
		return a, fmt.Errorf("%w %q: %v", ErrTableURL, cloud.Redact(raw), err)
	}
	q := u.Query()
	a.CatalogName = q.Get("catalog")
	q.Del("catalog")
	u.RawQuery = q.Encode()
	a.Ident = ident
	switch u.Scheme {
	case "sqlite":
		if u.Host != "" || u.Path == "" {
			return a, fmt.Errorf("%w %q: want iceberg+sqlite:///abs/path/catalog.db#ns.table (three slashes, an absolute path)", ErrTableURL, cloud.Redact(raw))
		}
		a.Kind = "sqlite"
	case "postgres", "postgresql":
		a.Kind = "postgres"
	case "rest":
		if err := checkRESTURL(u); err != nil {
			return a, fmt.Errorf("%w %q: %v", ErrTableURL, cloud.Redact(raw), err)
		}
		a.Kind = "rest"
	default:
		return a, fmt.Errorf("%w %q: unknown catalog %q (want sqlite, postgres or rest)", ErrTableURL, cloud.Redact(raw), u.Scheme)
	}
	a.CatalogURL = u.String()
	return a, nil
}

// foreignCatalog is an Iceberg catalog sluice did not create, opened
// to maintain one of its tables: nothing is created in it.
type foreignCatalog struct {
	addr TableAddress
	db   *sql.DB // a SQL catalog's database; nil for a REST catalog
	cat  interface {
		LoadTable(context.Context, table.Identifier) (*table.Table, error)
		Close() error
	}
}

// openForeignCatalog opens the catalog of a, which must exist. A SQL
// catalog's name, unless the location gives it, is the one the table's
// row carries, when exactly one does.
func openForeignCatalog(ctx context.Context, a TableAddress) (*foreignCatalog, error) {
	var sqlitePath string
	switch a.Kind {
	case "sqlite":
		if u, err := url.Parse(a.CatalogURL); err == nil {
			sqlitePath = u.Path
		}
		// The file must be there: a mistyped path is an error, never a
		// new empty catalog.
		if _, err := os.Stat(sqlitePath); err != nil {
			return nil, fmt.Errorf("open catalog %s: %w", a, err)
		}
	case "postgres":
	case "rest":
		return openREST(ctx, a)
	default:
		return nil, fmt.Errorf("%w %s: unknown catalog kind %q", ErrTableURL, a, a.Kind)
	}
	db, dialect, err := openSQL(ctx, sqlitePath, a.CatalogURL)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", a, err)
	}
	if a.CatalogName == "" {
		if a.CatalogName, err = catalogNameOf(ctx, db, a); err != nil {
			db.Close()
			return nil, err
		}
	}
	props := ioProperties()
	props["init_catalog_tables"] = "false"
	cat, err := icesql.NewCatalog(a.CatalogName, db, dialect, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog %s: %w", a, err)
	}
	return &foreignCatalog{addr: a, db: db, cat: cat}, nil
}

// catalogNameOf finds the catalog_name of a's table in a SQL catalog:
// the table must be registered under exactly one.
func catalogNameOf(ctx context.Context, db *sql.DB, a TableAddress) (string, error) {
	ns, name := strings.Join(a.Ident[:len(a.Ident)-1], "."), a.Ident[len(a.Ident)-1]
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT catalog_name FROM iceberg_tables WHERE table_namespace = $1 AND table_name = $2`, ns, name)
	if err != nil {
		return "", fmt.Errorf("%s: not an Iceberg SQL catalog: %w", a, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", fmt.Errorf("%s: %w", a, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", a, err)
	}
	switch len(names) {
	case 0:
		return "", fmt.Errorf("%s: %w: no table %s in the catalog", a, ErrNoSuchTable, strings.Join(a.Ident, "."))
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("%s: catalogs %s each have a table %s: say which with ?catalog=NAME", a, strings.Join(names, ", "), strings.Join(a.Ident, "."))
}

// ErrNoSuchTable is returned for an iceberg+ location whose catalog has
// no such table.
var ErrNoSuchTable = errors.New("no such Iceberg table")

// load loads the table fresh.
func (c *foreignCatalog) load(ctx context.Context) (*table.Table, error) {
	t, err := c.cat.LoadTable(ctx, c.addr.Ident)
	if errors.Is(err, icecat.ErrNoSuchTable) {
		return nil, fmt.Errorf("%s: %w: no table %s in the catalog", c.addr, ErrNoSuchTable, strings.Join(c.addr.Ident, "."))
	}
	if err != nil && c.addr.Kind == "rest" {
		err = restError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", c.addr, err)
	}
	return t, nil
}

func (c *foreignCatalog) Close() error {
	err := c.cat.Close()
	if c.db != nil {
		err = errors.Join(err, c.db.Close())
	}
	return err
}
