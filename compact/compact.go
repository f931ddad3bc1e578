package compact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// Table is what compaction needs of a table: its newest version and live
// files, where a data file lives, the name of a file written for it (a
// Delta table names its files as Delta's writers do), and the commit.
// Every catalog.Maintainable implements it: *catalog.Table, a Delta table.
// A table whose data files may have deleted rows implements RowDeleter too.
type Table interface {
	Latest(ctx context.Context) (*catalog.Manifest, error)
	Files(ctx context.Context, m *catalog.Manifest) ([]catalog.DataFile, error)
	DataFileStore(ctx context.Context, f catalog.DataFile) (cloud.Store, string, error)
	NewDataFilePath(partition string) string
	Store() cloud.Store
	Commit(ctx context.Context, c catalog.Change) (*catalog.Manifest, error)
}

// Options tune a compaction run.
type Options struct {
	Plan    PlanOptions
	Rewrite RewriteOptions
	// Workers bounds the bins rewritten at once. Zero: the number of CPUs.
	Workers int
	// MemoryBudget is the bytes all workers together may buffer; each
	// rewrite gets an equal share. Zero: 384 MiB.
	MemoryBudget int64
	// MaxCommits bounds the commits of one run: partitions are grouped
	// into at most this many, each committed as soon as its bins are
	// verified, so a long run makes partial progress. Zero: 10.
	MaxCommits int
	// Order orders the rows of every rewrite (RewriteOptions.Order), each
	// partition's bins then rewritten as one so that its outputs cover
	// disjoint ranges of the key. Nil: the table's properties say
	// (TableOrdering); a zero Ordering: input order, whatever they say.
	// Run sets Rewrite.Order from it.
	Order *Ordering
	// DryRun plans and returns without writing anything.
	DryRun bool
	// RunID is recorded in the manifest.
	RunID string
	// Progress, when set, is called (from several goroutines) as input
	// bytes are done.
	Progress func(bytesDone, bytesTotal int64)
	// Logger gets one line per phase; nil: none.
	Logger *slog.Logger
}

// Validate names every bad field.
func (o Options) Validate() error {
	var errs []error
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: want >= 0", o.Workers))
	}
	if o.MaxCommits < 0 {
		errs = append(errs, fmt.Errorf("max commits %d: want >= 0", o.MaxCommits))
	}
	if o.MemoryBudget < 0 {
		errs = append(errs, fmt.Errorf("memory budget %d: want >= 0", o.MemoryBudget))
	}
	if err := o.Plan.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Order != nil {
		if err := o.Order.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PartitionError is a partition that could not be compacted, and why. The
// other partitions of the run go on.
type PartitionError struct {
	Partition string
	Err       error
}

func (e PartitionError) Error() string { return fmt.Sprintf("compact %s: %v", e.Partition, e.Err) }
func (e PartitionError) Unwrap() error { return e.Err }

// Result says what a run did.
type Result struct {
	Plan Plan
	// Partitions compacted and committed.
	Partitions        int
	FilesIn, FilesOut int
	BytesIn, BytesOut int64
	// Rows are the rows read from the inputs, RowsDeleted those of them
	// that were deleted (RowDeleter) and left out: the outputs hold
	// Rows - RowsDeleted rows.
	Rows, RowsDeleted int64
	// PagesReused counts the output pages of the committed partitions
	// stored as their input's compressed bytes (RewriteResult).
	PagesReused int
	// Versions are the versions committed, in order.
	Versions []int64
	// Failed are partitions whose rewrite failed (an incompatible or
	// corrupt input, a verification mismatch); Dropped are partitions
	// whose inputs a concurrent commit removed: retried next run.
	Failed  []PartitionError
	Dropped []string
	Seconds float64
}

// Err joins the partition failures: nil when every planned partition was
// compacted or dropped for a retry.
func (r Result) Err() error {
	errs := make([]error, len(r.Failed))
	for i, f := range r.Failed {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// Run compacts the table: plan, rewrite bins in parallel, verify, commit
// per group of partitions. With no target file size in o, the table's own
// applies (catalog.Manifest.TargetFileSize). A table that is a RowDeleter
// has its inputs' deleted rows left out (Result.RowsDeleted). An error in
// one partition does not stop the others; see Result.Failed. The returned error is for the run as a whole
// (the table could not be read, the context was cancelled).
func Run(ctx context.Context, t Table, o Options) (Result, error) {
	start := time.Now()
	var res Result
	if err := o.Validate(); err != nil {
		return res, err
	}
	o = o.withDefaults()
	o.Rewrite.NewPath = t.NewDataFilePath

	m, err := t.Latest(ctx)
	if err != nil {
		return res, err
	}
	// One target for planning and rewriting: whichever o sets, else the
	// table's own.
	target := cmp.Or(o.Plan.TargetFileSize, o.Rewrite.TargetFileSize, m.TargetFileSize())
	o.Plan.TargetFileSize = cmp.Or(o.Plan.TargetFileSize, target)
	o.Rewrite.TargetFileSize = cmp.Or(o.Rewrite.TargetFileSize, target)
	if o.Rewrite.Order, err = runOrdering(o.Order, m); err != nil {
		return res, err
	}
	files, err := t.Files(ctx, m)
	if err != nil {
		return res, err
	}
	plan, err := PlanCompaction(files, o.Plan)
	if err != nil {
		return res, err
	}
	res.Plan = plan
	bins := plan.Bins()
	if o.Rewrite.Order.On() {
		bins = binPerPartition(bins)
	}
	o.Logger.Info("planned", "version", m.Version, "bins", len(bins), "order", o.Rewrite.Order.String(), "took", time.Since(start))
	if o.DryRun || len(bins) == 0 {
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}

	c := newCompaction(ctx, t, o, m, bins, &res)
	if err := c.rewriteBins(bins); err != nil {
		res.Seconds = time.Since(start).Seconds()
		return res, err
	}
	sort.Slice(res.Failed, func(i, j int) bool { return res.Failed[i].Partition < res.Failed[j].Partition })
	sort.Strings(res.Dropped)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// withDefaults fills in Run's zero fields and gives each rewrite its share
// of the memory budget and the run's shared codecs.
func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = runtime.NumCPU()
	}
	if o.MaxCommits == 0 {
		o.MaxCommits = 10
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = 384 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Rewrite.MemoryBudget = o.MemoryBudget / int64(o.Workers)
	if o.Rewrite.Codecs == nil {
		o.Rewrite.Codecs = pqio.NewCodecs()
	}
	return o
}

// compaction is the state of one Run once it is planned: the partitions,
// grouped into commits, and what the rewrites of each have done so far.
type compaction struct {
	ctx     context.Context
	t       Table
	o       Options
	m       *catalog.Manifest
	parts   []string // partitions in plan order
	groups  [][]string
	groupOf map[string]int
	total   int64 // input bytes of every bin

	mu        sync.Mutex // guards the fields below and *res
	state     map[string]*partState
	groupLeft []int // partitions of each group not yet rewritten
	done      int64 // input bytes rewritten
	res       *Result

	commitMu sync.Mutex // commits go one at a time, in any order
}

// partState is what the rewrites of one partition's bins have done.
type partState struct {
	pending int
	outputs []catalog.DataFile
	inputs  []catalog.DataFile
	rows    int64
	deleted int64
	reused  int
	err     error
}

// newCompaction groups the partitions of bins, in plan order, into at most
// o.MaxCommits commits.
func newCompaction(ctx context.Context, t Table, o Options, m *catalog.Manifest, bins []Bin, res *Result) *compaction {
	c := &compaction{ctx: ctx, t: t, o: o, m: m, res: res, groupOf: map[string]int{}, state: map[string]*partState{}}
	binsOf := map[string][]Bin{}
	for _, b := range bins {
		if _, ok := binsOf[b.Partition]; !ok {
			c.parts = append(c.parts, b.Partition)
		}
		binsOf[b.Partition] = append(binsOf[b.Partition], b)
		c.total += b.Bytes
	}
	c.groups = splitGroups(c.parts, o.MaxCommits)
	for gi, g := range c.groups {
		for _, p := range g {
			c.groupOf[p] = gi
		}
	}
	c.groupLeft = make([]int, len(c.groups))
	for _, p := range c.parts {
		c.state[p] = &partState{pending: len(binsOf[p])}
		c.groupLeft[c.groupOf[p]]++
	}
	return c
}

// open is the rewrites' Opener: a data file of the table, read in place.
func (c *compaction) open(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error) {
	return openDataFile(ctx, c.t, f)
}

// openDataFile opens a data file of t for ranged reads, in place.
func openDataFile(ctx context.Context, t Table, f catalog.DataFile) (io.ReaderAt, int64, error) {
	st, key, err := t.DataFileStore(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	return pqio.NewReaderAt(ctx, st, key, f.Bytes), f.Bytes, nil
}

// rewriteBins rewrites the bins o.Workers at a time; each group of
// partitions is committed as soon as its last bin is done. Cancelled, it
// deletes what was written and not committed.
func (c *compaction) rewriteBins(bins []Bin) error {
	g, gctx := errgroup.WithContext(c.ctx)
	g.SetLimit(c.o.Workers)
	// The largest bins first: the workers then end on small ones and
	// finish nearly together, where in plan order one worker could be
	// left alone with a large last bin while the others idle.
	sched := slices.Clone(bins)
	slices.SortStableFunc(sched, func(a, b Bin) int { return cmp.Compare(b.Bytes, a.Bytes) })
	for _, b := range sched {
		g.Go(func() error { return c.rewriteBin(gctx, b) })
	}
	if err := g.Wait(); err != nil {
		// Cancelled: delete what was written and not committed.
		c.mu.Lock()
		for _, p := range c.parts {
			if s := c.state[p]; s.pending > 0 {
				deleteOutputs(context.WithoutCancel(c.ctx), c.t.Store(), s.outputs)
			}
		}
		c.mu.Unlock()
		return err
	}
	return nil
}

// rewriteBin rewrites one bin, unless its partition failed already, and
// records the outcome; the bin that completes a group commits it.
func (c *compaction) rewriteBin(gctx context.Context, b Bin) error {
	ctx, t := c.ctx, c.t
	c.mu.Lock()
	failed := c.state[b.Partition].err != nil
	c.mu.Unlock()
	var rr RewriteResult
	var err error
	if !failed {
		ro := c.o.Rewrite
		ro.Outputs = b.Outputs
		if ro.Deleted, err = c.deletedRows(gctx, b.Inputs, ro.Deleted); err == nil {
			rr, err = Rewrite(gctx, c.open, t.Store(), c.m.Schema, b.Partition, b.Inputs, ro)
		}
	}
	if cerr := gctx.Err(); cerr != nil {
		// Cancelled, not failed: the outputs of this bin are
		// gone already (Rewrite cleans up on error).
		deleteOutputs(context.WithoutCancel(ctx), t.Store(), rr.Outputs)
		return cerr
	}
	c.mu.Lock()
	s := c.state[b.Partition]
	if err != nil && s.err == nil {
		s.err = err
		c.res.Failed = append(c.res.Failed, PartitionError{b.Partition, err})
	}
	if s.err == nil {
		s.outputs = append(s.outputs, rr.Outputs...)
		s.inputs = append(s.inputs, b.Inputs...)
		s.rows += rr.RowsIn
		s.deleted += rr.RowsDeleted
		s.reused += rr.PagesReused
	} else {
		deleteOutputs(context.WithoutCancel(ctx), t.Store(), rr.Outputs)
	}
	s.pending--
	partDone := s.pending == 0
	if partDone && s.err != nil {
		// Outputs of the partition's earlier bins go too.
		deleteOutputs(context.WithoutCancel(ctx), t.Store(), s.outputs)
		s.outputs = nil
	}
	gi := c.groupOf[b.Partition]
	groupDone := false
	if partDone {
		c.groupLeft[gi]--
		groupDone = c.groupLeft[gi] == 0
	}
	c.done += b.Bytes
	d := c.done
	c.mu.Unlock()
	if c.o.Progress != nil {
		c.o.Progress(d, c.total)
	}
	if groupDone {
		c.commitGroup(gi)
	}
	return nil
}

// deletedRows returns the RewriteOptions.Deleted of a bin of inputs: when
// the table is a RowDeleter, their deleted rows as it says (deletedRowsOf);
// else given, the options' own.
func (c *compaction) deletedRows(ctx context.Context, inputs []catalog.DataFile, given func(catalog.DataFile) []int64) (func(catalog.DataFile) []int64, error) {
	if _, ok := c.t.(RowDeleter); !ok {
		return given, nil
	}
	return deletedRowsOf(ctx, c.t, inputs)
}

// deletedRowsOf returns the deleted rows of inputs as t says, asked once
// an input, when t is a RowDeleter; nil when none is deleted.
func deletedRowsOf(ctx context.Context, t Table, inputs []catalog.DataFile) (func(catalog.DataFile) []int64, error) {
	rd, ok := t.(RowDeleter)
	if !ok {
		return nil, nil
	}
	deleted := map[string][]int64{}
	for _, f := range inputs {
		pos, err := rd.DeletedRows(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("deleted rows of %s: %w", f.Path, err)
		}
		if len(pos) > 0 {
			deleted[f.Path] = pos
		}
	}
	if len(deleted) == 0 {
		return nil, nil
	}
	return func(f catalog.DataFile) []int64 { return deleted[f.Path] }, nil
}

// commitGroup commits the outputs of group gi's partitions that did not
// fail, in one manifest commit, and records the outcome in the result.
func (c *compaction) commitGroup(gi int) {
	ctx, t, o := c.ctx, c.t, c.o
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	var ch catalog.Change
	ch.Operation, ch.RunID = "compact", o.RunID
	var ok []string
	for _, p := range c.groups[gi] {
		s := c.state[p]
		if s.err != nil {
			continue
		}
		ch.Add = append(ch.Add, s.outputs...)
		ch.Remove = append(ch.Remove, s.inputs...)
		ok = append(ok, p)
	}
	if len(ok) == 0 {
		return
	}
	nm, err := t.Commit(ctx, ch)
	unknown := errors.Is(err, cloud.ErrOutcomeUnknown)
	if unknown {
		// The version may have landed, naming the outputs as live
		// and the inputs as replaced: deleting the outputs could
		// lose the rows. Keep them all; vacuum removes them later
		// if the version turns out not to be there.
		err = fmt.Errorf("commit outcome unknown, its %d output files are kept: %w", len(ch.Add), err)
	} else if err != nil {
		// Nothing of the group is visible: remove its outputs.
		deleteOutputs(context.WithoutCancel(ctx), t.Store(), ch.Add)
	}
	if err != nil {
		// A conflict (a concurrent compaction removed an input) is
		// retried next run; anything else fails the partitions.
		c.mu.Lock()
		for _, p := range ok {
			if errors.Is(err, catalog.ErrConflict) && !unknown {
				c.res.Dropped = append(c.res.Dropped, p)
			} else {
				c.res.Failed = append(c.res.Failed, PartitionError{p, err})
			}
		}
		c.mu.Unlock()
		o.Logger.Warn("commit failed", "partitions", len(ok), "err", err)
		return
	}
	c.mu.Lock()
	c.addCommitted(nm.Version, ok)
	c.mu.Unlock()
	o.Logger.Info("committed", "version", nm.Version, "partitions", len(ok), "files_in", len(ch.Remove), "files_out", len(ch.Add))
}

// addCommitted adds the committed partitions ok, of version v, to the
// result. The caller holds c.mu.
func (c *compaction) addCommitted(v int64, ok []string) {
	res := c.res
	res.Versions = append(res.Versions, v)
	res.Partitions += len(ok)
	for _, p := range ok {
		s := c.state[p]
		res.FilesIn += len(s.inputs)
		res.FilesOut += len(s.outputs)
		res.Rows += s.rows
		res.RowsDeleted += s.deleted
		res.PagesReused += s.reused
		for _, f := range s.inputs {
			res.BytesIn += f.Bytes
		}
		for _, f := range s.outputs {
			res.BytesOut += f.Bytes
		}
	}
}

// splitGroups cuts parts into at most n consecutive groups of near-equal
// size.
func splitGroups(parts []string, n int) [][]string {
	if n > len(parts) {
		n = len(parts)
	}
	out := make([][]string, 0, n)
	for k := range n {
		out = append(out, parts[k*len(parts)/n:(k+1)*len(parts)/n])
	}
	return out
}

// deleteOutputs removes written outputs that no commit references, and
// that none may: never those of a commit whose outcome is unknown.
// Failures are left for vacuum, which removes unreferenced files after
// the retention.
func deleteOutputs(ctx context.Context, st cloud.Store, files []catalog.DataFile) {
	for _, f := range files {
		_ = st.Delete(ctx, f.Path)
	}
}
