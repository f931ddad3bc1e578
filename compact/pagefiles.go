package compact

import (
	"io"
	"os"
	"sync"
)

// pageFiles is the parquet.BufferPool that holds an output row group's
// compressed pages until the row group is flushed: parquet-go writes a
// column chunk's pages together, so a writer keeps the whole row group's
// until its last row. On the Go heap those pages, doubled by the
// collector's headroom, made a rewrite's peak memory grow with its
// partitions' size. In temporary files (in the page cache, emptied once
// the row group is written, mostly before the kernel writes them out) the
// peak stays near flat.
//
// parquet-go takes a buffer for each column chunk of each row group.
// parquet-go's own file pool made a named file for each and removed it
// after, so a process killed mid row group left its page files behind in
// the temporary folder, and each buffer cost a create, a close and a
// remove. pageFiles makes a file once, removes its name at once (nothing
// is left behind, whatever ends the process) and hands it out again,
// emptied, once parquet-go gives it back. Where an open file's name
// cannot be removed (Windows), the name goes when the pool closes.
type pageFiles struct {
	mu     sync.Mutex
	free   []*os.File
	named  map[*os.File]string // files whose name is still there
	closed bool
}

// maxFreePageFiles bounds the files a pool keeps open for reuse: a
// writer takes one a column of its row group.
const maxFreePageFiles = 256

// newPageFiles returns an empty pool of page files in the system's
// temporary folder.
func newPageFiles() *pageFiles { return &pageFiles{named: map[*os.File]string{}} }

// GetBuffer hands out an empty page file.
func (p *pageFiles) GetBuffer() io.ReadWriteSeeker {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		f := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return f
	}
	p.mu.Unlock()
	f, err := os.CreateTemp("", "sluice-pages-*")
	if err != nil {
		return errorBuffer{err: err}
	}
	if os.Remove(f.Name()) != nil {
		p.mu.Lock()
		p.named[f] = f.Name()
		p.mu.Unlock()
	}
	return f
}

// PutBuffer empties a page file and keeps it for the next GetBuffer.
func (p *pageFiles) PutBuffer(b io.ReadWriteSeeker) {
	f, ok := b.(*os.File)
	if !ok {
		return
	}
	err := f.Truncate(0)
	p.mu.Lock()
	if err == nil && !p.closed && len(p.free) < maxFreePageFiles {
		p.free = append(p.free, f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.drop(f)
}

// drop closes f and removes its name if it still has one.
func (p *pageFiles) drop(f *os.File) {
	_ = f.Close()
	p.mu.Lock()
	name, ok := p.named[f]
	delete(p.named, f)
	p.mu.Unlock()
	if ok {
		_ = os.Remove(name)
	}
}

// close closes the files kept for reuse; a file given back later is
// closed then.
func (p *pageFiles) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, f := range free {
		p.drop(f)
	}
}

// errorBuffer is the buffer handed out when no page file could be made:
// every call fails with why.
type errorBuffer struct{ err error }

func (b errorBuffer) Read([]byte) (int, error)       { return 0, b.err }
func (b errorBuffer) Write([]byte) (int, error)      { return 0, b.err }
func (b errorBuffer) Seek(int64, int) (int64, error) { return 0, b.err }
