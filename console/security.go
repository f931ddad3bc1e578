package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/scheduler"
)

// The console's cookies. All are HttpOnly, SameSite=Strict, Path=/.
const (
	// sessionCookie holds an HMAC of serve's token under a per-process
	// key: proof of a login that reveals nothing of the token.
	sessionCookie = "sluice_session"
	// csrfCookie is a random value the CSRF token of a browser without a
	// session is derived from (double submit).
	csrfCookie = "sluice_csrf"
	// flashCookie carries one message to the page an action returns to.
	flashCookie = "sluice_flash"
)

func mac(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteStrictMode}
}

// session is the session cookie's value for serve's token.
func (c *Console) session() string { return mac(c.sessionKey, "session", c.Token) }

// loggedIn tells whether r carries a session with the token.
func (c *Console) loggedIn(r *http.Request) bool {
	if c.Token == "" {
		return false
	}
	ck, err := r.Cookie(sessionCookie)
	return err == nil && equal(ck.Value, c.session())
}

// csrfSubject is what r's CSRF token is an HMAC of: its session, or,
// without one, its CSRF cookie ("" when it has neither).
func (c *Console) csrfSubject(r *http.Request) string {
	if c.loggedIn(r) {
		return "session:" + c.session()
	}
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) == 64 {
		return "cookie:" + ck.Value
	}
	return ""
}

// csrfFor returns the CSRF token the forms of r's page carry, setting a
// CSRF cookie first when r has no session and no cookie.
func (c *Console) csrfFor(w http.ResponseWriter, r *http.Request) string {
	subject := c.csrfSubject(r)
	if subject == "" {
		v := hex.EncodeToString(randomBytes(32))
		http.SetCookie(w, cookie(csrfCookie, v, 0))
		subject = "cookie:" + v
	}
	return mac(c.csrfKey, "csrf", subject)
}

// csrfOK tells whether r's form carries the CSRF token of its cookies.
func (c *Console) csrfOK(r *http.Request) bool {
	subject := c.csrfSubject(r)
	return subject != "" && equal(r.PostFormValue("csrf"), mac(c.csrfKey, "csrf", subject))
}

// checkPost refuses, with a page saying why, a POST from another site's
// page or without the form's CSRF token; session says it also needs a
// session when serve has a token. It reports whether r may go on.
func (c *Console) checkPost(w http.ResponseWriter, r *http.Request, session bool) bool {
	if why := scheduler.CrossSite(r); why != "" {
		c.message(w, r, http.StatusForbidden, "Refused", "Refused: "+why+". Actions are taken from this console's own pages only.")
		return false
	}
	if !c.csrfOK(r) {
		c.message(w, r, http.StatusForbidden, "Refused", "Refused: the form's CSRF token is missing or does not match this browser's. Reload the page and try again.")
		return false
	}
	if session && c.Token != "" && !c.loggedIn(r) {
		c.message(w, r, http.StatusForbidden, "Read-only", "Refused: this console is read-only until you log in with serve's token (Log in, at /ui/login).")
		return false
	}
	return true
}

// action wraps an action's handler in checkPost.
func (c *Console) action(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.checkPost(w, r, true) {
			h(w, r)
		}
	}
}

// back returns where an action returns to: the form's back, a path of
// this server only (never another host), else /.
func back(r *http.Request) string {
	b := r.PostFormValue("back")
	if !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") || strings.ContainsAny(b, "\\\r\n") {
		return "/"
	}
	return b
}

// done redirects an action back (303) with its message.
func done(w http.ResponseWriter, r *http.Request, msg string) {
	http.SetCookie(w, cookie(flashCookie, url.QueryEscape(msg), 60))
	http.Redirect(w, r, back(r), http.StatusSeeOther)
}

// takeFlash returns the message an action left, and clears it.
func takeFlash(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, cookie(flashCookie, "", -1))
	msg, err := url.QueryUnescape(ck.Value)
	if err != nil {
		return ""
	}
	return msg
}

func (c *Console) runJob(w http.ResponseWriter, r *http.Request) {
	job := r.PathValue("job")
	iv, err := c.Server.RunNow(job, r.PostFormValue("rerun") == "true")
	switch {
	case errors.Is(err, scheduler.ErrUnknownJob):
		c.message(w, r, http.StatusNotFound, "No such job", err.Error())
		return
	case err != nil:
		c.message(w, r, http.StatusServiceUnavailable, "Not started", "Not started: "+err.Error())
		return
	}
	c.forgetRuns()
	done(w, r, "Started "+job+", interval "+iv.Key()+".")
}

func (c *Console) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !c.Server.Runner.Cancel(id) {
		c.message(w, r, http.StatusNotFound, "Not running", "No run "+id+" is running on this instance.")
		return
	}
	c.forgetRuns()
	done(w, r, "Cancelled run "+id+".")
}

type loginData struct {
	HasToken bool
	Error    string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "login", c.newPage(w, r, "Log in", "", loginData{HasToken: c.Token != ""}))
}

// login opens a session when the form's token is serve's, unless the
// client's address sent too many wrong tokens of late (loginFailures a
// loginWindow: 429 with Retry-After).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.checkPost(w, r, false) {
		return
	}
	if c.Token == "" {
		done(w, r, "This server has no token: actions need no login here.")
		return
	}
	// A client that guessed wrong too often is refused before its token
	// is looked at, the right one included: else the answer would still
	// tell a guess right from wrong.
	addr, now := clientAddr(r), time.Now()
	if wait := c.logins.blocked(addr, now); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.render(w, http.StatusTooManyRequests, "login", c.newPage(w, r, "Log in", "", loginData{HasToken: true,
			Error: fmt.Sprintf("Too many wrong tokens from %s: try again in %d s.", addr, secs)}))
		return
	}
	if !equal(r.PostFormValue("token"), c.Token) {
		c.logins.fail(addr, now)
		c.render(w, http.StatusForbidden, "login", c.newPage(w, r, "Log in", "", loginData{HasToken: true, Error: "That is not serve's token."}))
		return
	}
	http.SetCookie(w, cookie(sessionCookie, c.session(), 0))
	done(w, r, "Logged in: actions are on.")
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if !c.checkPost(w, r, false) {
		return
	}
	http.SetCookie(w, cookie(sessionCookie, "", -1))
	done(w, r, "Logged out: the console is read-only.")
}
