package compact

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// A rewrite with an Ordering writes its rows in order, as Delta's OPTIMIZE
// ZORDER BY and Iceberg's sort strategy do, so that the min/max statistics
// of its files and row groups cover narrow ranges of the key and a reader
// filtering on it skips most of them:
//
//   - sort by columns: lexicographic, ascending, NULLs first; the outputs
//     carry it as their row groups' sorting_columns;
//   - z-order by columns: by the bits of the columns' order-preserving
//     keys interleaved (zorder.go), so that a filter on any one of them
//     skips files, not only one on the first.
//
// Either way a row's key is bytes built once (sortKeyFunc, zorderKeyFunc)
// and rows compare by them. The rows of a bin go through an external
// merge sort (sortrun.go): read, converted to the table's types and
// hashed for the verification as any rewrite's (sortrewrite.go), they are
// buffered up to a share of the memory budget, sorted,
// and spilled as a sorted run to a folder of local disk (os.MkdirTemp
// under TMPDIR, removed when the rewrite ends, whatever its outcome). The
// runs are merged, at most sortFanIn at a time, into the outputs, which
// are cut only where the key changes (a z-order's where it enters another
// cell of the curve): the outputs of one bin cover disjoint, increasing
// ranges of it. Run gives each partition one bin when the rows are
// ordered, so that holds of a partition's rewritten files. No page is
// copied or reused: every value is decoded and encoded again. Row groups
// are small (DefaultSortedRowGroupBytes), each a narrow range of the key.
//
// Which files are rewritten does not change: an ordering is no reason to
// rewrite a file the planner leaves alone (one near the target size, an
// earlier sorted run's output included), so a partition's files are
// ordered among the files of each run, not with those of earlier runs.

// Table properties that give a table's compactions an Ordering when the
// run does not choose one: a comma-separated list of top-level columns.
const (
	// PropSortBy sorts the rows by these columns.
	PropSortBy = "compact.sort_by"
	// PropZOrderBy z-orders the rows by these columns.
	PropZOrderBy = "compact.zorder_by"
)

// Ordering is the order a rewrite writes its rows in. The zero value
// keeps the inputs' order.
type Ordering struct {
	// Columns are the key's columns, top-level primitive columns of the
	// table. Empty: no ordering.
	Columns []string `json:"columns"`
	// ZOrder interleaves the bits of the columns' keys instead of sorting
	// by them one after the other.
	ZOrder bool `json:"zorder,omitempty"`
}

// On reports whether o orders the rows.
func (o Ordering) On() bool { return len(o.Columns) > 0 }

// String is "sort by a,b", "z-order by a,b" or "input order".
func (o Ordering) String() string {
	switch {
	case !o.On():
		return "input order"
	case o.ZOrder:
		return "z-order by " + strings.Join(o.Columns, ",")
	default:
		return "sort by " + strings.Join(o.Columns, ",")
	}
}

// ParseColumns splits a comma-separated list of column names, as the
// --sort-by flag and the table properties hold them; blanks around a name
// are dropped. An empty or blank s is no column.
func ParseColumns(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for c := range strings.SplitSeq(s, ",") {
		// An empty name stays, for validate to name it.
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// TableOrdering is the Ordering a table's properties give its compactions
// (PropSortBy, PropZOrderBy); the zero Ordering when neither is set. Both
// set is an error.
func TableOrdering(m *catalog.Manifest) (Ordering, error) {
	sortBy, zorderBy := ParseColumns(m.Properties[PropSortBy]), ParseColumns(m.Properties[PropZOrderBy])
	switch {
	case len(sortBy) > 0 && len(zorderBy) > 0:
		return Ordering{}, fmt.Errorf("table properties %s and %s are both set: want one", PropSortBy, PropZOrderBy)
	case len(zorderBy) > 0:
		return Ordering{Columns: zorderBy, ZOrder: true}, nil
	}
	return Ordering{Columns: sortBy}, nil
}

// validate checks the column list alone: no empty or repeated name.
func (o Ordering) validate() error {
	for i, c := range o.Columns {
		if c == "" {
			return fmt.Errorf("%s: an empty column name", o)
		}
		if slices.Contains(o.Columns[:i], c) {
			return fmt.Errorf("%s: column %q is listed twice", o, c)
		}
	}
	return nil
}

// ErrOrdering is an Ordering a table cannot have: a column it lacks, a
// nested column, a z-order on a column without an order-preserving key.
var ErrOrdering = errors.New("bad ordering")

// check checks o against the table's schema and returns the index of each
// of its columns.
func (o Ordering) check(schema catalog.Schema) ([]int, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOrdering, err)
	}
	if o.On() && pqio.HasNested(schema) {
		return nil, fmt.Errorf("%w: %s: a table with nested columns is compacted in its input order only", ErrOrdering, o)
	}
	idx := make([]int, len(o.Columns))
	for i, name := range o.Columns {
		j := slices.IndexFunc(schema.Columns, func(c catalog.Column) bool { return c.Name == name })
		if j < 0 {
			return nil, fmt.Errorf("%w: %s: the table has no column %q", ErrOrdering, o, name)
		}
		idx[i] = j
	}
	return idx, nil
}

// runOrdering is the Ordering of a run: given, else the table's; checked
// against the table's schema.
func runOrdering(given *Ordering, m *catalog.Manifest) (Ordering, error) {
	o := Ordering{}
	if given != nil {
		o = *given
	} else {
		var err error
		if o, err = TableOrdering(m); err != nil {
			return Ordering{}, fmt.Errorf("%w: %w", ErrOrdering, err)
		}
	}
	if _, err := o.check(m.Schema); err != nil {
		return Ordering{}, err
	}
	return o, nil
}

// binPerPartition joins the bins of each partition into one, in the order
// of their partitions' first bins, so that one sort orders all of a
// partition's rewritten rows.
func binPerPartition(bins []Bin) []Bin {
	var out []Bin
	at := map[string]int{}
	for _, b := range bins {
		i, ok := at[b.Partition]
		if !ok {
			at[b.Partition] = len(out)
			b.Inputs = slices.Clone(b.Inputs)
			out = append(out, b)
			continue
		}
		j := &out[i]
		j.Inputs = append(j.Inputs, b.Inputs...)
		j.Bytes += b.Bytes
		j.Rows += b.Rows
		j.Outputs += b.Outputs
		j.Split = false
	}
	for i := range out {
		slices.SortFunc(out[i].Inputs, func(a, b catalog.DataFile) int { return strings.Compare(a.Path, b.Path) })
	}
	return out
}
