package browsertest

import (
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A page with a list, a link, a form that posts and a cookie, served on
// loopback: the harness reads what a person sees there and does what a
// person does.
func testSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "visited", Value: "1", Path: "/"})
		fmt.Fprint(w, `<!doctype html><title>home</title>
<h1>  Pipeline
   runs </h1>
<ul id="runs"><li class="run st-failed" data-job="a">a  failed</li><li class="run st-succeeded" data-job="b">b ok</li></ul>
<svg width="200" height="20"><rect class="bar" data-status="failed" width="50" height="10"><title>a run</title></rect></svg>
<a id="next" href="/next">next</a>
<form method="post" action="/submit"><label>Name <input name="name" type="password"></label><button>Send</button></form>`)
	})
	mux.HandleFunc("GET /next", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p id="where">next page</p>`)
	})
	mux.HandleFunc("POST /submit", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<!doctype html><p id="got">%s</p>`, r.PostFormValue("name"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestTabReadsClicksTypesAndSaves(t *testing.T) {
	srv := testSite(t)
	b := Start(t)
	tab := b.NewTab(t, 30*time.Second)

	if code := tab.Open(srv.URL + "/"); code != http.StatusOK {
		t.Fatalf("open: status %d", code)
	}
	if got := tab.Text("h1"); got != "Pipeline runs" {
		t.Errorf("h1 %q, want its text with white space collapsed", got)
	}
	if got := tab.Texts("#runs li"); !slices.Equal(got, []string{"a failed", "b ok"}) {
		t.Errorf("list items %q", got)
	}
	if got := tab.Attr("#runs li.st-failed", "data-job"); got != "a" {
		t.Errorf("data-job of the failed run %q, want a", got)
	}
	if got := tab.Attrs("svg rect.bar"); len(got) != 1 || got[0]["data-status"] != "failed" || got[0]["class"] != "bar" {
		t.Errorf("rect attributes %v", got)
	}
	if got := tab.Text("svg rect.bar"); got != "a run" {
		t.Errorf("an SVG element's text %q, want its title's", got)
	}
	if n := tab.Count("table, #nothing"); n != 0 {
		t.Errorf("%d elements match selectors of nothing on the page", n)
	}
	var sum int
	tab.Eval(`Promise.resolve(document.querySelectorAll("li").length + 40)`, &sum)
	if sum != 42 {
		t.Errorf("a script's promised value %d, want 42", sum)
	}
	if got := tab.Cookies(srv.URL); !slices.Contains(got, "visited") {
		t.Errorf("cookies %v, want the page's visited cookie", got)
	}

	shot := filepath.Join(t.TempDir(), "shots", "home.png")
	tab.Screenshot(shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != ViewportWidth || cfg.Height < 100 {
		t.Errorf("screenshot: %+v %v; want a PNG %d wide", cfg, err, ViewportWidth)
	}

	if code := tab.Click("#next"); code != http.StatusOK || tab.Text("#where") != "next page" || !strings.HasSuffix(tab.URL(), "/next") {
		t.Errorf("after clicking the link: status %d at %s", code, tab.URL())
	}
	tab.Open(srv.URL + "/")
	tab.Type("input[name=name]", "s3cret")
	if code := tab.Click("form button"); code != http.StatusForbidden || tab.Text("#got") != "s3cret" {
		t.Errorf("after submitting the form: status %d, page %q; want 403 and the typed value", code, tab.Text("body"))
	}
	tab.Open(srv.URL + "/")
	if code := tab.Navigate(`document.querySelector("form").requestSubmit()`); code != http.StatusForbidden {
		t.Errorf("a form a script submits: status %d, want 403", code)
	}

	// A second tab is another person: none of the first one's cookies.
	other := b.NewTab(t, 30*time.Second)
	other.Open(srv.URL + "/next")
	if got := other.Cookies(srv.URL); len(got) != 0 {
		t.Errorf("a new tab has cookies %v, want none", got)
	}
}

// Without Chromium the browser tests fail at once, saying how to install
// it; they never skip.
func TestExecPathNamesTheInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvChromium, "")
	_, err := ExecPath()
	if err == nil || !strings.Contains(err.Error(), "make deps") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("ExecPath with no chromium: %v; want one line naming make deps", err)
	}
	t.Setenv(EnvChromium, filepath.Join(t.TempDir(), "nothing"))
	if _, err := ExecPath(); err == nil || !strings.Contains(err.Error(), EnvChromium) {
		t.Fatalf("ExecPath with %s naming no file: %v", EnvChromium, err)
	}
}
