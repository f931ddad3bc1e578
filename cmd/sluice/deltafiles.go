package main

import (
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
)

// deltaFiles lists the live files of the Delta table at loc, at version
// (the newest unless versionSet), as files lists a sluice table's. done
// is false when loc holds no Delta log: the caller reports the table
// missing as it would have.
func (a *app) deltaFiles(cmd *cobra.Command, loc string, version int64, versionSet, nul bool) (done bool, err error) {
	ctx := cmd.Context()
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		return false, nil
	}
	defer st.Close()
	if ok, err := delta.IsDelta(ctx, st); !ok || err != nil {
		return false, nil
	}
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
