package testenv

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Faults is an http.RoundTripper for a store's HTTP client that injects
// faults into the requests of one key and passes every other request to
// the real server. It is a fault in transport, not a fake store: what
// gets through reaches the server and is applied there.
type Faults struct {
	// Key picks the requests: those whose URL path ends in "/"+Key.
	Key string
	// Match, when set, picks them instead: those whose URL path it
	// accepts.
	Match func(path string) bool
	// FirstPut handles the first PUT of Key; nil: it goes through.
	FirstPut func(*http.Request) (*http.Response, error)
	// LaterPut handles every later PUT of Key; nil: they go through.
	LaterPut func(*http.Request) (*http.Response, error)
	// Get handles every GET of Key once the first PUT was seen; nil:
	// they go through.
	Get func(*http.Request) (*http.Response, error)

	mu   sync.Mutex
	puts int
	gets int
}

// RoundTrip implements http.RoundTripper.
func (f *Faults) RoundTrip(req *http.Request) (*http.Response, error) {
	var handle func(*http.Request) (*http.Response, error)
	hit := strings.HasSuffix(req.URL.Path, "/"+f.Key)
	if f.Match != nil {
		hit = f.Match(req.URL.Path)
	}
	if hit {
		f.mu.Lock()
		switch req.Method {
		case http.MethodPut:
			f.puts++
			handle = f.LaterPut
			if f.puts == 1 {
				handle = f.FirstPut
			}
		case http.MethodGet:
			if f.puts > 0 && f.Get != nil {
				f.gets++
				handle = f.Get
			}
		}
		f.mu.Unlock()
	}
	if handle != nil {
		return handle(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Puts returns how many PUTs of the key were sent, faulted or not.
func (f *Faults) Puts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

// Gets returns how many GETs of the key the Get fault handled.
func (f *Faults) Gets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

// Client returns an HTTP client whose transport is f.
func (f *Faults) Client() *http.Client { return &http.Client{Transport: f} }

// ErrReset is what a client sees when the connection drops mid-response.
var ErrReset = errors.New("read tcp 127.0.0.1: connection reset by peer (injected)")

// DeliverThenDrop sends req to the server, which applies it, and loses
// the answer: the client cannot know the write landed.
func DeliverThenDrop(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, ErrReset
}

// Drop fails req without sending it, as a reset connection does.
func Drop(*http.Request) (*http.Response, error) { return nil, ErrReset }

// LandedUnread returns the faults of a write whose outcome nobody can
// learn: the first PUT of key lands on the server and its answer is lost,
// and every GET of key afterwards fails, so reading it back cannot settle
// it. A retried PUT goes through (and is refused: the object exists).
func LandedUnread(key string) *Faults {
	return &Faults{Key: key, FirstPut: DeliverThenDrop, Get: Drop}
}
