package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/inspect"
)

func (a *app) describeCommand() *cobra.Command {
	var version int64
	cmd := &cobra.Command{
		Use:   "describe TABLE [--version N] [--json]",
		Short: "Report a table's schema, files, small-file debt, versions, checkpoints, mirrors and last publish",
		Long: `Report on TABLE: its schema and partitioning; its rows, files and bytes,
per partition too; a histogram of its file sizes; its small-file debt, per
partition: the files and bytes a compaction would rewrite now (the
compaction planner's own decision, the current day included); the oldest
version still readable and the newest versions; the source checkpoints
of the version (Kafka offsets: their lag needs the broker and is not
read); how far its Iceberg mirror is; the last publish into a warehouse;
and what its quarantine (TABLE_quarantine) holds, counted by reason.

TABLE may be a folder holding a Delta table (its versions are its log's;
the oldest is the oldest commit the log keeps), or a table in an Iceberg
catalog (iceberg+... locations: its versions are not read).

--json prints the report as one object: version, rows, files, bytes,
small_files, small_bytes, partitions [{partition, files, bytes, rows,
small_files, small_bytes}], histogram, schema, versions, checkpoints,
mirrors, last_publish, quarantine.`,
		Example: `  sluice describe ./lake/events
  sluice describe s3://bucket/lake/events --json`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := countsAtLeastOne(cmd, "version"); err != nil {
				return err
			}
			ctx := cmd.Context()
			t, err := inspect.Open(ctx, args[0], inspect.OpenOptions{Catalog: catalog.Options{Logger: a.logger}})
			if err != nil {
				return err
			}
			defer t.Close()
			d, err := inspect.Describe(ctx, t, inspect.Options{Version: version, Mirror: a.describeMirror(t)})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.summary(struct {
					Command string `json:"command"`
					*inspect.Detail
				}{"describe", d})
			}
			w := bufferedStdout(a)
			writeDetail(w, d)
			return w.Flush()
		},
	}
	cmd.Flags().Int64Var(&version, "version", 0, "describe this version instead of the newest")
	return cmd
}

// describeMirror is describe's Mirror hook: how far the Iceberg mirror of
// t, a sluice table, is, as history reads it.
func (a *app) describeMirror(t *inspect.Table) func(context.Context, *catalog.Manifest) []inspect.Mirror {
	return func(ctx context.Context, m *catalog.Manifest) []inspect.Mirror {
		ct := t.Catalog()
		if ct == nil {
			return nil
		}
		st := a.icebergHistory(ctx, ct)
		if st == nil {
			return nil
		}
		mi := inspect.Mirror{Kind: "iceberg"}
		mi.Catalog, _ = st.report["catalog"].(string)
		mi.Catalog = cloud.Redact(mi.Catalog)
		mi.Identifier, _ = st.report["identifier"].(string)
		if e, ok := st.report["error"].(string); ok {
			mi.Error = cloud.Redact(e)
		} else {
			mi.Version = st.current
			mi.Behind = max(m.Version-st.current, 0)
		}
		return []inspect.Mirror{mi}
	}
}

// barWidth is the longest histogram bar, in characters.
const barWidth = 30

// writeDetail prints the report as text, section by section.
func writeDetail(w io.Writer, d *inspect.Detail) {
	writeDetailFiles(w, d)
	writeDetailLog(w, d)
}

// describeTime is a time as describe prints it, "-" for none.
func describeTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// writeDetailFiles prints the sections Table, Schema, Partitions and
// File sizes.
func writeDetailFiles(w io.Writer, d *inspect.Detail) {
	section := func(name string) { fmt.Fprintf(w, "\n%s\n", name) }
	tw := func() *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
	fmt.Fprintln(w, "Table")
	t := tw()
	fmt.Fprintf(t, "  location\t%s\n  format\t%s\n  version\t%d\t(committed %s)\n", textName(d.Table), d.Format, d.Version, describeTime(d.CommittedAt))
	part := d.Partitioning
	if part == "" {
		part = "(unpartitioned)"
	}
	fmt.Fprintf(t, "  partitioning\t%s\n", textName(part))
	fmt.Fprintf(t, "  rows\t%s\n  files\t%s\n  bytes\t%s\t(%s)\n", humanize.Comma(d.Rows), humanize.Comma(d.Files), humanize.Comma(d.Bytes), humanize.IBytes(uint64(d.Bytes)))
	fmt.Fprintf(t, "  target file size\t%s\n", humanize.IBytes(uint64(d.TargetFileSize)))
	fmt.Fprintf(t, "  small-file debt\t%s files, %s\t(what a compaction would rewrite now)\n", humanize.Comma(d.SmallFiles), humanize.IBytes(uint64(d.SmallBytes)))
	if d.OldestVersion > 0 {
		fmt.Fprintf(t, "  oldest readable version\t%d\n", d.OldestVersion)
	}
	t.Flush()

	section("Schema")
	t = tw()
	for _, c := range d.Schema {
		null := ""
		if c.Nullable {
			null = "nullable"
		}
		fmt.Fprintf(t, "  %s\t%s\t%s\n", textName(c.Name), textName(c.Type), null)
	}
	t.Flush()

	section("Partitions")
	t = tw()
	fmt.Fprintln(t, "  PARTITION\tFILES\tBYTES\tROWS\tSMALL FILES\tSMALL BYTES")
	for _, p := range d.Partitions {
		name := p.Partition
		if name == "" {
			name = "(all)"
		}
		fmt.Fprintf(t, "  %s\t%d\t%s\t%d\t%d\t%s\n", textName(name), p.Files, humanize.IBytes(uint64(p.Bytes)), p.Rows, p.SmallFiles, humanize.IBytes(uint64(p.SmallBytes)))
	}
	t.Flush()

	section("File sizes")
	var most int64
	for _, b := range d.Histogram {
		most = max(most, b.Files)
	}
	t = tw()
	for _, b := range d.Histogram {
		bar := ""
		if most > 0 {
			n := int(b.Files * barWidth / most)
			if n == 0 && b.Files > 0 {
				n = 1
			}
			bar = strings.Repeat("#", n)
		}
		fmt.Fprintf(t, "  %s\t%d\t%s\n", b.Label, b.Files, bar)
	}
	t.Flush()

}

// writeDetailLog prints the sections Versions, Checkpoints, Mirrors,
// Last publish and Quarantine.
func writeDetailLog(w io.Writer, d *inspect.Detail) {
	section := func(name string) { fmt.Fprintf(w, "\n%s\n", name) }
	section("Versions")
	if len(d.Versions) == 0 {
		fmt.Fprintln(w, "  (not read for this format)")
	} else {
		t := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(t, "  VERSION\tTIME\tOPERATION\tRUN\tFILES +/-\tROWS +/-")
		for _, v := range d.Versions {
			fmt.Fprintf(t, "  %d\t%s\t%s\t%s\t+%d/-%d\t+%d/-%d\n", v.Version, describeTime(v.CommittedAt), textName(v.Operation), textName(v.Run),
				v.FilesAdded, v.FilesRemoved, v.RowsAdded, v.RowsRemoved)
		}
		t.Flush()
	}

	section("Checkpoints")
	if len(d.Checkpoints) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, c := range d.Checkpoints {
		if c.Kind == "kafka" && len(c.Topics) > 0 {
			for _, tp := range c.Topics {
				fmt.Fprintf(w, "  %s  kafka topic %s: next offsets %v (lag: not read)\n", textName(c.Key), textName(tp.Topic), tp.Partitions)
			}
			continue
		}
		fmt.Fprintf(w, "  %s  %s %s\n", textName(c.Key), c.Kind, textName(string(c.Value)))
	}

	section("Mirrors")
	if len(d.Mirrors) == 0 {
		fmt.Fprintln(w, "  (none)")
	}
	for _, m := range d.Mirrors {
		if m.Error != "" {
			fmt.Fprintf(w, "  %s %s in %s: not read: %s\n", m.Kind, textName(m.Identifier), textName(m.Catalog), textName(m.Error))
			continue
		}
		fmt.Fprintf(w, "  %s %s in %s: at version %d, %d behind\n", m.Kind, textName(m.Identifier), textName(m.Catalog), m.Version, m.Behind)
	}

	section("Last publish")
	if p := d.LastPublish; p == nil {
		fmt.Fprintln(w, "  (none recorded)")
	} else {
		fmt.Fprintf(w, "  %s", textName(p.Target))
		if p.Warehouse != "" {
			fmt.Fprintf(w, " in %s", textName(p.Warehouse))
		}
		fmt.Fprintf(w, ": version %d, %s rows, at %s, run %s\n", p.Version, humanize.Comma(p.Rows), describeTime(p.At), textName(p.Run))
	}

	section("Quarantine")
	if q := d.Quarantine; q == nil {
		fmt.Fprintln(w, "  (none)")
	} else {
		fmt.Fprintf(w, "  %s: %s rows\n", textName(q.Table), humanize.Comma(q.Rows))
		for _, r := range q.Reasons {
			fmt.Fprintf(w, "  %6d  %s\n", r.Count, textName(r.Reason))
		}
	}
}
