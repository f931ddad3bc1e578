package rollup

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/catalog"
)

// rowGroup is one row group's decoded columns, handed from a reading
// goroutine to the aggregating one.
type rowGroup struct {
	cols []*colData
	n    int
}

// fileScan is one file being read: its row groups in order, then close;
// err is set before close when the read failed.
type fileScan struct {
	ch  chan rowGroup
	err error
}

// readWorkers is how many files are read at once: decoding (decompressing
// pages, typed values, days) is most of a rollup's CPU and parallel;
// aggregating into the grid is one goroutine's.
func readWorkers(files int) int { return max(1, min(runtime.GOMAXPROCS(0), files)) }

// colSets recycles the decoded columns of consumed row groups, so that
// reading a file does not allocate its columns' slices row group by row
// group: a reading goroutine takes a set to decode the next row group into
// once it hands the last one over, and the consumer gives each set back
// when it is done with it.
type colSets struct{ free chan []*colData }

func newColSets(n int) *colSets { return &colSets{free: make(chan []*colData, n)} }

// get returns a recycled set of width columns, or a new one.
func (p *colSets) get(width int) []*colData {
	select {
	case s := <-p.free:
		return s
	default:
	}
	s := make([]*colData, width)
	for i := range s {
		s[i] = &colData{}
	}
	return s
}

// put gives a consumed set back, or drops it when enough are kept.
func (p *colSets) put(s []*colData) {
	select {
	case p.free <- s:
	default:
	}
}

// scanFilesInOrder reads files[i] with up to workers goroutines and calls
// consume with each row group's columns (cols[i] is want[i]), in the
// files' order and their row groups' order as one goroutine reading them
// one after the other would, from the calling goroutine. prep, when not
// nil, runs first on each row group in the reading goroutine. consume
// must not keep cols after it returns: their slices are decoded into
// again. At most workers files are open, each with at most one row group
// waiting besides the one being decoded; everything started is stopped
// and waited for before it returns.
func scanFilesInOrder(ctx context.Context, files []dataFile, want []catalog.Column, workers int,
	prep func(cols []*colData, n int), consume func(file int, cols []*colData, n int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var g errgroup.Group
	order := make(chan *fileScan, workers)
	sem := make(chan struct{}, workers)
	sets := newColSets(3*workers + 1)
	g.Go(func() error {
		defer close(order)
		for _, f := range files {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			fs := &fileScan{ch: make(chan rowGroup, 1)}
			g.Go(func() error {
				defer func() { <-sem }()
				defer close(fs.ch)
				cols := sets.get(len(want))
				defer func() { sets.put(cols) }()
				fs.err = scanData(ctx, f, want, cols, nil, func(cols []*colData, n int) error {
					if prep != nil {
						prep(cols, n)
					}
					rg := rowGroup{cols: sets.get(len(cols)), n: n}
					for i := range cols {
						// rg owns the decoded columns now; the
						// file decodes its next row group into
						// a recycled set.
						rg.cols[i], cols[i] = cols[i], rg.cols[i]
					}
					select {
					case fs.ch <- rg:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				return nil
			})
			select {
			case order <- fs:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	err := func() error {
		i := 0
		for fs := range order {
			for rg := range fs.ch {
				if err := consume(i, rg.cols, rg.n); err != nil {
					return err
				}
				sets.put(rg.cols)
			}
			if fs.err != nil {
				return fs.err
			}
			i++
		}
		return ctx.Err()
	}()
	cancel() // every send above gives up on it
	g.Wait()
	return err
}
