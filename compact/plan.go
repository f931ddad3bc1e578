package compact

import (
	"errors"
	"fmt"
	"math/bits"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// The planner's rules, as fractions of the target file size. They follow
// Iceberg's rewrite_data_files defaults (min-file-size 75%, max-file-size
// 180%, min-input-files 5) where Iceberg has one.
//
//   - A file under 3/4 of the target is small: a candidate for packing.
//     Planned outputs are at least 3/4 of the target (unless a partition's
//     small files add up to less than one target), so the outputs of one
//     run are not candidates of the next.
//   - A file over 9/5 of the target is oversize and is split. Outputs are
//     at most about 3/2 of the target, so they are never split again.
//   - A remainder under 1/2 of the target is folded into the other
//     outputs instead of becoming a file of its own: B bytes give
//     floor(B/target) outputs when B mod target < target/2, else
//     ceil(B/target), each of B/outputs bytes. Folded outputs are at most
//     3/2 of the target (one output with half a target folded in); kept
//     remainders make outputs of at least 3/4 of it (two outputs sharing
//     1½ targets). 1/2 is the one fraction that keeps both bounds inside
//     the small and oversize limits.
//   - A bin holds at most about 8 targets of input (PlanOptions.MaxBinBytes)
//     so that a large partition's work spreads over workers. A bin ends on
//     a file boundary, up to half a small file from where its outputs would
//     end, which moves its outputs off B/outputs by at most 3/4 target
//     shared among them: with bins of 6 targets or more that keeps them
//     between 3/4 and 4/3 of the target (about 0.86 to 1.16 at 8 targets).
const (
	defaultMinInputFiles = 5
	defaultBinTargets    = 8
	// minBinTargets bounds MaxBinBytes from below: with bins of fewer
	// targets, where a bin ends could make its outputs small enough to be
	// candidates again (see above).
	minBinTargets = 6
	// maxTargetFileSize keeps the planner's integer arithmetic (target × 9)
	// far from overflow; no table wants files of a terabyte.
	maxTargetFileSize = 1 << 40
)

// PlanOptions tune the compaction planner. The zero value is valid and
// means the defaults; see DefaultPlanOptions.
type PlanOptions struct {
	// TargetFileSize is the output file size to aim for, in bytes of
	// (compressed) file, as Delta and Iceberg measure it. Files under 75%
	// of it are packed together, files over 180% of it are split. Zero:
	// 256 MiB.
	TargetFileSize int64
	// MinInputFiles is the number of small files that makes a partition
	// worth rewriting; more than one target's worth of small bytes does
	// too, whatever their number. Zero: 5.
	MinInputFiles int
	// IncludeCurrent also compacts the partition of the current UTC day
	// (the one whose "date" partition value is Now's UTC date), which
	// ingest is most likely still writing. False: it is skipped.
	// Partitions without a "date" value are never current.
	IncludeCurrent bool
	// MinFileAge leaves alone files added (DataFile.AddedAt) less than
	// this long before Now: they are neither packed nor split. Zero: off,
	// every file may be taken.
	MinFileAge time.Duration
	// Partitions restricts the plan to these partitions, Hive folders as
	// in DataFile.Partition ("date=2024-01-31"). A listed partition
	// without live files is reported as such. Empty: all partitions.
	Partitions []string
	// MaxBinBytes bounds the input bytes of one bin of packed small files,
	// so that a large partition's rewrite spreads over several workers. A
	// bin ends on a file boundary, so it may exceed the bound by less than
	// one small file; a split bin is one file, however large. Zero: 8 ×
	// TargetFileSize; otherwise at least 6 × TargetFileSize.
	MaxBinBytes int64
	// Order is the order of rows a work plan's units are rewritten in
	// (PlanWork records it for every worker): nil, the table's
	// properties (compact.sort_by, compact.zorder_by); a zero Ordering,
	// input order. An ordered plan has one unit per partition, as Run
	// sorts a partition's bins as one. PlanCompaction ignores it.
	Order *Ordering

	// Now is the planner's clock, for the current day and MinFileAge.
	// Zero: time.Now().
	Now time.Time
}

// DefaultPlanOptions returns the options the zero value stands for, with
// Now left zero (the time of planning).
func DefaultPlanOptions() PlanOptions {
	return PlanOptions{
		TargetFileSize: DefaultTargetFileSize,
		MinInputFiles:  defaultMinInputFiles,
		MaxBinBytes:    defaultBinTargets * DefaultTargetFileSize,
	}
}

// Validate names every bad field. Zero values are valid: they mean the
// defaults.
func (o PlanOptions) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	target := o.TargetFileSize
	switch {
	case target < 0:
		bad("TargetFileSize %d: want > 0 bytes, or 0 for 256 MiB", target)
	case target > maxTargetFileSize:
		bad("TargetFileSize %s: want at most 1TiB", planSize(target))
	case target == 0:
		target = DefaultTargetFileSize
	}
	if o.MinInputFiles < 0 {
		bad("MinInputFiles %d: want > 0, or 0 for 5", o.MinInputFiles)
	}
	if o.MinFileAge < 0 {
		bad("MinFileAge %v: want >= 0 (0 is off)", o.MinFileAge)
	}
	switch {
	case o.MaxBinBytes < 0:
		bad("MaxBinBytes %d: want > 0 bytes, or 0 for 8 × TargetFileSize", o.MaxBinBytes)
	case o.MaxBinBytes > 0 && target > 0 && target <= maxTargetFileSize && o.MaxBinBytes < minBinTargets*target:
		bad("MaxBinBytes %s: want at least 6 × TargetFileSize (%s)", planSize(o.MaxBinBytes), planSize(minBinTargets*target))
	}
	seen := map[string]int{}
	for i, p := range o.Partitions {
		if !isHiveFolder(p) {
			bad("Partitions[%d] %q: want a Hive partition folder such as date=2024-01-31", i, p)
			continue
		}
		if j, dup := seen[p]; dup {
			bad("Partitions[%d] %q: already listed as Partitions[%d]", i, p, j)
			continue
		}
		seen[p] = i
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New("plan options: " + strings.Join(errs, "; "))
}

// isHiveFolder reports whether p is one or more '/'-separated key=value
// levels with non-empty keys.
func isHiveFolder(p string) bool {
	if p == "" {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		k, _, ok := strings.Cut(seg, "=")
		if !ok || k == "" {
			return false
		}
	}
	return true
}

// withDefaults resolves zero fields.
func (o PlanOptions) withDefaults() PlanOptions {
	if o.TargetFileSize == 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.MinInputFiles == 0 {
		o.MinInputFiles = defaultMinInputFiles
	}
	if o.MaxBinBytes == 0 {
		o.MaxBinBytes = defaultBinTargets * o.TargetFileSize
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Bin is one unit of rewrite work: input files of one partition that
// become Outputs new files of about Bytes/Outputs bytes each.
type Bin struct {
	// Partition is the Hive folder of every input.
	Partition string
	// Inputs are the files to replace, sorted by path.
	Inputs []catalog.DataFile
	// Bytes and Rows are the inputs' totals.
	Bytes, Rows int64
	// Outputs is the number of files planned; see BytesPerOutput.
	Outputs int
	// Split is true for a bin of one oversize file to be cut into
	// Outputs files; false for small files packed together.
	Split bool
}

// BytesPerOutput is the input bytes each output should take, rounded up:
// rolling outputs over at this size, rather than at the target, is what
// makes the remainder fold into the other outputs.
func (b Bin) BytesPerOutput() int64 {
	if b.Outputs <= 0 {
		return b.Bytes
	}
	return (b.Bytes + int64(b.Outputs) - 1) / int64(b.Outputs)
}

// PartitionPlan is the planner's decision for one partition.
type PartitionPlan struct {
	// Partition is the Hive folder, "" for an unpartitioned table.
	Partition string
	// Files and Bytes count all live files of the partition, taken or not.
	Files, Bytes int64
	// Bins are the rewrites planned: packed small files first, then
	// splits, each in path order. Empty when the partition is skipped.
	Bins []Bin
	// Skip says why nothing is done, empty when Bins is not: "current
	// day", "too few small files (3 < 5)", "already compacted (...)", "no
	// small files", "no live files".
	Skip string
}

// Plan is the planner's decisions for a table, partitions in sorted order.
type Plan struct {
	Partitions []PartitionPlan
	// Target is the target file size the plan was made for, in bytes.
	Target int64
}

// Bins returns every bin of the plan, partition by partition.
func (p Plan) Bins() []Bin {
	var bins []Bin
	for _, pp := range p.Partitions {
		bins = append(bins, pp.Bins...)
	}
	return bins
}

// Totals returns the files the plan replaces, the files it writes and the
// bytes it reads.
func (p Plan) Totals() (filesIn, filesOut, bytesIn int64) {
	for _, b := range p.Bins() {
		filesIn += int64(len(b.Inputs))
		filesOut += int64(b.Outputs)
		bytesIn += b.Bytes
	}
	return filesIn, filesOut, bytesIn
}

// String prints the decisions as --dry-run shows them: a line of totals,
// then one line per partition followed by one per bin.
//
//	plan target=256MiB: 2 partitions, 200 files in, 8 out, 2000MiB in
//	date=2024-01-01 200 files 2000MiB: 200 in, 8 out, 2000MiB in
//	  bin 200 files 2000MiB (part-00000.parquet .. part-00199.parquet) -> 8 × 250MiB
//	date=2024-01-02 20 files 1900MiB: skip: too few small files (3 < 5)
func (p Plan) String() string {
	var b strings.Builder
	in, out, bytes := p.Totals()
	fmt.Fprintf(&b, "plan target=%s: %s, %s in, %d out, %s in\n",
		planSize(p.Target), plural(int64(len(p.Partitions)), "partition"), plural(in, "file"), out, planSize(bytes))
	for _, pp := range p.Partitions {
		name := pp.Partition
		if name == "" {
			name = "(unpartitioned)"
		}
		fmt.Fprintf(&b, "%s %s %s: ", name, plural(pp.Files, "file"), planSize(pp.Bytes))
		if len(pp.Bins) == 0 {
			fmt.Fprintf(&b, "skip: %s\n", pp.Skip)
			continue
		}
		var in, out, bytes int64
		for _, bin := range pp.Bins {
			in += int64(len(bin.Inputs))
			out += int64(bin.Outputs)
			bytes += bin.Bytes
		}
		fmt.Fprintf(&b, "%d in, %d out, %s in\n", in, out, planSize(bytes))
		for _, bin := range pp.Bins {
			first, last := path.Base(bin.Inputs[0].Path), path.Base(bin.Inputs[len(bin.Inputs)-1].Path)
			switch {
			case bin.Split:
				fmt.Fprintf(&b, "  split %s %s", first, planSize(bin.Bytes))
			case len(bin.Inputs) == 1:
				fmt.Fprintf(&b, "  bin 1 file %s (%s)", planSize(bin.Bytes), first)
			default:
				fmt.Fprintf(&b, "  bin %d files %s (%s .. %s)", len(bin.Inputs), planSize(bin.Bytes), first, last)
			}
			fmt.Fprintf(&b, " -> %d × %s\n", bin.Outputs, planSize(bin.BytesPerOutput()))
		}
	}
	return b.String()
}

// plural is "1 file", "2 files".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// planSize prints a byte count exactly in the largest binary unit that
// divides it into fewer than 10,000, else to one decimal in the largest
// unit it reaches.
func planSize(n int64) string {
	units := []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}
	for _, u := range units {
		if n != 0 && n%u.size == 0 && n/u.size < 10000 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	for _, u := range units {
		if n >= u.size {
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// PlanCompaction decides, for the live files of a table, which partitions
// to rewrite and how. It is a pure function of its arguments (and of the
// clock when o.Now is zero); the same files and options give the same
// plan, and planning over the files a plan would produce plans nothing.
//
// Per partition, in order:
//
//  1. The current UTC day's partition is skipped unless IncludeCurrent.
//  2. Files younger than MinFileAge are left alone.
//  3. Each oversize file (over 180% of the target) gets a split bin.
//  4. Small files (under 75% of the target) are packed, sorted by path so
//     that files written together stay together, if there are at least
//     MinInputFiles of them or more than one target's worth of bytes, and
//     if there are more of them than ceil(their bytes / target): a
//     partition already down to that count is compacted, even when its
//     files are smaller than 75% of the target because the partition is.
//     They become floor or ceil(bytes / target) outputs (see the
//     remainder rule above), spread over bins of at most MaxBinBytes.
//
// Files between 75% and 180% of the target are never touched. The error
// is for invalid options or a file list that is not a table's (a path
// listed twice, a negative size).
func PlanCompaction(files []catalog.DataFile, o PlanOptions) (Plan, error) {
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	o = o.withDefaults()
	plan := Plan{Target: o.TargetFileSize}

	var wanted map[string]bool
	if len(o.Partitions) > 0 {
		wanted = map[string]bool{}
		for _, p := range o.Partitions {
			wanted[p] = true
		}
	}
	byPart := map[string][]catalog.DataFile{}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if seen[f.Path] {
			return Plan{}, fmt.Errorf("plan: file %s listed twice", f.Path)
		}
		seen[f.Path] = true
		if f.Bytes < 0 {
			return Plan{}, fmt.Errorf("plan: file %s: negative size %d", f.Path, f.Bytes)
		}
		if wanted != nil && !wanted[f.Partition] {
			continue
		}
		byPart[f.Partition] = append(byPart[f.Partition], f)
	}
	for p := range wanted {
		if _, ok := byPart[p]; !ok {
			byPart[p] = nil
		}
	}
	parts := make([]string, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Strings(parts)

	today := o.Now.UTC().Format(time.DateOnly)
	for _, p := range parts {
		fs := byPart[p]
		sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
		plan.Partitions = append(plan.Partitions, planPartition(p, fs, o, today))
	}
	return plan, nil
}

// planPartition plans one partition; files are sorted by path.
func planPartition(p string, files []catalog.DataFile, o PlanOptions, today string) PartitionPlan {
	pp := PartitionPlan{Partition: p, Files: int64(len(files))}
	for _, f := range files {
		pp.Bytes += f.Bytes
	}
	if len(files) == 0 {
		pp.Skip = "no live files"
		return pp
	}
	if !o.IncludeCurrent && dateValue(files[0]) == today {
		pp.Skip = "current day"
		return pp
	}
	t := o.TargetFileSize
	var (
		small      []catalog.DataFile
		smallBytes int64
		splits     []Bin
		young      int
		deletes    bool // a file taken has rows deleted by other files
	)
	for _, f := range files {
		if o.MinFileAge > 0 && o.Now.Sub(f.AddedAt) < o.MinFileAge {
			young++
			continue
		}
		deletes = deletes || f.HasDeletes
		switch {
		case 4*f.Bytes < 3*t, f.HasDeletes && 5*f.Bytes <= 9*t:
			// Small, or of a size to keep but with deleted rows that
			// a rewrite leaves out.
			small = append(small, f)
			smallBytes += f.Bytes
		case 5*f.Bytes > 9*t:
			splits = append(splits, Bin{
				Partition: p,
				Inputs:    []catalog.DataFile{f},
				Bytes:     f.Bytes,
				Rows:      f.Rows,
				Outputs:   int(outputsFor(f.Bytes, t)),
				Split:     true,
			})
		}
	}

	skip := ""
	n := int64(len(small))
	switch {
	case n == 0 && young > 0:
		skip = fmt.Sprintf("no small files old enough (%d younger than %v)", young, o.MinFileAge)
	case n == 0:
		skip = "no small files"
	// A file with deleted rows is rewritten whatever the count, so
	// that its deletes go.
	case n < int64(o.MinInputFiles) && smallBytes <= t && !deletes:
		skip = fmt.Sprintf("too few small files (%d < %d)", n, o.MinInputFiles)
	case n <= ceilDiv(smallBytes, t) && !deletes:
		skip = fmt.Sprintf("already compacted (%s <= ceil(%s / %s) = %d)",
			plural(n, "small file"), planSize(smallBytes), planSize(t), ceilDiv(smallBytes, t))
	default:
		pp.Bins = packBins(p, small, smallBytes, t, o.MaxBinBytes)
	}
	pp.Bins = append(pp.Bins, splits...)
	if len(pp.Bins) == 0 {
		pp.Skip = skip
	}
	return pp
}

// dateValue returns the file's "date" partition value, "" when it has
// none (or it is NULL). It reads PartitionValues, falling back to the
// folder name for files listed without decoded values.
func dateValue(f catalog.DataFile) string {
	if v, ok := f.PartitionValues["date"]; ok {
		if v == nil {
			return ""
		}
		return *v
	}
	for seg := range strings.SplitSeq(f.Partition, "/") {
		if v, ok := strings.CutPrefix(seg, "date="); ok {
			return v
		}
	}
	return ""
}

// outputsFor is the number of outputs for b bytes at target t: ceil(b/t),
// unless the remainder is under half a target, when it is folded into the
// other outputs (floor). At least 1.
func outputsFor(b, t int64) int64 {
	q, r := b/t, b%t
	switch {
	case q == 0:
		return 1
	case r == 0:
		return q
	// The second test matters only where t is not a multiple of 4: the
	// outputs must stay at least 3/4 of the target after integer division.
	case 2*r >= t && 4*(b/(q+1)) >= 3*t:
		return q + 1
	default:
		return q
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// mulDiv returns floor(a × b / c) for non-negative a, b and positive c with
// a result that fits: no overflow in the product.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// packBins spreads small files (sorted by path, total bytes) over bins.
// The partition gets outputsFor(bytes) outputs of bytes/outputs each, as
// if the files were one stream cut into equal pieces. When they do not fit
// in one bin of maxBin bytes, the outputs are dealt evenly over the fewest
// bins that keep each under maxBin, and each bin ends at the file boundary
// nearest the byte offset where its last output would end; every bin's
// outputs then come within a small fraction of the partition's size per
// output.
func packBins(p string, small []catalog.DataFile, bytes, t, maxBin int64) []Bin {
	outputs := outputsFor(bytes, t)
	nbins := int64(1)
	if bytes > maxBin {
		perBin := max(1, mulDiv(maxBin, outputs, bytes)) // outputs of bytes/outputs that fit in maxBin
		nbins = ceilDiv(outputs, perBin)
	}
	if nbins > int64(len(small)) {
		nbins = int64(len(small))
	}
	var (
		bins    []Bin
		next    int   // next file
		cum     int64 // bytes of files taken
		outsCum int64 // outputs dealt
	)
	for i := range nbins {
		outs := outputs / nbins
		if i < outputs%nbins {
			outs++
		}
		outsCum += outs
		end := mulDiv(bytes, outsCum, outputs) // where this bin's last output ends
		b := Bin{Partition: p, Outputs: int(outs)}
		for next < len(small) {
			f := small[next]
			last := i == nbins-1
			// Take f if this is the last bin, if the bin is still empty, or
			// if ending after f is nearer end than ending before it; leave
			// at least one file for each bin to come.
			left := int64(len(small) - next)
			if !last && len(b.Inputs) > 0 && (2*cum+f.Bytes > 2*end || left <= nbins-1-i) {
				break
			}
			b.Inputs = append(b.Inputs, f)
			b.Bytes += f.Bytes
			b.Rows += f.Rows
			cum += f.Bytes
			next++
		}
		bins = append(bins, b)
	}
	return bins
}
