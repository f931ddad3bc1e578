package cloud_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// faultyTransport passes requests through, except the first PUT of a key
// ending in target, on which it calls fault. It is a fault in transport,
// not a fake store: every request that gets through reaches the real
// server.
type faultyTransport struct {
	target string
	// fault handles the chosen request and returns what the client sees.
	fault func(req *http.Request) (*http.Response, error)

	mu    sync.Mutex
	fired int
}

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	hit := f.fired == 0 && req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/"+f.target)
	if hit {
		f.fired++
	}
	f.mu.Unlock()
	if hit {
		return f.fault(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// errReset is what a client sees when the connection drops mid-response.
var errReset = errors.New("read tcp 127.0.0.1: connection reset by peer (injected)")

// deliverThenDrop sends the request to the server, which applies it, and
// loses the answer: the client cannot know the write landed.
func deliverThenDrop(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errReset
}

// TestAmbiguousConditionalPut pins how a conditional Put resolves an
// outcome the SDK's retries leave ambiguous: by reading the object back.
func TestAmbiguousConditionalPut(t *testing.T) {
	const key = "_sluice/v/2.json"
	ours, theirs := []byte(`{"version":2,"run":"ours"}`), []byte(`{"version":2,"run":"theirs"}`)

	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			open := func(t *testing.T, fault func(*http.Request) (*http.Response, error), maxAttempts int) (cloud.Store, cloud.Store, *faultyTransport) {
				loc := testenv.Location(t, kind)
				ft := &faultyTransport{target: key, fault: fault}
				flaky := openStore(t, loc, cloud.Options{HTTPClient: &http.Client{Transport: ft}, MaxAttempts: maxAttempts})
				return flaky, openStore(t, loc, cloud.DefaultOptions()), ft
			}
			check := func(t *testing.T, ft *faultyTransport, direct cloud.Store, want []byte) {
				t.Helper()
				if ft.fired != 1 {
					t.Errorf("the fault fired %d times, want 1", ft.fired)
				}
				if got := get(t, direct, key); !bytes.Equal(got, want) {
					t.Errorf("stored %s, want %s", got, want)
				}
			}

			t.Run("a create whose answer was lost, refused on retry, is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, deliverThenDrop, 0)
				info, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				if err != nil {
					t.Fatalf("Put: %v; the bytes stored are ours, so it won", err)
				}
				if info.Size != int64(len(ours)) || info.ETag == "" {
					t.Errorf("Put returned %+v", info)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create refused on retry with other bytes there lost", func(t *testing.T) {
				var flakyDirect cloud.Store
				flaky, direct, ft := open(t, func(req *http.Request) (*http.Response, error) {
					// Our request never arrives; a rival's create does.
					put(t, flakyDirect, key, theirs, cloud.PutOptions{IfAbsent: true})
					return nil, errReset
				}, 0)
				flakyDirect = direct
				_, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				checkErr(t, "Put", err, cloud.ErrPreconditionFailed, flaky.URL(key))
				check(t, ft, direct, theirs)
			})

			t.Run("a create the SDK gave up on that did not land is sent again", func(t *testing.T) {
				flaky, direct, ft := open(t, func(*http.Request) (*http.Response, error) { return nil, errReset }, 1)
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("Put: %v; nothing was there, so sending again is safe", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create the SDK gave up on that landed is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, deliverThenDrop, 1)
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("Put: %v", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a swap whose answer was lost, refused on retry, is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, deliverThenDrop, 0)
				v1 := put(t, direct, key, theirs, cloud.PutOptions{})
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfMatch: v1.ETag}); err != nil {
					t.Fatalf("Put: %v", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a refusal on the first attempt is no ambiguity", func(t *testing.T) {
				// Same bytes already there, but no retry happened: the
				// create lost, and saying so is the truth.
				loc := testenv.Location(t, kind)
				st := openStore(t, loc, cloud.DefaultOptions())
				put(t, st, key, ours, cloud.PutOptions{IfAbsent: true})
				_, err := st.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				checkErr(t, "Put", err, cloud.ErrPreconditionFailed, st.URL(key))
			})
		})
	}
}
