package compact

import (
	"fmt"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/internal/pqio"
)

// RewriteOptions tune one Rewrite. The zero value of a field means its
// default (see DefaultRewriteOptions).
type RewriteOptions struct {
	// TargetFileSize is the size of an output file, in compressed bytes,
	// that the rewrite aims at: a file is closed at the first input row
	// group boundary where it would reach it. Zero: 256 MiB.
	TargetFileSize int64
	// RowGroupBytes is the uncompressed size of an output row group, in
	// bytes of the values' plain representation. Zero: 128 MiB.
	RowGroupBytes int64
	// MemoryBudget bounds the bytes this rewrite buffers: input files
	// fetched ahead and the output row group being built. Zero: 256 MiB.
	MemoryBudget int64
	// ReadConcurrency is how many input files are fetched at once; range
	// reads of small files on S3 or Azure are latency-bound. Zero: 8.
	ReadConcurrency int
	// Outputs, when set, is the planner's count of output files: the
	// inputs are cut into that many files of about equal input bytes, at
	// row group boundaries, and TargetFileSize is not used. That keeps the
	// planner's promise (no small leftover file) whatever the output's
	// compression ratio. Zero: cut by TargetFileSize.
	Outputs int
	// Codecs, when set, are shared by every rewrite of one run, so that
	// each column's zstd level is learnt once (pqio.Codecs). Nil: each
	// rewrite learns its own.
	Codecs *pqio.Codecs
	// NewPath names an output file of a partition (a Hive folder).
	// Nil: catalog.NewDataFilePath.
	NewPath func(partition string) string
	// Deleted, when set, returns the positions of input f's deleted rows:
	// 0-based, in file order across its row groups, sorted and distinct
	// (a list that is not is sorted and a repeated position counted once);
	// nil when none is. The rewrite leaves those rows out
	// (RewriteResult.RowsDeleted) and reads such an input row by row. A
	// position that is not a row of f fails the rewrite with
	// ErrDeletePosition. Run sets it from a Table that is a RowDeleter.
	// Nil: no row is deleted.
	Deleted func(f catalog.DataFile) []int64
	// Order, when it names columns, orders the rows of the rewrite (see
	// Ordering): sorted within each output and across the outputs, which
	// then cover increasing, disjoint ranges of the key. Zero: the rows
	// keep their input order and pages are copied or reused.
	Order Ordering
}

// newPath names an output file of partition.
func (o RewriteOptions) newPath(partition string) string {
	if o.NewPath != nil {
		return o.NewPath(partition)
	}
	return catalog.NewDataFilePath(partition)
}

// Defaults of RewriteOptions.
const (
	DefaultTargetFileSize  = catalog.DefaultTargetFileSize
	DefaultRowGroupBytes   = 128 << 20
	DefaultMemoryBudget    = 256 << 20
	DefaultReadConcurrency = 8
	// DefaultSortedRowGroupBytes is RowGroupBytes when the rewrite orders
	// its rows: small row groups, each a narrow range of the key, let a
	// reader's min/max statistics skip most of a file (a point query on
	// the key reads one or two of a 256 MiB file's hundred or more).
	DefaultSortedRowGroupBytes = 2 << 20
)

// DefaultRewriteOptions returns the options with every default filled in.
func DefaultRewriteOptions() RewriteOptions {
	return RewriteOptions{
		TargetFileSize:  DefaultTargetFileSize,
		RowGroupBytes:   DefaultRowGroupBytes,
		MemoryBudget:    DefaultMemoryBudget,
		ReadConcurrency: DefaultReadConcurrency,
	}
}

// Validate refuses negative sizes and a budget too small for one output
// row group's worth of buffering. Zero fields are valid (defaults).
func (o RewriteOptions) Validate() error {
	switch {
	case o.TargetFileSize < 0:
		return fmt.Errorf("rewrite options: target file size %d is negative", o.TargetFileSize)
	case o.RowGroupBytes < 0:
		return fmt.Errorf("rewrite options: row group bytes %d is negative", o.RowGroupBytes)
	case o.MemoryBudget < 0:
		return fmt.Errorf("rewrite options: memory budget %d is negative", o.MemoryBudget)
	case o.ReadConcurrency < 0:
		return fmt.Errorf("rewrite options: read concurrency %d is negative", o.ReadConcurrency)
	case o.Outputs < 0:
		return fmt.Errorf("rewrite options: outputs %d is negative", o.Outputs)
	}
	if err := o.Order.validate(); err != nil {
		return fmt.Errorf("rewrite options: %w", err)
	}
	d := o.withDefaults()
	if d.MemoryBudget < 4<<20 {
		return fmt.Errorf("rewrite options: memory budget %d bytes is below the 4 MiB minimum", d.MemoryBudget)
	}
	return nil
}

func (o RewriteOptions) withDefaults() RewriteOptions {
	d := DefaultRewriteOptions()
	if o.TargetFileSize == 0 {
		o.TargetFileSize = d.TargetFileSize
	}
	if o.RowGroupBytes == 0 {
		o.RowGroupBytes = d.RowGroupBytes
		if o.Order.On() {
			o.RowGroupBytes = DefaultSortedRowGroupBytes
		}
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = d.MemoryBudget
	}
	if o.ReadConcurrency == 0 {
		o.ReadConcurrency = d.ReadConcurrency
	}
	return o
}
