package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The test servers answer over loopback in well under a millisecond; a
// cloud object store answers in tens of milliseconds and moves a few tens
// of MiB/s per connection. Latency puts that back into a test's requests,
// so that a benchmark of work spread over many workers shows what waiting
// on the store costs. It is a simulation: a fixed delay and a fixed cap,
// not a model of a store's tail latency, throttling or errors.

// Defaults of LatencyOptions, in the range S3 measures within a region
// (first-byte latency of small GETs; per-connection throughput).
const (
	DefaultLatencyDelay          = 30 * time.Millisecond
	DefaultLatencyBytesPerSecond = 50 << 20
)

// LatencyOptions say how slow a Latency transport makes each request.
type LatencyOptions struct {
	// Delay is added to every request before it is sent on: the server
	// sees it, and its first response byte comes, at least Delay after
	// the client sent it. Zero: none.
	Delay time.Duration
	// ReadBytesPerSecond caps how fast each response body is read, in
	// bytes per second, from its first read on. Zero: no cap.
	ReadBytesPerSecond int64
	// WriteBytesPerSecond caps how fast each request body is sent, in
	// bytes per second. Zero: no cap.
	WriteBytesPerSecond int64
}

// DefaultLatencyOptions returns 30 ms per request and 50 MiB/s each way
// per request.
func DefaultLatencyOptions() LatencyOptions {
	return LatencyOptions{Delay: DefaultLatencyDelay, ReadBytesPerSecond: DefaultLatencyBytesPerSecond,
		WriteBytesPerSecond: DefaultLatencyBytesPerSecond}
}

// Validate names every bad field.
func (o LatencyOptions) Validate() error {
	var bad []string
	if o.Delay < 0 {
		bad = append(bad, fmt.Sprintf("Delay %v: want >= 0 (0 is none)", o.Delay))
	}
	if o.ReadBytesPerSecond < 0 {
		bad = append(bad, fmt.Sprintf("ReadBytesPerSecond %d: want >= 0 (0 is no cap)", o.ReadBytesPerSecond))
	}
	if o.WriteBytesPerSecond < 0 {
		bad = append(bad, fmt.Sprintf("WriteBytesPerSecond %d: want >= 0 (0 is no cap)", o.WriteBytesPerSecond))
	}
	if len(bad) > 0 {
		return errors.New("latency options: " + strings.Join(bad, "; "))
	}
	return nil
}

// RequestCounts are the requests a Latency transport carried, by the
// store operation they are, and the body bytes each way.
type RequestCounts struct {
	// Get counts GETs of an object (whole or ranged); List, GETs that
	// list (S3's list-type, Azure's comp=list).
	Get, List, Put, Head, Delete, Post, Other int64
	// BytesRead are response body bytes read; BytesWritten request body
	// bytes sent.
	BytesRead, BytesWritten int64
}

// Total is the number of requests of every kind.
func (c RequestCounts) Total() int64 {
	return c.Get + c.List + c.Put + c.Head + c.Delete + c.Post + c.Other
}

// Add returns the sum of c and d, field by field.
func (c RequestCounts) Add(d RequestCounts) RequestCounts {
	return RequestCounts{Get: c.Get + d.Get, List: c.List + d.List, Put: c.Put + d.Put, Head: c.Head + d.Head,
		Delete: c.Delete + d.Delete, Post: c.Post + d.Post, Other: c.Other + d.Other,
		BytesRead: c.BytesRead + d.BytesRead, BytesWritten: c.BytesWritten + d.BytesWritten}
}

// String is the counts as "GET 12 LIST 1 PUT 3 ...", kinds with none left
// out.
func (c RequestCounts) String() string {
	var parts []string
	for _, k := range []struct {
		name string
		n    int64
	}{{"GET", c.Get}, {"LIST", c.List}, {"PUT", c.Put}, {"HEAD", c.Head}, {"DELETE", c.Delete},
		{"POST", c.Post}, {"OTHER", c.Other}} {
		if k.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k.name, k.n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Latency is an http.RoundTripper for a store's HTTP client that slows
// every request down as LatencyOptions say, passes it on to the real
// server, and counts it. Safe for concurrent use.
type Latency struct {
	o    LatencyOptions
	next http.RoundTripper
	// counters, indexed by kind
	get, list, put, head, del, post, other atomic.Int64
	read, written                          atomic.Int64
}

// NewLatency returns a Latency transport over next. Nil next: a transport
// of its own, http.DefaultTransport's settings with 100 idle connections
// per host kept (the SDKs' own), so that each Latency has its own pool as
// each worker process would.
func NewLatency(o LatencyOptions, next http.RoundTripper) (*Latency, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if next == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = 100
		tr.MaxIdleConnsPerHost = 100
		next = tr
	}
	return &Latency{o: o, next: next}, nil
}

// Client returns an HTTP client whose transport is l: pass it as
// cloud.Options.HTTPClient.
func (l *Latency) Client() *http.Client { return &http.Client{Transport: l} }

// Counts returns the requests carried so far.
func (l *Latency) Counts() RequestCounts {
	return RequestCounts{Get: l.get.Load(), List: l.list.Load(), Put: l.put.Load(), Head: l.head.Load(),
		Delete: l.del.Load(), Post: l.post.Load(), Other: l.other.Load(),
		BytesRead: l.read.Load(), BytesWritten: l.written.Load()}
}

// CloseIdleConnections closes the idle connections of the transport
// beneath, when it can.
func (l *Latency) CloseIdleConnections() {
	if c, ok := l.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// counter returns the counter of req's kind.
func (l *Latency) counter(req *http.Request) *atomic.Int64 {
	switch req.Method {
	case http.MethodGet:
		q := req.URL.Query()
		if q.Has("list-type") || q.Get("comp") == "list" {
			return &l.list
		}
		return &l.get
	case http.MethodPut:
		return &l.put
	case http.MethodHead:
		return &l.head
	case http.MethodDelete:
		return &l.del
	case http.MethodPost:
		return &l.post
	}
	return &l.other
}

// RoundTrip implements http.RoundTripper: it waits Delay (or until the
// request's context ends), then sends the request with its body capped,
// and returns the response with its body capped.
func (l *Latency) RoundTrip(req *http.Request) (*http.Response, error) {
	l.counter(req).Add(1)
	ctx := req.Context()
	if err := sleepCtx(ctx, l.o.Delay); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	out := req
	if req.Body != nil && req.Body != http.NoBody {
		out = req.Clone(ctx)
		out.Body = l.capped(ctx, req.Body, l.o.WriteBytesPerSecond, &l.written)
		if req.GetBody != nil {
			out.GetBody = func() (io.ReadCloser, error) {
				b, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				return l.capped(ctx, b, l.o.WriteBytesPerSecond, &l.written), nil
			}
		}
	}
	resp, err := l.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = l.capped(ctx, resp.Body, l.o.ReadBytesPerSecond, &l.read)
	}
	return resp, nil
}

func (l *Latency) capped(ctx context.Context, rc io.ReadCloser, bps int64, count *atomic.Int64) io.ReadCloser {
	return &cappedBody{ctx: ctx, rc: rc, bps: bps, count: count}
}

// cappedBody reads at most bps bytes per second on average since its first
// read: after each read it sleeps until the bytes read so far are due.
type cappedBody struct {
	ctx   context.Context
	rc    io.ReadCloser
	bps   int64
	count *atomic.Int64
	start time.Time
	n     int64
}

// capChunk bounds one read, so that a large buffer does not arrive in one
// burst followed by one long sleep: about 1/64 s of data at the cap, at
// least 4 KiB.
func (b *cappedBody) capChunk() int { return int(max(b.bps/64, 4<<10)) }

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.bps <= 0 {
		n, err := b.rc.Read(p)
		b.count.Add(int64(n))
		return n, err
	}
	if b.start.IsZero() {
		b.start = time.Now()
	}
	if len(p) > b.capChunk() {
		p = p[:b.capChunk()]
	}
	n, err := b.rc.Read(p)
	b.count.Add(int64(n))
	b.n += int64(n)
	due := b.start.Add(time.Duration(float64(b.n) / float64(b.bps) * float64(time.Second)))
	if serr := sleepCtx(b.ctx, time.Until(due)); serr != nil && err == nil {
		err = serr
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// sleepCtx waits d, or until ctx ends (its error is returned then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
