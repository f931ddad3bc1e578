package compact

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/sluice-data/sluice/catalog"
)

// prefetched is one input file, fetched ahead of its decoding.
type prefetched struct {
	f    catalog.DataFile
	r    io.ReaderAt
	data []byte // the whole file, when fetched into memory
	size int64
	held int64 // memory semaphore weight to release when done
	err  error
	done chan struct{}
}

// maxPrefetchFile is the largest file fetched whole into memory ahead of
// decoding; larger ones are read in place with ranged reads.
const maxPrefetchFile = 64 << 20

// run fetches the inputs ReadConcurrency at a time, in order, within the
// memory budget, and decodes them one after the other into the output.
func (rw *rewriter) run(inputs []catalog.DataFile, open Opener) error {
	ctx, cancel := context.WithCancel(rw.ctx)
	defer cancel()
	// The writer holds about a compressed row group; the rest of the budget
	// is for files fetched ahead.
	budget := max(rw.o.MemoryBudget-rw.o.RowGroupBytes/2, rw.o.MemoryBudget/4)
	sem := semaphore.NewWeighted(budget)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(rw.o.ReadConcurrency)
	queue := make(chan *prefetched, rw.o.ReadConcurrency)

	// The dispatcher takes memory in file order, so the consumer (which
	// releases it in the same order) can never wait on a later file.
	var dispatchErr error
	go func() {
		defer close(queue)
		for _, f := range inputs {
			p := &prefetched{f: f, done: make(chan struct{})}
			if f.Bytes <= maxPrefetchFile {
				p.held = min(max(f.Bytes, 1), budget)
				if err := sem.Acquire(gctx, p.held); err != nil {
					dispatchErr = err
					return
				}
			}
			select {
			case queue <- p:
			case <-gctx.Done():
				sem.Release(p.held)
				dispatchErr = gctx.Err()
				return
			}
			g.Go(func() error {
				defer close(p.done)
				r, size, err := open(gctx, f)
				if err != nil {
					p.err = fmt.Errorf("open %s: %w", f.Path, err)
					return nil
				}
				p.r, p.size = r, size
				if p.held > 0 && size <= maxPrefetchFile {
					b := make([]byte, size)
					if _, err := r.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF)) {
						p.err = fmt.Errorf("read %s: %w", f.Path, err)
						return nil
					}
					p.r, p.data = bytes.NewReader(b), b
				}
				return nil
			})
		}
	}()

	var err error
	for p := range queue {
		if err == nil {
			select {
			case <-p.done:
				err = p.err
				if err == nil {
					err = rw.copyFile(p)
				}
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			cancel()
		}
		// Once its fetch has ended (cut short by the cancel after a
		// failure), p is this goroutine's alone.
		<-p.done
		p.r, p.data = nil, nil
		sem.Release(p.held)
	}
	_ = g.Wait()
	if err == nil && dispatchErr != nil {
		err = dispatchErr
	}
	return err
}
