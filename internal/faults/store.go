package faults

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sluice-data/sluice/cloud"
)

// Store wraps st so that its calls meet the Injector's faults. What a
// fault lets through is st's own call, applied by st. The faults each
// method can meet:
//
//   - Get, GetRange: ServerError, Throttle, TimeoutBefore, IOError
//     (failing the call), SlowRead, TruncatedRead (on the body);
//   - Put: ServerError, Throttle, TimeoutBefore, NoSpace, IOError
//     (nothing written), TimeoutAfter (written, then the answer lost: a
//     conditional Put fails as a real store's does when reading back
//     cannot settle it, wrapping cloud.ErrOutcomeUnknown);
//   - List: ServerError, Throttle, TimeoutBefore, StaleList (a key this
//     wrapper wrote within Config.StaleFor is left out);
//   - Delete: ServerError, Throttle, TimeoutBefore, TimeoutAfter (deleted,
//     then the answer lost);
//   - Stat: ServerError, Throttle, TimeoutBefore, IOError.
//
// Store does not change st's URLs, so errors name the same objects.
func (in *Injector) Store(st cloud.Store) cloud.Store {
	return &store{in: in, next: st, written: map[string]time.Time{}}
}

type store struct {
	in   *Injector
	next cloud.Store

	mu      sync.Mutex
	written map[string]time.Time // key -> when this wrapper last wrote it
}

func (s *store) fail(k Kind, n uint64, op, key string) error {
	return &Error{Kind: k, URL: s.next.URL(key), Op: op, Cause: cause(k, n)}
}

func (s *store) Get(ctx context.Context, key string) (io.ReadCloser, cloud.ObjectInfo, error) {
	if k, n := s.in.pick("get", key, ServerError, Throttle, TimeoutBefore, IOError); k != "" {
		return nil, cloud.ObjectInfo{}, s.fail(k, n, "get", key)
	}
	rc, info, err := s.next.Get(ctx, key)
	if err != nil {
		return nil, info, err
	}
	return s.body(ctx, "get", key, rc), info, nil
}

func (s *store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if k, n := s.in.pick("get", key, ServerError, Throttle, TimeoutBefore, IOError); k != "" {
		return nil, s.fail(k, n, "get", key)
	}
	rc, err := s.next.GetRange(ctx, key, off, length)
	if err != nil {
		return nil, err
	}
	return s.body(ctx, "get", key, rc), nil
}

// body applies the body faults (SlowRead, TruncatedRead) to rc.
func (s *store) body(ctx context.Context, op, key string, rc io.ReadCloser) io.ReadCloser {
	switch k, _ := s.in.pick(op+"-body", key, SlowRead, TruncatedRead); k {
	case SlowRead:
		return &slowBody{ReadCloser: rc, ctx: ctx, delay: s.in.cfg.SlowDelay}
	case TruncatedRead:
		return &truncBody{ReadCloser: rc, url: s.next.URL(key)}
	}
	return rc
}

func (s *store) Put(ctx context.Context, key string, r io.Reader, size int64, opts cloud.PutOptions) (cloud.ObjectInfo, error) {
	k, n := s.in.pick("put", key, ServerError, Throttle, TimeoutBefore, NoSpace, IOError, TimeoutAfter)
	switch k {
	case "":
	case TimeoutAfter:
		if _, err := s.next.Put(ctx, key, r, size, opts); err != nil {
			return cloud.ObjectInfo{}, err
		}
		s.wrote(key)
		err := s.fail(k, n, "put", key)
		if opts.IfAbsent || opts.IfMatch != "" {
			// What a real store says when reading back could not settle
			// a conditional write.
			return cloud.ObjectInfo{}, &outcomeUnknown{err}
		}
		return cloud.ObjectInfo{}, err
	default:
		return cloud.ObjectInfo{}, s.fail(k, n, "put", key)
	}
	info, err := s.next.Put(ctx, key, r, size, opts)
	if err == nil {
		s.wrote(key)
	}
	return info, err
}

func (s *store) wrote(key string) {
	s.mu.Lock()
	s.written[key] = time.Now()
	s.mu.Unlock()
}

func (s *store) List(ctx context.Context, prefix string, fn func(cloud.ObjectInfo) error) error {
	if k, n := s.in.pick("list", prefix, ServerError, Throttle, TimeoutBefore); k != "" {
		return s.fail(k, n, "list", prefix)
	}
	return s.next.List(ctx, prefix, func(o cloud.ObjectInfo) error {
		s.mu.Lock()
		at, recent := s.written[o.Key]
		s.mu.Unlock()
		if recent && time.Since(at) < s.in.cfg.StaleFor {
			if k, _ := s.in.pick("list-entry", o.Key, StaleList); k != "" {
				return nil
			}
		}
		return fn(o)
	})
}

func (s *store) Delete(ctx context.Context, key string) error {
	k, n := s.in.pick("delete", key, ServerError, Throttle, TimeoutBefore, TimeoutAfter)
	switch k {
	case "":
		return s.next.Delete(ctx, key)
	case TimeoutAfter:
		if err := s.next.Delete(ctx, key); err != nil {
			return err
		}
	}
	return s.fail(k, n, "delete", key)
}

func (s *store) Stat(ctx context.Context, key string) (cloud.ObjectInfo, error) {
	if k, n := s.in.pick("stat", key, ServerError, Throttle, TimeoutBefore, IOError); k != "" {
		return cloud.ObjectInfo{}, s.fail(k, n, "stat", key)
	}
	return s.next.Stat(ctx, key)
}

func (s *store) URL(key string) string { return s.next.URL(key) }

func (s *store) Close() error { return s.next.Close() }

// outcomeUnknown wraps a TimeoutAfter fault of a conditional Put so that
// it matches cloud.ErrOutcomeUnknown, as the stores' own errors do.
type outcomeUnknown struct{ err error }

func (e *outcomeUnknown) Error() string {
	return e.err.Error() + ": " + cloud.ErrOutcomeUnknown.Error()
}

func (e *outcomeUnknown) Unwrap() []error { return []error{e.err, cloud.ErrOutcomeUnknown} }

// slowBody delays its first Read by delay (or until ctx ends).
type slowBody struct {
	io.ReadCloser
	ctx   context.Context
	delay time.Duration
	done  bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.done {
		b.done = true
		if err := sleep(b.ctx, b.delay); err != nil {
			return 0, err
		}
	}
	return b.ReadCloser.Read(p)
}

// truncBody yields the first half of its first Read (at least one byte
// when there is any), then io.ErrUnexpectedEOF.
type truncBody struct {
	io.ReadCloser
	url string
	cut bool
}

func (b *truncBody) Read(p []byte) (int, error) {
	if b.cut {
		return 0, &Error{Kind: TruncatedRead, URL: b.url, Op: "get", Cause: io.ErrUnexpectedEOF}
	}
	n, err := b.ReadCloser.Read(p)
	b.cut = true
	if n > 1 {
		n /= 2
	}
	if errors.Is(err, io.EOF) && n == 0 {
		return 0, &Error{Kind: TruncatedRead, URL: b.url, Op: "get", Cause: io.ErrUnexpectedEOF}
	}
	return n, nil
}
