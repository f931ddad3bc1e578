package scheduler

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Admin is serve's HTTP API: health, Prometheus metrics, runs and jobs
// to read; a run to start and a run to cancel, which need the token (or,
// without one, RequestHeader) and are refused from another site's page.
type Admin struct {
	Server *Server
	// Token, when not empty, must come as "Authorization: Bearer TOKEN"
	// on every mutating call; it is compared in constant time. The
	// command refuses a non-loopback address without one.
	Token    string
	Registry *prometheus.Registry
	// Limits: DefaultAdminLimits where zero.
	Limits AdminLimits
	// Pages, when set, serves the web console: GET / and the paths under
	// /runs, /tables, /ui/ and /static/ go to it, behind the same guard
	// as the API (without a token, loopback Host names only). It checks
	// its own actions (see CrossSite).
	Pages http.Handler
}

// AdminLimits bound what one client may hold of the admin server: a
// client that sends its headers slowly (slowloris) or never ends its
// body is cut off, and a body larger than MaxBodyBytes is refused (no
// call takes one beyond that).
type AdminLimits struct {
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
	MaxBodyBytes                                              int64
}

// DefaultAdminLimits are the admin server's limits. The write timeout
// allows for /api/runs reading a long history from an object store.
var DefaultAdminLimits = AdminLimits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      2 * time.Minute,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
	MaxBodyBytes:      64 << 10,
}

func (a *Admin) limits() AdminLimits {
	l, d := a.Limits, DefaultAdminLimits
	for _, f := range []struct{ v, d *time.Duration }{{&l.ReadHeaderTimeout, &d.ReadHeaderTimeout},
		{&l.ReadTimeout, &d.ReadTimeout}, {&l.WriteTimeout, &d.WriteTimeout}, {&l.IdleTimeout, &d.IdleTimeout}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	return l
}

// HTTPServer returns the API's server, with its limits set; the caller
// serves it on a listener and shuts it down.
func (a *Admin) HTTPServer() *http.Server {
	l := a.limits()
	return &http.Server{Handler: a.limitBody(a.Handler(), l.MaxBodyBytes), ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}
}

// limitBody refuses a request whose body is over limit bytes (413), by
// its Content-Length or, when it has none, by reading it. The body read
// is handed on: the console's forms come in it.
func (a *Admin) limitBody(h http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tooLarge := func() {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("request body over %d bytes", limit)})
		}
		if r.ContentLength > limit {
			tooLarge()
			return
		}
		var body bytes.Buffer
		if _, err := io.Copy(&body, http.MaxBytesReader(w, r.Body, limit)); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				tooLarge()
				return
			}
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "read request body: " + err.Error()})
			return
		}
		r.Body = io.NopCloser(&body)
		h.ServeHTTP(w, r)
	})
}

// Handler returns the API's routes.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if a.Registry != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.Registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /api/runs", a.runs)
	mux.HandleFunc("GET /api/jobs", a.jobs)
	mux.HandleFunc("POST /api/jobs/{job}/run", a.mutating(a.runJob))
	mux.HandleFunc("POST /api/runs/{id}/cancel", a.mutating(a.cancel))
	if a.Pages != nil {
		for _, p := range pagePaths {
			mux.Handle(p, a.Pages)
		}
	}
	return a.guard(mux)
}

// pagePaths are the routes Admin.Pages serves.
var pagePaths = []string{"/{$}", "/runs", "/runs/", "/tables", "/tables/", "/ui/", "/static/"}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// RequestHeader is the header a mutating call must carry when serve has
// no token: a browser sends a custom header to another origin only after
// a CORS preflight, which the admin never grants, so a web page the
// operator visits cannot start or cancel runs with a form or a fetch.
// curl: -H 'X-Sluice-Request: 1'.
const RequestHeader = "X-Sluice-Request"

// guard refuses what a browser sends on a page's behalf rather than the
// operator's. Without a token the API listens on loopback (the command
// refuses otherwise), so the Host must be a loopback name: a page whose
// name an attacker points at 127.0.0.1 (DNS rebinding) names its own
// host and is refused, reads included.
func (a *Admin) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Token == "" && !loopbackHost(r.Host) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("Host %q is not a loopback name: without --token the admin API answers only to 127.0.0.1, [::1] or localhost", r.Host)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost tells whether a Host header names this machine by a
// loopback address or localhost.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CrossSite returns why r comes from another site's page, or "": an
// Origin other than this server's, or a browser's own word that the
// request is not same-origin. Every mutating call of the API and of the
// console is refused when it says why.
func CrossSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("Origin %q is not this server's (%s)", o, r.Host)
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Sprintf("Sec-Fetch-Site %q: a page of another origin sent it", site)
	}
	return ""
}

// mutating guards a call that changes something: never from another
// site's page, and with the token when there is one, else with
// RequestHeader (or, from a page of the admin's own origin, the
// browser's Sec-Fetch-Site: same-origin).
func (a *Admin) mutating(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := CrossSite(r); why != "" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "refused: " + why})
			return
		}
		if a.Token == "" && r.Header.Get(RequestHeader) == "" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "this call needs the header " + RequestHeader + ": 1 (or serve's --token), which a web page of another site cannot send"})
			return
		}
		if a.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "this call needs the token: Authorization: Bearer TOKEN"})
				return
			}
		}
		h(w, r)
	}
}

func (a *Admin) runs(w http.ResponseWriter, r *http.Request) {
	job, status := r.URL.Query().Get("job"), r.URL.Query().Get("status")
	recs, err := a.Server.Runner.History.List(r.Context(), job)
	unreadable := []string{}
	if errors.Is(err, ErrUnreadableRecord) {
		unreadable, err = unreadableList(err), nil
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	out := []Record{}
	for _, rec := range recs {
		if status == "" || string(rec.Status) == status {
			out = append(out, rec)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out, "running_here": orNone(a.Server.Runner.Running()), "unreadable": unreadable})
}

// unreadableList splits an error of History.List into one line per
// unreadable record.
func unreadableList(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

func orNone(r []Record) []Record {
	if r == nil {
		return []Record{}
	}
	return r
}

func (a *Admin) jobs(w http.ResponseWriter, _ *http.Request) {
	p := a.Server.Runner.Pipeline
	now := a.Server.Runner.clock().Now()
	out := []map[string]any{}
	for _, name := range p.Order {
		j := p.Jobs[name]
		after := j.After
		if after == nil {
			after = []string{}
		}
		out = append(out, map[string]any{"job": name, "kind": j.Kind, "schedule": j.Spec, "after": after,
			"next_tick": j.Schedule.Next(now).Format(time.RFC3339), "overlap": j.Overlap, "catchup": j.Catchup})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

// ErrShuttingDown: the server is stopping (or not serving), and starts
// no run.
var ErrShuttingDown = errors.New("shutting down")

// RunNow starts job's latest complete interval (rerun: even if it
// succeeded) and returns at once, with the interval; its record shows
// how it went. A job the pipeline does not define is ErrUnknownJob; a
// server that is not serving, ErrShuttingDown. The job's previous run
// still running, the interval is queued or skipped as its overlap says.
func (s *Server) RunNow(job string, rerun bool) (Interval, error) {
	j, err := s.Runner.Pipeline.Job(job)
	if err != nil {
		return Interval{}, err
	}
	if s.stopping() {
		return Interval{}, ErrShuttingDown
	}
	iv := j.Schedule.Latest(s.Runner.clock().Now())
	s.dispatch(j, dispatch{iv: iv, trigger: "api", rerun: rerun})
	return iv, nil
}

// runJob starts the job's latest complete interval (?rerun=true: even if
// it succeeded) and answers at once; /api/runs shows how it went.
func (a *Admin) runJob(w http.ResponseWriter, r *http.Request) {
	iv, err := a.Server.RunNow(r.PathValue("job"), r.URL.Query().Get("rerun") == "true")
	switch {
	case errors.Is(err, ErrUnknownJob):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"job": r.PathValue("job"), "interval": iv.Key(), "interval_start": iv.Start, "interval_end": iv.End})
}

func (a *Admin) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !a.Server.Runner.Cancel(id) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no run " + id + " is running on this instance"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"cancelled": id})
}
