package inspect

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/catalog"
)

// histogramEdges are the fixed edges of the file-size histogram, to which
// the table's small-file edge (3/4 of its target, the planner's) and its
// target are added.
var histogramEdges = []int64{1 << 20, 8 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30, 4 << 30}

// histogram counts files by size: buckets between fixed edges, the
// table's target and its small-file edge among them, up to the one
// holding the largest file or the target, whichever is larger. The
// buckets' files add up to len(files).
func histogram(files []catalog.DataFile, target int64) []Bucket {
	edges := append([]int64{target * 3 / 4, target}, histogramEdges...)
	slices.Sort(edges)
	edges = slices.Compact(edges)
	var largest int64
	for _, f := range files {
		largest = max(largest, f.Bytes)
	}
	top := max(largest, target)
	// Keep the edges up to the first above top: the last bucket is then
	// unbounded and never empty-ended.
	for i, e := range edges {
		if e > top {
			edges = edges[:i+1]
			break
		}
	}
	out := make([]Bucket, 0, len(edges)+1)
	lo := int64(0)
	for _, e := range edges {
		out = append(out, Bucket{Label: bucketLabel(lo, e), Min: lo, Max: e})
		lo = e
	}
	out = append(out, Bucket{Label: ">=" + sizeText(lo), Min: lo})
	for _, f := range files {
		i, _ := slices.BinarySearchFunc(out, f.Bytes, func(b Bucket, n int64) int {
			switch {
			case b.Max != 0 && n >= b.Max:
				return -1
			case n < b.Min:
				return 1
			}
			return 0
		})
		out[i].Files++
		out[i].Bytes += f.Bytes
	}
	// An unbounded last bucket that holds nothing says nothing.
	if n := len(out); n > 1 && out[n-1].Files == 0 {
		out = out[:n-1]
	}
	return out
}

// bucketLabel names the bucket [lo, hi): "<1MiB", "1-8MiB", "6KiB-8KiB".
func bucketLabel(lo, hi int64) string {
	if lo == 0 {
		return "<" + sizeText(hi)
	}
	l, h := sizeText(lo), sizeText(hi)
	if ul, uh := unit(lo), unit(hi); ul == uh && ul != "B" {
		return l[:len(l)-len(ul)] + "-" + h
	}
	return l + "-" + h
}

// sizeText is n bytes in binary units, as few digits as exact allows
// ("192MiB", "1.5GiB", "6.2KiB").
func sizeText(n int64) string {
	u := unit(n)
	div := map[string]int64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[u]
	if n%div == 0 {
		return strconv.FormatInt(n/div, 10) + u
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/float64(div)), ".0") + u
}

// unit is the largest binary unit n is at least one of.
func unit(n int64) string {
	switch {
	case n >= 1<<40:
		return "TiB"
	case n >= 1<<30:
		return "GiB"
	case n >= 1<<20:
		return "MiB"
	case n >= 1<<10:
		return "KiB"
	}
	return "B"
}
