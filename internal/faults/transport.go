package faults

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Transport wraps next (nil: http.DefaultTransport) so that the requests
// of an S3 or Azure SDK client meet the Injector's faults, below the SDK:
// the SDK's own retries, and its handling of what they leave ambiguous,
// are what is exercised. Per request:
//
//   - every request: ServerError (a 500 answer, not sent on), Throttle (503
//     SlowDown or 429, not sent on), TimeoutBefore (a timeout, not sent);
//   - a write (PUT, POST, DELETE): TimeoutAfter (sent and applied, then a
//     timeout instead of the answer);
//   - a read (GET): SlowRead, TruncatedRead (of the body).
//
// The answers carry both S3's XML error code and Azure's x-ms-error-code,
// so either SDK reads them as the store's own. Listings pass through
// untouched by StaleList (see Store).
func (in *Injector) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{in: in, next: next}
}

type transport struct {
	in   *Injector
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.URL.Path
	write := req.Method == http.MethodPut || req.Method == http.MethodPost || req.Method == http.MethodDelete
	kinds := []Kind{ServerError, Throttle, TimeoutBefore}
	if write {
		kinds = append(kinds, TimeoutAfter)
	} else if req.Method == http.MethodGet {
		kinds = append(kinds, SlowRead, TruncatedRead)
	}
	k, n := t.in.pick("http-"+req.Method, key, kinds...)
	switch k {
	case ServerError, Throttle:
		drain(req)
		return errorResponse(req, cause(k, n).(*StatusError)), nil
	case TimeoutBefore:
		drain(req)
		return nil, &Error{Kind: k, URL: req.URL.Redacted(), Op: req.Method, Cause: ErrTimeout}
	case TimeoutAfter:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, &Error{Kind: k, URL: req.URL.Redacted(), Op: req.Method, Cause: ErrTimeout}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	switch k {
	case SlowRead:
		resp.Body = &slowBody{ReadCloser: resp.Body, ctx: req.Context(), delay: t.in.cfg.SlowDelay}
	case TruncatedRead:
		if resp.ContentLength > 1 {
			resp.Body = &cutBody{ReadCloser: resp.Body, left: resp.ContentLength / 2, url: req.URL.Redacted()}
		}
	}
	return resp, nil
}

// drain closes a request's body, as a RoundTripper must even when it does
// not send it.
func drain(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// errorResponse is a store's error answer to req: S3's XML body and
// Azure's header, with a Retry-After of zero seconds for throttling.
func errorResponse(req *http.Request, se *StatusError) *http.Response {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s (%s)</Message><RequestId>faults</RequestId></Error>`,
		se.Code, http.StatusText(se.Status), ErrInjected)
	h := http.Header{}
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("x-amz-request-id", "faults")
	h.Set("x-ms-request-id", "faults")
	azCode := se.Code
	if se.Status == http.StatusServiceUnavailable || se.Status == http.StatusTooManyRequests {
		azCode = "ServerBusy"
	}
	h.Set("x-ms-error-code", azCode)
	if req.Method == http.MethodHead {
		body = ""
	}
	return &http.Response{
		Status:        strconv.Itoa(se.Status) + " " + http.StatusText(se.Status),
		StatusCode:    se.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// cutBody yields left bytes, then io.ErrUnexpectedEOF.
type cutBody struct {
	io.ReadCloser
	left int64
	url  string
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &Error{Kind: TruncatedRead, URL: b.url, Op: "GET", Cause: io.ErrUnexpectedEOF}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// Proxy returns an HTTP handler that forwards every request to target
// through t's faults: put it in front of a real server (an httptest
// server on it) and point a child process at it, and the child's SDK
// meets the faults without a line of test code in it. A fault that loses
// an answer (TimeoutBefore, TimeoutAfter) drops the client's connection;
// a truncated body ends the connection mid-body.
func (in *Injector) Proxy(target *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		// Keep the client's Host header: S3 signs it.
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: in.Transport(nil),
		// The proxy's own complaints about the bodies it cut.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			// A lost answer: the client sees its connection drop.
			panic(http.ErrAbortHandler)
		},
	}
	rp.FlushInterval = -1
	return rp
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
