// Command sqlprint prints the result of one SQL query against a SQLite
// file as an aligned table: the demo's way to show what `sluice publish`
// put into its SQLite warehouse on a machine without the sqlite3 shell.
//
//	go run ./scripts/sqlprint lake/warehouse.db 'SELECT * FROM list_daily LIMIT 10'
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sqlprint FILE.db QUERY")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "sqlprint:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path, query string) error {
	if _, err := os.Stat(path); err != nil {
		return err // sql.Open would create an empty database instead
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("query %s: %w", path, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(cols, "\t"))
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		cells := make([]string, len(cols))
		for i, v := range vals {
			cells[i] = "NULL"
			if v.Valid {
				cells[i] = v.String
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}
