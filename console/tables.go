package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/inspect"
)

// Limits of a table's page: a table with many partitions lists the
// first maxPartitionRows, and draws the debt of the topDebt largest.
const (
	maxPartitionRows = 1000
	topDebt          = 30
)

// Geometry of the table charts, in SVG user units.
const (
	histBarW, histGap, histH, histPad = 56, 8, 160, 36
	debtLabelW, debtBarW, debtRowH    = 260, 420, 16
)

// describe returns the table at loc's description, read at most once
// per tablesTTL.
func (c *Console) describe(ctx context.Context, loc string) (*inspect.Detail, error) {
	if c.Describe == nil {
		return nil, fmt.Errorf("describe %s: this console has no describer", cloud.Redact(loc))
	}
	c.tablesMu.Lock()
	e := c.tables[loc]
	if e == nil {
		e = &described{}
		c.tables[loc] = e
	}
	c.tablesMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at.IsZero() || time.Since(e.at) >= tablesTTL {
		d, err := c.Describe(ctx, loc)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("describe %s: %w", cloud.Redact(loc), ctx.Err())
		}
		e.detail, e.err, e.at = d, err, time.Now()
	}
	return e.detail, e.err
}

type tableRow struct {
	Name     string
	Location string
	Detail   *inspect.Detail
	Error    string
}

func (c *Console) tableNames() []string {
	names := make([]string, 0, len(c.Tables))
	for n := range c.Tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// tableList describes every pipeline table, describers at once.
func (c *Console) tableList(w http.ResponseWriter, r *http.Request) {
	names := c.tableNames()
	rows := make([]tableRow, len(names))
	var g errgroup.Group
	g.SetLimit(describers)
	for i, name := range names {
		loc := c.Tables[name]
		rows[i] = tableRow{Name: name, Location: cloud.Redact(loc)}
		g.Go(func() error {
			d, err := c.describe(r.Context(), loc)
			rows[i].Detail = d
			if err != nil {
				rows[i].Error = err.Error()
			}
			return nil
		})
	}
	_ = g.Wait()
	c.render(w, http.StatusOK, "tables", c.newPage(w, r, "Tables", "tables", rows))
}

type tableData struct {
	tableRow
	Partitions     []inspect.Partition
	MorePartitions int
	Histogram      chart
	Debt           chart
}

// chart is an SVG bar chart's layout.
type chart struct {
	W, H  int
	Label string
	Bars  []chartBar
}

type chartBar struct {
	X, Y, W, H   int
	Label, Value string
	// Title is what hovering the bar shows ("" for none).
	Title          string
	LabelX, LabelY int
	ValueX, ValueY int
}

// tablePage is everything describe shows of one pipeline table. A table
// that cannot be described shows why, in the page.
func (c *Console) tablePage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	loc, ok := c.Tables[name]
	if !ok {
		c.message(w, r, http.StatusNotFound, "No such table", fmt.Sprintf("The pipeline has no table %q.", name))
		return
	}
	d := tableData{tableRow: tableRow{Name: name, Location: cloud.Redact(loc)}}
	detail, err := c.describe(r.Context(), loc)
	if err != nil {
		d.Error = err.Error()
	}
	if detail != nil {
		d.Detail = detail
		d.Partitions = detail.Partitions[:min(len(detail.Partitions), maxPartitionRows)]
		d.MorePartitions = len(detail.Partitions) - len(d.Partitions)
		d.Histogram = histogramChart(detail.Histogram)
		d.Debt = debtChart(detail.Partitions)
	}
	c.render(w, http.StatusOK, "table", c.newPage(w, r, "Table "+name, "tables", d))
}

// histogramChart draws a column per size bucket, its height the bucket's
// file count.
func histogramChart(buckets []inspect.Bucket) chart {
	ch := chart{W: max(len(buckets), 1)*(histBarW+histGap) + histGap, H: histH + 2*histPad}
	var most int64
	var words []string
	for _, b := range buckets {
		most = max(most, b.Files)
		words = append(words, fmt.Sprintf("%s: %d files", b.Label, b.Files))
	}
	ch.Label = "File sizes: " + strings.Join(words, "; ")
	if len(buckets) == 0 {
		ch.Label = "File sizes: no files"
	}
	for i, b := range buckets {
		h := 0
		if most > 0 {
			h = int(float64(histH) * float64(b.Files) / float64(most))
		}
		if b.Files > 0 {
			h = max(h, 1)
		}
		x := histGap + i*(histBarW+histGap)
		y := histPad + histH - h
		ch.Bars = append(ch.Bars, chartBar{X: x, Y: y, W: histBarW, H: h, Label: shortSizes(b.Label), Title: b.Label + ": " + fmtCount(b.Files) + " files", Value: fmtCount(b.Files),
			LabelX: x + histBarW/2, LabelY: histPad + histH + 16, ValueX: x + histBarW/2, ValueY: y - 4})
	}
	return ch
}

// sizeUnits shorten a bucket's label under its column: "128-192M"
// fits a column, "128-192MiB" runs into its neighbours' labels. The
// chart's description and each column's title keep the full label.
var sizeUnits = strings.NewReplacer("KiB", "K", "MiB", "M", "GiB", "G", "TiB", "T", ">=", "≥")

func shortSizes(label string) string { return sizeUnits.Replace(label) }

// debtChart draws a row per partition with small files, the topDebt
// with the most small bytes, its length those bytes.
func debtChart(parts []inspect.Partition) chart {
	var debt []inspect.Partition
	for _, p := range parts {
		if p.SmallBytes > 0 || p.SmallFiles > 0 {
			debt = append(debt, p)
		}
	}
	slices.SortStableFunc(debt, func(a, b inspect.Partition) int { return int(min(max(b.SmallBytes-a.SmallBytes, -1), 1)) })
	debt = debt[:min(len(debt), topDebt)]
	ch := chart{W: debtLabelW + debtBarW + 120, H: max(len(debt), 1)*debtRowH + 8}
	if len(debt) == 0 {
		ch.Label = "Small-file debt: none"
		return ch
	}
	most := debt[0].SmallBytes
	var words []string
	for i, p := range debt {
		name := p.Partition
		if name == "" {
			name = "(unpartitioned)"
		}
		w := 0
		if most > 0 {
			w = max(int(float64(debtBarW)*float64(p.SmallBytes)/float64(most)), 1)
		}
		y := 4 + i*debtRowH
		value := fmt.Sprintf("%s in %d files", fmtBytes(p.SmallBytes), p.SmallFiles)
		words = append(words, name+": "+value)
		ch.Bars = append(ch.Bars, chartBar{X: debtLabelW, Y: y + 2, W: w, H: debtRowH - 4, Label: clip(name, 40), Value: value,
			LabelX: debtLabelW - 6, LabelY: y + debtRowH - 4, ValueX: debtLabelW + w + 6, ValueY: y + debtRowH - 4})
	}
	ch.Label = fmt.Sprintf("Small-file debt of the %d partitions with the most: %s", len(debt), strings.Join(words, "; "))
	return ch
}
