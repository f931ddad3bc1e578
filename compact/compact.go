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
// files, where a data file lives, and the commit. *catalog.Table
// implements it.
type Table interface {
	Latest(ctx context.Context) (*catalog.Manifest, error)
	Files(ctx context.Context, m *catalog.Manifest) ([]catalog.DataFile, error)
	DataFileStore(ctx context.Context, f catalog.DataFile) (cloud.Store, string, error)
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
	Rows              int64
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
// applies (catalog.Manifest.TargetFileSize). An error in one partition
// does not stop the others; see Result.Failed. The returned error is for the run as a whole
// (the table could not be read, the context was cancelled).
func Run(ctx context.Context, t Table, o Options) (Result, error) {
	start := time.Now()
	var res Result
	if err := o.Validate(); err != nil {
		return res, err
	}
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

	m, err := t.Latest(ctx)
	if err != nil {
		return res, err
	}
	// One target for planning and rewriting: whichever o sets, else the
	// table's own.
	target := cmp.Or(o.Plan.TargetFileSize, o.Rewrite.TargetFileSize, m.TargetFileSize())
	o.Plan.TargetFileSize = cmp.Or(o.Plan.TargetFileSize, target)
	o.Rewrite.TargetFileSize = cmp.Or(o.Rewrite.TargetFileSize, target)
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
	o.Logger.Info("planned", "version", m.Version, "bins", len(bins), "took", time.Since(start))
	if o.DryRun || len(bins) == 0 {
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}

	// Partitions in plan order, grouped into at most MaxCommits commits.
	var parts []string
	binsOf := map[string][]Bin{}
	var total int64
	for _, b := range bins {
		if _, ok := binsOf[b.Partition]; !ok {
			parts = append(parts, b.Partition)
		}
		binsOf[b.Partition] = append(binsOf[b.Partition], b)
		total += b.Bytes
	}
	groups := splitGroups(parts, o.MaxCommits)
	groupOf := map[string]int{}
	for gi, g := range groups {
		for _, p := range g {
			groupOf[p] = gi
		}
	}

	open := func(ctx context.Context, f catalog.DataFile) (io.ReaderAt, int64, error) {
		st, key, err := t.DataFileStore(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		return pqio.NewReaderAt(ctx, st, key, f.Bytes), f.Bytes, nil
	}

	type partState struct {
		pending int
		outputs []catalog.DataFile
		inputs  []catalog.DataFile
		rows    int64
		reused  int
		err     error
	}
	var (
		mu        sync.Mutex
		state     = map[string]*partState{}
		groupLeft = make([]int, len(groups))
		done      int64
		commitMu  sync.Mutex // commits go one at a time, in any order
	)
	for _, p := range parts {
		state[p] = &partState{pending: len(binsOf[p])}
		groupLeft[groupOf[p]]++
	}

	commitGroup := func(gi int) {
		commitMu.Lock()
		defer commitMu.Unlock()
		var ch catalog.Change
		ch.Operation, ch.RunID = "compact", o.RunID
		var ok []string
		for _, p := range groups[gi] {
			s := state[p]
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
			mu.Lock()
			for _, p := range ok {
				if errors.Is(err, catalog.ErrConflict) && !unknown {
					res.Dropped = append(res.Dropped, p)
				} else {
					res.Failed = append(res.Failed, PartitionError{p, err})
				}
			}
			mu.Unlock()
			o.Logger.Warn("commit failed", "partitions", len(ok), "err", err)
			return
		}
		mu.Lock()
		res.Versions = append(res.Versions, nm.Version)
		res.Partitions += len(ok)
		for _, p := range ok {
			s := state[p]
			res.FilesIn += len(s.inputs)
			res.FilesOut += len(s.outputs)
			res.Rows += s.rows
			res.PagesReused += s.reused
			for _, f := range s.inputs {
				res.BytesIn += f.Bytes
			}
			for _, f := range s.outputs {
				res.BytesOut += f.Bytes
			}
		}
		mu.Unlock()
		o.Logger.Info("committed", "version", nm.Version, "partitions", len(ok), "files_in", len(ch.Remove), "files_out", len(ch.Add))
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	// The largest bins first: the workers then end on small ones and
	// finish nearly together, where in plan order one worker could be
	// left alone with a large last bin while the others idle.
	sched := slices.Clone(bins)
	slices.SortStableFunc(sched, func(a, b Bin) int { return cmp.Compare(b.Bytes, a.Bytes) })
	for _, b := range sched {
		g.Go(func() error {
			mu.Lock()
			failed := state[b.Partition].err != nil
			mu.Unlock()
			var rr RewriteResult
			var err error
			if !failed {
				ro := o.Rewrite
				ro.Outputs = b.Outputs
				rr, err = Rewrite(gctx, open, t.Store(), m.Schema, b.Partition, b.Inputs, ro)
			}
			if cerr := gctx.Err(); cerr != nil {
				// Cancelled, not failed: the outputs of this bin are
				// gone already (Rewrite cleans up on error).
				deleteOutputs(context.WithoutCancel(ctx), t.Store(), rr.Outputs)
				return cerr
			}
			mu.Lock()
			s := state[b.Partition]
			if err != nil && s.err == nil {
				s.err = err
				res.Failed = append(res.Failed, PartitionError{b.Partition, err})
			}
			if s.err == nil {
				s.outputs = append(s.outputs, rr.Outputs...)
				s.inputs = append(s.inputs, b.Inputs...)
				s.rows += rr.RowsIn
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
			gi := groupOf[b.Partition]
			groupDone := false
			if partDone {
				groupLeft[gi]--
				groupDone = groupLeft[gi] == 0
			}
			done += b.Bytes
			d := done
			mu.Unlock()
			if o.Progress != nil {
				o.Progress(d, total)
			}
			if groupDone {
				commitGroup(gi)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		// Cancelled: delete what was written and not committed.
		mu.Lock()
		for _, p := range parts {
			if s := state[p]; s.pending > 0 {
				deleteOutputs(context.WithoutCancel(ctx), t.Store(), s.outputs)
			}
		}
		mu.Unlock()
		res.Seconds = time.Since(start).Seconds()
		return res, err
	}
	sort.Slice(res.Failed, func(i, j int) bool { return res.Failed[i].Partition < res.Failed[j].Partition })
	sort.Strings(res.Dropped)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
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
