package console

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits of login attempts: after loginFailures wrong tokens from one
// client address within loginWindow, its logins are refused (429) until
// the window ends. loginClients bounds the addresses remembered: past
// it the oldest is forgotten, so a flood of addresses costs bounded
// memory (and at worst lets an old address try again early).
const (
	loginFailures = 5
	loginWindow   = time.Minute
	loginClients  = 10000
)

// loginLimiter counts failed logins per client address in fixed
// windows. Its zero value is not ready: use newLoginLimiter.
type loginLimiter struct {
	mu       sync.Mutex
	failures int
	window   time.Duration
	clients  int
	byAddr   map[string]*list.Element
	// order holds the windows, oldest first: windows only ever start
	// later, so expiry and eviction both take from the front.
	order *list.List
}

// failures is one client's current window.
type failures struct {
	addr  string
	start time.Time
	n     int
}

func newLoginLimiter(failures, clients int, window time.Duration) *loginLimiter {
	return &loginLimiter{failures: failures, window: window, clients: clients, byAddr: map[string]*list.Element{}, order: list.New()}
}

// expire forgets the windows that ended by now.
func (l *loginLimiter) expire(now time.Time) {
	for e := l.order.Front(); e != nil; e = l.order.Front() {
		f := e.Value.(*failures)
		if now.Sub(f.start) < l.window {
			return
		}
		l.order.Remove(e)
		delete(l.byAddr, f.addr)
	}
}

// blocked returns how long addr must wait before its next login, or 0
// when it may try now.
func (l *loginLimiter) blocked(addr string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	e := l.byAddr[addr]
	if e == nil {
		return 0
	}
	f := e.Value.(*failures)
	if f.n < l.failures {
		return 0
	}
	return f.start.Add(l.window).Sub(now)
}

// fail counts a wrong token from addr.
func (l *loginLimiter) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	if e := l.byAddr[addr]; e != nil {
		e.Value.(*failures).n++
		return
	}
	for l.order.Len() >= l.clients {
		oldest := l.order.Front()
		l.order.Remove(oldest)
		delete(l.byAddr, oldest.Value.(*failures).addr)
	}
	l.byAddr[addr] = l.order.PushBack(&failures{addr: addr, start: now, n: 1})
}

// size is how many addresses the limiter remembers.
func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byAddr)
}

// clientAddr is r's client address without its port. Forwarding
// headers are not believed: anyone can send them.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
