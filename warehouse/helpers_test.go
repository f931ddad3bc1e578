package warehouse

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// newTable creates a local table of schema holding rows, in one version
// per batch.
func newTable(t *testing.T, schema string, batches ...[][]any) *catalog.Table {
	t.Helper()
	ctx := context.Background()
	sc, err := catalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := catalog.Open(ctx, t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tbl.Close() })
	if _, err := tbl.Create(ctx, sc, catalog.PartitionSpec{}, nil, "test"); err != nil {
		t.Fatal(err)
	}
	for _, rows := range batches {
		appendRows(t, tbl, rows)
	}
	return tbl
}

func appendRows(t *testing.T, tbl *catalog.Table, rows [][]any) {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.WriteFiles(ctx, m, rows)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "test", Add: files, DataChange: true}); err != nil {
		t.Fatal(err)
	}
}

// tableRows reads every row of the table's latest version with catalog,
// as canonical text, sorted.
func tableRows(t *testing.T, tbl *catalog.Table) []string {
	t.Helper()
	ctx := context.Background()
	m, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tbl.Files(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		st, key, err := tbl.DataFileStore(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pqio.ReadParquetRows(ctx, st, key, f.Bytes, m.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, rowText(m.Schema, r))
		}
	}
	slices.Sort(out)
	return out
}

func rowText(schema catalog.Schema, row []any) string {
	parts := make([]string, len(row))
	for i, v := range row {
		if v == nil {
			parts[i] = "NULL"
			continue
		}
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC()
		}
		parts[i] = fmt.Sprintf("%q", pqio.FormatValue(schema.Columns[i].Type, v))
	}
	return strings.Join(parts, "|")
}

// warehouseRows reads NAME back from PostgreSQL as canonical text, sorted:
// uuid and numeric as the server prints them, the rest as pgx decodes it.
func warehouseRows(t *testing.T, conn *pgx.Conn, name string, schema catalog.Schema) []string {
	t.Helper()
	return pgRows(t, conn, name, schema, func(vals []any) string { return rowText(schema, vals) })
}

// pgRows reads name from PostgreSQL, uuid and numeric columns as the
// server prints them, each row as line makes it, sorted.
func pgRows(t *testing.T, conn *pgx.Conn, name string, schema catalog.Schema, line func([]any) string) []string {
	t.Helper()
	exprs := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		exprs[i] = pgx.Identifier{c.Name}.Sanitize()
		if c.Type.Kind == catalog.KindUUID || c.Type.Kind == catalog.KindDecimal {
			exprs[i] += "::text"
		}
	}
	rows, err := conn.Query(context.Background(), "SELECT "+strings.Join(exprs, ", ")+" FROM "+name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func connectT(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// relations lists the schema's relations with their kind and oid: what
// "the warehouse unchanged" compares.
func relations(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT c.relname || ':' || c.relkind::text || ':' || c.oid::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func mustPublish(t *testing.T, tbl *catalog.Table, o Options) Result {
	t.Helper()
	res, err := Publish(context.Background(), tbl, o)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

func count(t *testing.T, conn *pgx.Conn, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func mustSchema(t *testing.T, s string) catalog.Schema {
	t.Helper()
	sc, err := catalog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}
