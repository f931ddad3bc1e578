package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/inspect"
	"github.com/sluice-data/sluice/scheduler"
)

// task is a job kind whose runs the test decides.
type task struct {
	run func(ctx context.Context, j *scheduler.Job, iv scheduler.Interval) (any, error)
}

func (task) Check(*scheduler.Pipeline, *scheduler.Job) []*scheduler.OptionError { return nil }

func (k task) Run(ctx context.Context, _ *scheduler.Pipeline, j *scheduler.Job, iv scheduler.Interval) (any, error) {
	return k.run(ctx, j, iv)
}

// scriptError is the error text the failing job reports: markup and a
// second line, which the pages must show as text.
const scriptError = "bad input <script>alert(1)</script>\nsecond line"

// lake is a pipeline on local disk, its history written by a real
// runner, and a server serving it.
type lake struct {
	dir     string
	p       *scheduler.Pipeline
	h       *scheduler.History
	srv     *scheduler.Server
	started chan string // the block job's run IDs, as each starts
	stopped chan struct{}
	// idle receives once block's dispatch is over (its job free to run
	// again).
	idle chan struct{}
	// latest is the yearly jobs' latest interval.
	latest scheduler.Interval
}

// newLake writes a pipeline of three yearly jobs (so that no tick comes
// while the test runs): load, five succeeded intervals with a summary;
// flaky, whose latest interval failed with scriptError; block, whose
// catch-up run serve starts and which runs until cancelled. Its tables:
// events, a table that was never written, and one whose name holds
// markup and a newline.
func newLake(t *testing.T) *lake {
	t.Helper()
	dir := t.TempDir()
	l := &lake{dir: dir, started: make(chan string, 8), stopped: make(chan struct{}, 8), idle: make(chan struct{}, 8)}
	src := fmt.Sprintf(`lake: %s
tables:
  events: {location: %s}
  "<script>x</script>\nnext": {location: %s}
jobs:
  load:
    schedule: "@yearly"
    task: {}
  flaky:
    schedule: "@yearly"
    task: {}
  block:
    schedule: "@yearly"
    task: {}
`, filepath.Join(dir, "lake"), filepath.Join(dir, "lake", "events"), filepath.Join(dir, "lake", "nothing"))
	var latestKey string
	kinds := map[string]scheduler.Kind{"task": task{run: func(ctx context.Context, j *scheduler.Job, iv scheduler.Interval) (any, error) {
		switch j.Name {
		case "load":
			return map[string]any{"files": 3, "note": "<b>bold</b>"}, nil
		case "flaky":
			if iv.Key() == latestKey {
				return nil, scheduler.Permanent(errors.New(scriptError))
			}
			return map[string]any{"files": 1}, nil
		}
		l.started <- scheduler.RunID(ctx)
		<-ctx.Done()
		l.stopped <- struct{}{}
		return nil, ctx.Err()
	}}}
	if err := os.MkdirAll(filepath.Join(dir, "lake"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.Parse(filepath.Join(dir, "p.yaml"), []byte(src), kinds, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	st, err := cloud.Open(context.Background(), p.Lake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l.p, l.h = p, &scheduler.History{Store: st}
	r := &scheduler.Runner{Pipeline: p, Kinds: kinds, History: l.h, Instance: "test-1"}
	l.latest = p.Jobs["load"].Schedule.Latest(time.Now())
	latestKey = l.latest.Key()
	for _, job := range []string{"load", "flaky"} {
		_, err := r.Backfill(context.Background(), p.Jobs[job], l.latest.End.AddDate(-5, 0, 0), l.latest.End, 1, scheduler.RunOptions{Only: true})
		if job == "load" && err != nil {
			t.Fatal(err)
		}
	}
	l.srv = &scheduler.Server{Runner: r, Grace: 50 * time.Millisecond, OnDispatch: func(job string, _ scheduler.Interval, _ []scheduler.Outcome, _ error) {
		if job == "block" {
			l.idle <- struct{}{}
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	<-l.started // block's catch-up run
	return l
}

// serveConsole serves the console of l's server through the admin API's
// server, as serve does, with token (none: loopback only), and returns
// a browser on it.
func (l *lake) serveConsole(t *testing.T, token string) *browser {
	t.Helper()
	tables := map[string]string{}
	for name, tb := range l.p.Tables {
		tables[name] = tb.Location
	}
	describe := func(ctx context.Context, loc string) (*inspect.Detail, error) {
		tb, err := inspect.Open(ctx, loc, inspect.OpenOptions{})
		if err != nil {
			return nil, err
		}
		defer tb.Close()
		return inspect.Describe(ctx, tb, inspect.Options{})
	}
	c := New(l.srv, token, tables, describe)
	srv := httptest.NewServer((&scheduler.Admin{Server: l.srv, Token: token, Pages: c.Handler()}).HTTPServer().Handler)
	t.Cleanup(srv.Close)
	return newBrowser(t, srv.URL)
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// response is a page as read.
type response struct {
	code   int
	header http.Header
	body   string
	doc    *html.Node
}

func (b *browser) do(req *http.Request) response {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(data)))
	if err != nil {
		b.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(data), doc: doc}
}

func (b *browser) get(path string) response {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// post sends form to path with the headers given (a browser's own page
// sends Origin: its base).
func (b *browser) post(path string, form url.Values, header map[string]string) response {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return b.do(req)
}

var csrfValue = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrf is the CSRF token of the forms of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	m := csrfValue.FindStringSubmatch(b.get(path).body)
	if m == nil {
		b.t.Fatalf("no csrf field on %s", path)
	}
	return m[1]
}

// apiRuns is GET /api/runs.
func (b *browser) apiRuns() (runs []scheduler.Record, here []scheduler.Record) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + "/api/runs")
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Runs []scheduler.Record `json:"runs"`
		Here []scheduler.Record `json:"running_here"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		b.t.Fatal(err)
	}
	return body.Runs, body.Here
}

// find returns the elements under n that match.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && match(c) {
			out = append(out, c)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// sel matches an element by tag and, when given, an attribute's value
// ("class" matches one of its classes).
func sel(tag string, kv ...string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		if tag != "" && n.Data != tag {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[0+i] == "class" {
				if !hasClass(n, kv[i+1]) {
					return false
				}
			} else if attr(n, kv[i]) != kv[i+1] {
				return false
			}
		}
		return true
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func one(t *testing.T, what string, ns []*html.Node) *html.Node {
	t.Helper()
	if len(ns) != 1 {
		t.Fatalf("%s: %d elements, want 1", what, len(ns))
	}
	return ns[0]
}
