package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// client posts to a console's handler from one address, keeping its
// cookies, as a browser at that address would.
type client struct {
	t       *testing.T
	h       http.Handler
	addr    string
	cookies map[string]*http.Cookie
}

func (c *client) send(req *http.Request) *httptest.ResponseRecorder {
	req.RemoteAddr = c.addr
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		c.cookies[ck.Name] = ck
	}
	return rec
}

// login posts token to /ui/login with the login page's CSRF token.
func (c *client) login(token string) *httptest.ResponseRecorder {
	c.t.Helper()
	m := csrfValue.FindStringSubmatch(c.send(httptest.NewRequest("GET", "/ui/login", nil)).Body.String())
	if m == nil {
		c.t.Fatal("no CSRF token on /ui/login")
	}
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+req.Host)
	return c.send(req)
}

// Five wrong tokens from one address within a minute are answered 403;
// the sixth, and even the right token after it, 429 with Retry-After and
// a line on the page saying so. Another address still logs in with the
// right token.
func TestLoginAttemptsAreLimitedPerAddress(t *testing.T) {
	const token = "s3cret-token"
	l := newLake(t)
	h := New(l.srv, token, nil, nil).Handler()
	guesser := &client{t: t, h: h, addr: "198.51.100.7:40000", cookies: map[string]*http.Cookie{}}
	for i := 1; i <= loginFailures; i++ {
		if r := guesser.login(fmt.Sprintf("guess-%d", i)); r.Code != http.StatusForbidden {
			t.Fatalf("wrong token %d: %d, want 403", i, r.Code)
		}
	}
	for _, tok := range []string{"guess-6", token} {
		r := guesser.login(tok)
		secs, err := strconv.Atoi(r.Header().Get("Retry-After"))
		if r.Code != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 60 {
			t.Errorf("login with %q after %d wrong tokens: %d, Retry-After %q; want 429 and 1-60 s", tok, loginFailures, r.Code, r.Header().Get("Retry-After"))
		}
		if !strings.Contains(r.Body.String(), "Too many wrong tokens") {
			t.Errorf("the 429 page does not say why:\n%s", r.Body.String())
		}
		if _, ok := guesser.cookies[sessionCookie]; ok {
			t.Errorf("a refused login opened a session")
		}
	}
	other := &client{t: t, h: h, addr: "203.0.113.9:51000", cookies: map[string]*http.Cookie{}}
	if r := other.login(token); r.Code != http.StatusSeeOther || other.cookies[sessionCookie] == nil {
		t.Errorf("the right token from another address: %d, session cookie %v", r.Code, other.cookies[sessionCookie])
	}
}

// The limiter forgets a window when it ends, and remembers at most its
// bound of addresses however many send wrong tokens, the oldest
// forgotten first.
func TestLoginLimiterStaysBounded(t *testing.T) {
	l := newLoginLimiter(5, 100, time.Minute)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		l.fail("192.0.2.1", at.Add(time.Duration(i)*time.Second))
	}
	if wait := l.blocked("192.0.2.1", at.Add(10*time.Second)); wait != 50*time.Second {
		t.Errorf("after 5 failures: wait %s, want 50s", wait)
	}
	if wait := l.blocked("192.0.2.1", at.Add(time.Minute)); wait != 0 {
		t.Errorf("when the window ends: wait %s, want 0", wait)
	}
	for i := range 100_000 {
		l.fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), at.Add(2*time.Minute))
		if n := l.size(); n > 100 {
			t.Fatalf("after %d addresses the limiter remembers %d, want at most 100", i+1, n)
		}
	}
	for range 4 { // the newest address is remembered, the oldest not
		l.fail("10.1.134.159", at.Add(2*time.Minute))
		l.fail("10.0.0.0", at.Add(2*time.Minute))
	}
	if l.blocked("10.1.134.159", at.Add(2*time.Minute)) == 0 || l.blocked("10.0.0.0", at.Add(2*time.Minute)) != 0 {
		t.Errorf("the newest address's 5 failures or the oldest's forgotten first one: not so")
	}
}
