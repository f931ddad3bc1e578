package console

import (
	"bufio"
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-data/sluice/inspect"
	"github.com/sluice-data/sluice/scheduler"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// How long a read of the lake serves the pages: long enough that a
// burst of page loads (or a team's open tabs) reads it once, short
// enough that a page is never more than a moment behind.
const (
	runsTTL   = 2 * time.Second
	tablesTTL = 30 * time.Second
	// describers bounds the tables the tables page describes at once.
	describers = 4
)

// Console is serve's web console. Build it with New; Handler serves it.
type Console struct {
	// Server is the running scheduler whose jobs, runs and actions the
	// pages show.
	Server *scheduler.Server
	// Token is serve's token: when set, actions need a session, which
	// logging in with the token opens. Without one (serve on loopback),
	// actions need only the CSRF token.
	Token string
	// Tables are the pipeline's tables: name → location (resolved).
	Tables map[string]string
	// Describe describes the table at a location (inspect.Open, then
	// inspect.Describe); nil: the tables pages say there is no describer.
	Describe func(ctx context.Context, loc string) (*inspect.Detail, error)
	// Now is the time the pages are drawn at: the runner's clock when nil.
	Now func() time.Time
	// Logger: none when nil.
	Logger *slog.Logger

	sessionKey, csrfKey []byte // per process: a restart logs everyone out

	pages map[string]*template.Template

	logins *loginLimiter // wrong tokens by client address

	runsMu sync.Mutex // held while the index is read: a burst reads it once
	runsAt time.Time
	runs   map[string]scheduler.JobRuns
	runErr error

	tablesMu sync.Mutex
	tables   map[string]*described // by location
}

// described is one table's cached description.
type described struct {
	mu     sync.Mutex // held while it is described
	at     time.Time
	detail *inspect.Detail
	err    error
}

// New returns the console of s. tables maps the pipeline's table names
// to their locations; describe describes one (nil: none).
func New(s *scheduler.Server, token string, tables map[string]string, describe func(ctx context.Context, loc string) (*inspect.Detail, error)) *Console {
	c := &Console{Server: s, Token: token, Tables: tables, Describe: describe}
	c.init()
	return c
}

func (c *Console) init() {
	if c.sessionKey != nil {
		return
	}
	c.sessionKey, c.csrfKey = randomBytes(32), randomBytes(32)
	c.tables = map[string]*described{}
	c.logins = newLoginLimiter(loginFailures, loginClients, loginWindow)
	c.pages = map[string]*template.Template{}
	for _, name := range []string{"index", "runs", "run", "tables", "table", "login", "message"} {
		c.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("console: no randomness: %v", err)) // crypto/rand never fails on supported systems
	}
	return b
}

func (c *Console) now() time.Time {
	switch {
	case c.Now != nil:
		return c.Now()
	case c.Server.Runner.Clock != nil:
		return c.Server.Runner.Clock.Now()
	}
	return time.Now()
}

func (c *Console) log() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Handler returns the console's routes, each response with the
// security headers.
func (c *Console) Handler() http.Handler {
	c.init()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.index)
	mux.HandleFunc("GET /runs", c.runList)
	mux.HandleFunc("GET /runs/{job}/{interval}", c.runPage)
	mux.HandleFunc("GET /tables", c.tableList)
	mux.HandleFunc("GET /tables/{name}", c.tablePage)
	mux.HandleFunc("GET /ui/login", c.loginPage)
	mux.HandleFunc("POST /ui/login", c.login)
	mux.HandleFunc("POST /ui/logout", c.logout)
	mux.HandleFunc("POST /ui/jobs/{job}/run", c.action(c.runJob))
	mux.HandleFunc("POST /ui/runs/{id}/cancel", c.action(c.cancelRun))
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if _, pattern := mux.Handler(r); pattern == "" {
			c.message(w, r, http.StatusNotFound, "Not found", "No page at "+r.URL.Path+".")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// page is what every template gets.
type page struct {
	Title string
	Nav   string // jobs, runs or tables
	// CSRF is the value every action form carries.
	CSRF string
	// CanAct: the forms of actions are shown.
	CanAct bool
	// ReadOnly: serve has a token and this browser no session.
	ReadOnly bool
	// LoggedIn: a session with the token.
	LoggedIn bool
	Flash    string
	// Back is the path an action returns to.
	Back string
	Now  time.Time
	Data any
}

// newPage returns the page's common part for r (setting the CSRF cookie
// when r has none) and takes the flash message.
func (c *Console) newPage(w http.ResponseWriter, r *http.Request, title, nav string, data any) *page {
	p := &page{Title: title, Nav: nav, Now: c.now(), Data: data, Back: r.URL.RequestURI()}
	p.LoggedIn = c.Token != "" && c.loggedIn(r)
	p.ReadOnly = c.Token != "" && !p.LoggedIn
	p.CanAct = !p.ReadOnly
	p.CSRF = c.csrfFor(w, r)
	p.Flash = takeFlash(w, r)
	return p
}

// render writes the page through the template name, streamed: the
// first bytes leave while the rest is drawn.
func (c *Console) render(w http.ResponseWriter, code int, name string, p *page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	bw := bufio.NewWriterSize(w, 16<<10)
	if err := c.pages[name].ExecuteTemplate(bw, "layout", p); err != nil {
		c.log().Error("console: render", "page", name, "error", err)
		fmt.Fprintf(bw, "\n<p class=\"error\">The page could not be drawn: %s</p>\n", template.HTMLEscapeString(err.Error()))
	}
	_ = bw.Flush()
}

// message writes a page holding one message: an error, a refusal.
func (c *Console) message(w http.ResponseWriter, r *http.Request, code int, title, text string) {
	c.render(w, code, "message", c.newPage(w, r, title, "", text))
}
