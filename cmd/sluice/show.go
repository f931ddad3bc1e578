package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/inspect"
	"github.com/sluice-data/sluice/internal/pqio"
)

// cellRunes is the most runes of a value show prints in a table cell.
const cellRunes = 40

func (a *app) showCommand() *cobra.Command {
	var o inspect.RowOptions
	cmd := &cobra.Command{
		Use:   "show TABLE [--version N] [--limit 20] [--columns a,b] [--partition P]",
		Short: "Print rows of a table",
		Long: `Print the first rows of TABLE (of version N with --version), reading its
live files one at a time and stopping as soon as --limit rows are out.

On a terminal the rows print as an aligned table, each value cut to 40
characters with "…"; otherwise as JSON lines, one object per row keyed by
column name (binary as base64, timestamps in RFC 3339, dates as
YYYY-MM-DD, map values as [{"key":...,"value":...}]). A name or value
holding a control character prints quoted and escaped as Go does, so one
row is always one line. --json prints one object instead:
{"command":"show","table":...,"version":N,"rows_shown":N,"columns":[...],"rows":[...]}.

--columns a,b prints those columns only, in that order; --partition
date=2024-01-31 reads that partition only (a Hive folder, as sluice files
prints it).

TABLE may be a sluice table (its quarantine too: TABLE_quarantine), a
folder holding a Delta table, or a table in an Iceberg catalog
(iceberg+sqlite:///abs/catalog.db#ns.table and the other iceberg+
locations), read at its current snapshot. A table whose rows are deleted
by files sluice does not apply (Delta deletion vectors, Iceberg delete
files) is refused: its deleted rows would show.`,
		Example: `  sluice show ./lake/events --limit 5
  sluice show ./lake/events_quarantine --columns position,reason`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := countsAtLeastOne(cmd, "limit", "version"); err != nil {
				return err
			}
			return a.show(cmd, args[0], o)
		},
	}
	cmd.Flags().Int64Var(&o.Version, "version", 0, "read this version instead of the newest (a sluice table's start at 1)")
	cmd.Flags().IntVar(&o.Limit, "limit", 20, "the most rows to print")
	cmd.Flags().StringSliceVar(&o.Columns, "columns", nil, "print these columns only, in this order (comma separated)")
	cmd.Flags().StringVar(&o.Partition, "partition", "", "read this partition only: its Hive folder (date=2024-01-31)")
	return cmd
}

func (a *app) show(cmd *cobra.Command, loc string, o inspect.RowOptions) error {
	ctx := cmd.Context()
	t, err := inspect.Open(ctx, loc, inspect.OpenOptions{Catalog: catalog.Options{Logger: a.logger}})
	if err != nil {
		return err
	}
	defer t.Close()
	var m *catalog.Manifest
	if o.Version != 0 {
		m, err = t.Version(ctx, o.Version)
	} else {
		m, err = t.Latest(ctx)
	}
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	o.Version = m.Version
	if t.Format() == inspect.FormatDelta && m.Version == 0 {
		o.Version = 0 // Rows reads the newest: it is version 0 only when no other exists
	}
	schema := catalog.ReadSchema(m)
	var cols []catalog.Column
	var rows []json.RawMessage // --json's
	tty := !a.jsonOut && a.stdout == io.Writer(os.Stdout) && term.IsTerminal(int(os.Stdout.Fd()))
	var table [][]any // a terminal's, aligned once all are read
	w := bufferedStdout(a)
	_, err = inspect.Rows(ctx, t, o, func(row []any) error {
		if cols == nil {
			// The names come first: their types are the schema's.
			cols = make([]catalog.Column, len(row))
			for i, name := range row {
				cols[i], _ = schema.Column(name.(string))
			}
			return nil
		}
		if tty {
			table = append(table, row)
			return nil
		}
		b, err := rowJSON(cols, row)
		if err != nil {
			return err
		}
		if a.jsonOut {
			rows = append(rows, b)
			return nil
		}
		w.Write(b)
		return w.WriteByte('\n')
	})
	switch {
	case errors.Is(err, inspect.ErrUnknownColumn):
		return usageError{cmd: "show", err: fmt.Errorf("show: %w", err)}
	case err != nil:
		return fmt.Errorf("show: %w", err)
	}
	if a.jsonOut {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		if rows == nil {
			rows = []json.RawMessage{}
		}
		return a.summary(map[string]any{"command": "show", "table": cloud.Redact(loc), "format": t.Format(),
			"version": m.Version, "rows_shown": len(rows), "columns": names, "rows": rows})
	}
	if tty {
		writeTable(w, cols, table)
	}
	return w.Flush()
}

// writeTable writes the header and rows, tab-separated for w.
func writeTable(out io.Writer, cols []catalog.Column, rows [][]any) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer w.Flush()
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = cutCell(textName(c.Name))
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
	for _, row := range rows {
		for i, c := range cols {
			cells[i] = cellText(c.Type, row[i])
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

// cellText is a value as a table cell: NULL, or its canonical text,
// escaped when it holds a character that is not printable (a tab would
// break the alignment, a newline the row), cut to cellRunes runes.
func cellText(t catalog.Type, v any) string {
	if v == nil {
		return "NULL"
	}
	return cutCell(textName(pqio.FormatValue(t, v)))
}

// cutCell cuts s to cellRunes runes, the last one "…" when it was longer.
func cutCell(s string) string {
	if utf8.RuneCountInString(s) <= cellRunes {
		return s
	}
	r := []rune(s)
	return string(r[:cellRunes-1]) + "…"
}

// rowJSON is one row as a JSON object, its keys the column names in the
// columns' order.
func rowJSON(cols []catalog.Column, row []any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(c.Name); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(jsonValue(c.Type, row[i])); err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonValue is v, of type t, as encoding/json should print it: dates as
// YYYY-MM-DD, timestamps in RFC 3339, a float JSON has no number for
// ("NaN", "+Inf") as a string, nested values field by field, a map's
// entries as {"key":...,"value":...}.
func jsonValue(t catalog.Type, v any) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case catalog.KindDate:
		if x, ok := v.(time.Time); ok {
			return x.Format(time.DateOnly)
		}
	case catalog.KindTimestamp:
		if x, ok := v.(time.Time); ok {
			return x.UTC().Format(time.RFC3339Nano)
		}
	case catalog.KindFloat64:
		if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case catalog.KindStruct:
		if x, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(x))
			for _, f := range t.Fields {
				out[f.Name] = jsonValue(f.Type, x[f.Name])
			}
			return out
		}
	case catalog.KindList:
		if x, ok := v.([]any); ok && len(t.Fields) == 1 {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = jsonValue(t.Fields[0].Type, e)
			}
			return out
		}
	case catalog.KindMap:
		if x, ok := v.([]pqio.MapEntry); ok && len(t.Fields) == 2 {
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = map[string]any{"key": jsonValue(t.Fields[0].Type, e.Key), "value": jsonValue(t.Fields[1].Type, e.Value)}
			}
			return out
		}
	}
	return v
}
