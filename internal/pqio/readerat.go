package pqio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sluice-data/sluice/cloud"
)

// footerReadAhead is how many bytes at the end of an object the first read
// of the footer region fetches in one ranged GET. A Parquet reader reads the
// 8-byte trailer (footer length + magic) first and the footer next; fetching
// a generous tail at once serves both, and the whole file when it is small,
// so inspecting a file on S3 or Azure costs one request in the common case
// (a second one only when the footer is larger than this). 128 KiB holds the
// footer of a wide table with dozens of row groups.
const footerReadAhead = 128 << 10

// storeReaderAt is an io.ReaderAt over one object of a cloud.Store, made of
// ranged GETs. Reads inside the last footerReadAhead bytes are served from
// one cached fetch of that tail; every other read is one GetRange of exactly
// the bytes asked for, so callers should read in large pieces (parquet-go's
// ReadBufferSize) when they scan data pages.
//
// io.ReaderAt has no context, so the reader carries the one it was made
// with: it bounds every request. It is safe for concurrent use.
type storeReaderAt struct {
	ctx  context.Context
	st   cloud.Store
	key  string
	size int64

	mu       sync.Mutex
	tail     []byte // the object's last bytes, fetched on first use
	tailOff  int64  // offset of tail[0]
	storeErr error  // the first error the store returned, see ioErr
	short    bool   // the object turned out shorter than size
}

func newStoreReaderAt(ctx context.Context, st cloud.Store, key string, size int64) *storeReaderAt {
	tailOff := max(size-footerReadAhead, 0)
	return &storeReaderAt{ctx: ctx, st: st, key: key, size: size, tailOff: tailOff}
}

// ReadAt implements io.ReaderAt: it fills p from offset off, returning
// io.EOF when p reaches past the object's size.
func (r *storeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s at %d: negative offset", r.key, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	var eof error
	if rest := r.size - off; int64(len(p)) > rest {
		p, eof = p[:rest], io.EOF
	}
	if len(p) == 0 {
		return 0, eof
	}
	if off >= r.tailOff {
		tail, err := r.loadTail()
		if err != nil {
			return 0, err
		}
		i := off - r.tailOff
		if i >= int64(len(tail)) {
			// The object is shorter than the size we were given.
			return 0, io.ErrUnexpectedEOF
		}
		n := copy(p, tail[i:])
		if n < len(p) {
			// The object is shorter than the size we were given.
			return n, io.ErrUnexpectedEOF
		}
		return n, eof
	}
	n, err := r.fetch(p, off)
	if err != nil {
		return n, err
	}
	return n, eof
}

// loadTail fetches the tail once; concurrent callers wait for it.
func (r *storeReaderAt) loadTail() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tail != nil {
		return r.tail, nil
	}
	buf := make([]byte, r.size-r.tailOff)
	n, err := r.fetchLocked(buf, r.tailOff)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	r.tail = buf[:n]
	return r.tail, nil
}

func (r *storeReaderAt) fetch(p []byte, off int64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetchLocked(p, off)
}

// fetchLocked reads len(p) bytes at off with one GetRange. A short object is
// io.ErrUnexpectedEOF (the size we were given is wrong or the file was
// truncated); any other failure is the store's and is remembered.
//
// The lock serialises requests of one reader: parquet-go reads one file
// from one goroutine, and this keeps storeErr simple. Parallel scans use
// one reader per file.
func (r *storeReaderAt) fetchLocked(p []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, r.remember(err)
	}
	rc, err := r.st.GetRange(r.ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, r.remember(fmt.Errorf("read %s bytes %d-%d: %w", r.key, off, off+int64(len(p))-1, err))
	}
	n, err := io.ReadFull(rc, p)
	cerr := rc.Close()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		r.short = true
		return n, io.ErrUnexpectedEOF
	case err != nil:
		return n, r.remember(fmt.Errorf("read %s bytes %d-%d: %w", r.key, off, off+int64(len(p))-1, err))
	case cerr != nil:
		return n, r.remember(fmt.Errorf("read %s: close: %w", r.key, cerr))
	}
	return n, nil
}

func (r *storeReaderAt) remember(err error) error {
	if r.storeErr == nil {
		r.storeErr = err
	}
	return err
}

// truncated tells whether the object turned out shorter than the size the
// reader was made with.
func (r *storeReaderAt) truncated() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.short
}

// ioErr returns the first error the store (or the context) gave, if any: it
// tells a failed read from a corrupt file, whatever error parquet-go wrapped
// it in.
func (r *storeReaderAt) ioErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.storeErr
}

// NewReaderAt returns an io.ReaderAt over one object of st, made of ranged
// GETs bounded by ctx, with the object's tail (where a Parquet footer is)
// fetched once. Read data pages in large pieces through it.
func NewReaderAt(ctx context.Context, st cloud.Store, key string, size int64) io.ReaderAt {
	return newStoreReaderAt(ctx, st, key, size)
}
