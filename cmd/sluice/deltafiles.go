package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

// openDelta opens the store at loc if it holds a Delta log; nil if it
// cannot be opened or holds none, and the caller then reports the table
// missing as it would have.
func openDelta(cmd *cobra.Command, loc string) cloud.Store {
	st, err := cloud.Open(cmd.Context(), loc)
	if err != nil {
		return nil
	}
	if ok, err := delta.IsDelta(cmd.Context(), st); !ok || err != nil {
		st.Close()
		return nil
	}
	return st
}

// deltaFiles lists the live files of the Delta table at loc, at version
// (the newest unless versionSet), as files lists a sluice table's. done
// is false when loc holds no Delta log: the caller reports the table
// missing as it would have.
func (a *app) deltaFiles(cmd *cobra.Command, loc string, version int64, versionSet, nul bool) (done bool, err error) {
	ctx := cmd.Context()
	st := openDelta(cmd, loc)
	if st == nil {
		return false, nil
	}
	defer st.Close()
	if !versionSet {
		version = delta.Latest
	}
	snap, err := delta.New(st).Snapshot(ctx, version)
	if err != nil {
		return true, err
	}
	urls := make([]string, len(snap.Files))
	var rows, bytes int64
	counted := true // every file's stats have numRecords
	for i, f := range snap.Files {
		urls[i] = f.Path
		if !f.Absolute {
			urls[i] = st.URL(f.Path)
		}
		n, ok := f.NumRecords()
		rows, counted = rows+n, counted && ok
		bytes += f.Add.Size
	}
	if a.jsonOut {
		out := map[string]any{"command": "files", "table": loc, "format": "delta", "version": snap.Version,
			"files": urls, "rows": nil, "bytes": bytes}
		if counted {
			out["rows"] = rows
		}
		return true, a.summary(out)
	}
	w := bufferedStdout(a)
	for _, u := range urls {
		if nul {
			w.WriteString(u)
			w.WriteByte(0)
		} else {
			w.WriteString(textName(u))
			w.WriteByte('\n')
		}
	}
	return true, w.Flush()
}

// deltaHistory prints the history of the Delta table at loc as history
// prints a sluice table's. done is false when loc holds no Delta log.
func (a *app) deltaHistory(cmd *cobra.Command, loc string) (done bool, err error) {
	ctx := cmd.Context()
	st := openDelta(cmd, loc)
	if st == nil {
		return false, nil
	}
	defer st.Close()
	hist, err := delta.New(st).History(ctx)
	if err != nil {
		return true, err
	}
	rows := func(n int64, known bool) any {
		if !known {
			return nil
		}
		return n
	}
	if a.jsonOut {
		vs := make([]map[string]any, len(hist))
		for i, h := range hist {
			v := map[string]any{"version": h.Version, "committed_at": nil, "operation": h.Operation, "engine": h.Engine,
				"files_added": h.FilesAdded, "files_removed": h.FilesRemoved,
				"rows_added": rows(h.RowsAdded, h.RowsKnown), "rows_removed": rows(h.RowsRemoved, h.RowsKnown),
				"data_change": h.DataChange, "files": h.Files, "rows": rows(h.Rows, h.TotalKnown)}
			if !h.Timestamp.IsZero() {
				v["committed_at"] = h.Timestamp.Format(time.RFC3339Nano)
			}
			vs[i] = v
		}
		return true, a.summary(map[string]any{"command": "history", "table": loc, "format": "delta", "versions": vs})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIME\tOPERATION\tENGINE\tFILES +/-\tROWS +/-\tFILES\tROWS")
	for _, h := range hist {
		when, added, removed, total := "-", "?", "?", "?"
		if !h.Timestamp.IsZero() {
			when = h.Timestamp.Format("2006-01-02 15:04:05Z")
		}
		if h.RowsKnown {
			added, removed = strconv.FormatInt(h.RowsAdded, 10), strconv.FormatInt(h.RowsRemoved, 10)
		}
		if h.TotalKnown {
			total = strconv.FormatInt(h.Rows, 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t+%d/-%d\t+%s/-%s\t%d\t%s\n", h.Version, when, textName(h.Operation), textName(h.Engine),
			h.FilesAdded, h.FilesRemoved, added, removed, h.Files, total)
	}
	return true, tw.Flush()
}
