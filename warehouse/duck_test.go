package warehouse

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-data/sluice/catalog"
)

// The round trip compares every engine's reading of a table in one
// canonical text per value, which each side computes from what it reads:
// integers, decimals and uuids as text (lower case), timestamps as
// microseconds since 1970, dates as days since 1970, floats in Go's
// shortest form, booleans as true/false, strings and binaries as the hex
// of their bytes (so tabs and newlines survive DuckDB's line output), and
// NULL as NULL.

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// duckRows reads the latest version's live files with DuckDB (the
// independent engine) and returns each row's canonical text, sorted.
func duckRows(t *testing.T, tbl *catalog.Table) []string {
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
	var list []string
	for _, f := range files {
		list = append(list, "'"+tbl.FileURL(f)+"'")
	}
	exprs := make([]string, len(m.Schema.Columns))
	for i, c := range m.Schema.Columns {
		q := `"` + c.Name + `"`
		switch c.Type.Kind {
		case catalog.KindTimestamp:
			exprs[i] = "epoch_us(" + q + ")::VARCHAR"
		case catalog.KindDate:
			exprs[i] = "date_diff('day', DATE '1970-01-01', " + q + ")::VARCHAR"
		case catalog.KindString, catalog.KindBinary:
			exprs[i] = "hex(" + q + ")"
		case catalog.KindUUID: // a uuid is the same in either case
			exprs[i] = "lower(" + q + "::VARCHAR)"
		default:
			exprs[i] = q + "::VARCHAR"
		}
	}
	sql := "SELECT " + strings.Join(exprs, ", ") + " FROM read_parquet([" + strings.Join(list, ", ") + "])"
	cmd := exec.Command("node", filepath.Join(repoRoot(), "tools", "duckquery.mjs"))
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("duckquery: %v: %s (run \"make tools\" if DuckDB is missing)", err, stderr.String())
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		vals := strings.Split(line, "\t")
		if len(vals) != len(m.Schema.Columns) {
			t.Fatalf("duckquery line %q: %d values, want %d", line, len(vals), len(m.Schema.Columns))
		}
		for i, v := range vals {
			if c := m.Schema.Columns[i]; c.Type.Kind == catalog.KindFloat64 && v != "NULL" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("DuckDB's float %q: %v", v, err)
				}
				vals[i] = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
		out = append(out, strings.Join(vals, "\t"))
	}
	slices.Sort(out)
	return out
}

// canon is the canonical text of v, a value of a column of kind k as a
// warehouse driver returned it.
func canon(t *testing.T, k catalog.Kind, v any) string {
	t.Helper()
	if v == nil {
		return "NULL"
	}
	switch k {
	case catalog.KindTimestamp, catalog.KindDate:
		tm, ok := v.(time.Time)
		if s, isText := v.(string); isText {
			layout := sqliteTimestampLayout
			if k == catalog.KindDate {
				layout = sqliteDateLayout
			}
			var err error
			if tm, err = time.Parse(layout, s); err != nil {
				t.Fatalf("%s %q: %v", k, s, err)
			}
			ok = true
		}
		if !ok {
			t.Fatalf("%s read as %T", k, v)
		}
		if k == catalog.KindDate {
			return strconv.FormatInt(tm.Unix()/86400, 10)
		}
		return strconv.FormatInt(tm.UnixMicro(), 10)
	case catalog.KindFloat64:
		return strconv.FormatFloat(v.(float64), 'g', -1, 64)
	case catalog.KindBool:
		switch b := v.(type) {
		case bool:
			return strconv.FormatBool(b)
		case int64:
			return strconv.FormatBool(b != 0)
		}
	case catalog.KindString:
		return strings.ToUpper(hex.EncodeToString([]byte(v.(string))))
	case catalog.KindBinary:
		return strings.ToUpper(hex.EncodeToString(v.([]byte)))
	case catalog.KindUUID:
		return strings.ToLower(v.(string))
	}
	return fmt.Sprint(v)
}

// pgCanonRows reads name from PostgreSQL as canonical rows, sorted.
func pgCanonRows(t *testing.T, conn *pgx.Conn, name string, schema catalog.Schema) []string {
	t.Helper()
	return pgRows(t, conn, name, schema, func(vals []any) string { return canonLine(t, schema, vals) })
}

// sqliteCanonRows reads name from a SQLite file with the Go driver as
// canonical rows, sorted.
func sqliteCanonRows(t *testing.T, db *sql.DB, name string, schema catalog.Schema) []string {
	t.Helper()
	exprs := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		exprs[i] = pgx.Identifier{c.Name}.Sanitize()
		if c.Type.Kind == catalog.KindTimestamp || c.Type.Kind == catalog.KindDate {
			exprs[i] = "CAST(" + exprs[i] + " AS TEXT)" // the stored text, not the driver's parse of it
		}
	}
	rows, err := db.Query("SELECT " + strings.Join(exprs, ", ") + " FROM " + name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]any, len(schema.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, canonLine(t, schema, vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func canonLine(t *testing.T, schema catalog.Schema, vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = canon(t, schema.Columns[i].Type.Kind, v)
	}
	return strings.Join(parts, "\t")
}
