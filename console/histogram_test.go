package console

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-data/sluice/inspect"
)

// The file-size histogram's labels stand clear of one another for a
// table with many buckets (a 1.5GiB target adds edges at 1.1GiB and
// 1.5GiB to the fixed ones, labels as describe writes them): each label's
// estimated width (0.6 em a character at the 10px the stylesheet sets)
// fits between its neighbours' centres with room to spare, and the full
// label stays in the bucket's title.
func TestHistogramLabelsDoNotOverlap(t *testing.T) {
	labels := []string{"<1MiB", "1-8MiB", "8-32MiB", "32-64MiB", "64-128MiB", "128-256MiB", "256-512MiB",
		"512MiB-1GiB", "1-1.1GiB", "1.1-1.5GiB", "1.5-4GiB", ">=4GiB"}
	var buckets []inspect.Bucket
	for i, l := range labels {
		buckets = append(buckets, inspect.Bucket{Label: l, Files: int64(1000 * (i + 1))})
	}
	ch := histogramChart(buckets)
	if len(ch.Bars) != len(labels) {
		t.Fatalf("%d columns, want %d", len(ch.Bars), len(labels))
	}
	const charW, room = 6.0, 4.0
	width := func(s string) float64 { return charW * float64(utf8.RuneCountInString(s)) }
	for i, b := range ch.Bars {
		if !strings.HasPrefix(b.Title, labels[i]+": ") || !strings.Contains(ch.Label, labels[i]+": ") {
			t.Errorf("bucket %s: title %q; the full label is gone", labels[i], b.Title)
		}
		if b.LabelX-int(width(b.Label)/2) < 0 || b.LabelX+int(width(b.Label)/2) > ch.W {
			t.Errorf("label %q at x %d runs off the chart (width %d)", b.Label, b.LabelX, ch.W)
		}
		if i == 0 {
			continue
		}
		prev := ch.Bars[i-1]
		if gap := float64(b.LabelX-prev.LabelX) - (width(prev.Label)+width(b.Label))/2; gap < room {
			t.Errorf("labels %q (x %d) and %q (x %d) are %.1f units apart, want at least %.0f", prev.Label, prev.LabelX, b.Label, b.LabelX, gap, room)
		}
	}
}
