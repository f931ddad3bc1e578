package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/scheduler"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The pages show what the run records say: every job with its last
// status as text and a strip of its runs, a timeline of the last day
// whose bars account for every run, runs filtered by job and status, one run's record; error
// text and table names holding markup render as text; every response
// carries the security headers.
func TestPages(t *testing.T) {
	l := newLake(t)
	b := l.serveConsole(t, "")
	recs, err := l.h.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	byJob := map[string][]scheduler.Record{}
	for _, r := range recs {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	if len(byJob["load"]) != 5 || len(byJob["flaky"]) != 5 || len(byJob["block"]) != 1 {
		t.Fatalf("history: %d load, %d flaky, %d block records; want 5, 5, 1", len(byJob["load"]), len(byJob["flaky"]), len(byJob["block"]))
	}

	t.Run("the jobs page lists every job with its last status as text and its strip", func(t *testing.T) {
		page := b.get("/")
		if page.code != 200 {
			t.Fatalf("GET /: %d\n%s", page.code, page.body)
		}
		one(t, "h1", find(page.doc, sel("h1")))
		for _, href := range []string{"/", "/runs", "/tables"} {
			one(t, "nav link "+href, find(page.doc, func(n *html.Node) bool {
				return n.Data == "a" && attr(n, "href") == href && n.Parent.Parent.Parent.Data == "nav"
			}))
		}
		jobs := one(t, "section#jobs", find(page.doc, sel("section", "id", "jobs")))
		for job, want := range map[string]string{"load": "succeeded", "flaky": "failed", "block": "running"} {
			row := one(t, "row of "+job, find(jobs, sel("tr", "data-job", job)))
			st := one(t, job+" td.status", find(row, sel("td", "class", "status")))
			if got := strings.TrimSpace(text(st)); got != want || !hasClass(st, "st-"+want) {
				t.Errorf("%s: status %q class %q, want %q as text and class st-%s", job, got, attr(st, "class"), want, want)
			}
			for _, cell := range []string{"kind", "schedule", "next"} {
				if c := one(t, job+" td."+cell, find(row, sel("td", "class", cell))); strings.TrimSpace(text(c)) == "" {
					t.Errorf("%s: td.%s is empty", job, cell)
				}
			}
			strip := one(t, job+" strip", find(row, sel("ol", "class", "strip")))
			items := find(strip, sel("li", "class", "run"))
			if len(items) != len(byJob[job]) {
				t.Fatalf("%s: %d runs in the strip, want %d", job, len(items), len(byJob[job]))
			}
			for i, li := range items { // oldest first
				rec := byJob[job][i]
				a := one(t, "strip link", find(li, sel("a")))
				if !hasClass(li, "st-"+string(rec.Status)) || attr(a, "href") != "/runs/"+job+"/"+rec.Interval ||
					!strings.Contains(text(li), string(rec.Status)) || !strings.HasPrefix(attr(a, "title"), rec.Interval+" "+string(rec.Status)+" attempt ") {
					t.Errorf("%s strip item %d: class %q href %q title %q text %q; want %s %s", job, i, attr(li, "class"), attr(a, "href"), attr(a, "title"), text(li), rec.Interval, rec.Status)
				}
			}
			trend := one(t, job+" trend", find(row, sel("svg", "class", "trend")))
			if attr(trend, "role") != "img" || attr(trend, "aria-label") == "" {
				t.Errorf("%s: trend without role img and a label", job)
			}
			form := one(t, job+" run form", find(row, sel("form", "class", "action-run")))
			if attr(form, "action") != "/ui/jobs/"+job+"/run" || len(find(form, sel("input", "name", "csrf"))) != 1 {
				t.Errorf("%s: run form %v", job, form.Attr)
			}
		}
		if len(find(page.doc, sel("p", "id", "readonly"))) != 0 {
			t.Errorf("without a token the page says it is read-only")
		}
	})

	t.Run("the timeline accounts for every run of the last day, the worst status of each bar shown", func(t *testing.T) {
		page := b.get("/")
		tl := one(t, "section#timeline", find(page.doc, sel("section", "id", "timeline")))
		if h := one(t, "timeline h2", find(tl, sel("h2"))); text(h) != "Last 24 hours" {
			t.Errorf("timeline heading %q", text(h))
		}
		lanes := find(tl, sel("g", "class", "lane"))
		if len(lanes) != 3 {
			t.Fatalf("%d lanes, want 3", len(lanes))
		}
		for _, lane := range lanes {
			job := attr(lane, "data-job")
			if !strings.Contains(text(one(t, "lane label", find(lane, sel("text")))), job) {
				t.Errorf("lane %s: no label", job)
			}
			// The runs were written moments apart: they share a slot, and
			// so a bar, unless the job ran once.
			var runs, failures int
			worst := ""
			for _, bar := range find(lane, sel("rect", "class", "bar")) {
				st := attr(bar, "data-status")
				n, _ := strconv.Atoi(attr(bar, "data-runs"))
				f, _ := strconv.Atoi(attr(bar, "data-failed"))
				runs, failures = runs+n, failures+f
				if severity(scheduler.Status(st)) > severity(scheduler.Status(worst)) {
					worst = st
				}
				title := text(one(t, "bar title", find(bar, sel("title"))))
				href := attr(bar.Parent, "href")
				if !hasClass(bar, "st-"+st) || bar.Parent.Data != "a" || !strings.Contains(title, st) {
					t.Errorf("lane %s: bar %v in %v, title %q: want its status as class and text", job, bar.Attr, bar.Parent.Attr, title)
				}
				switch {
				case n == 1 && (!strings.HasPrefix(href, "/runs/"+job+"/") || !strings.Contains(title, "attempt ") || !strings.Contains(title, "test-1")):
					t.Errorf("lane %s: a run's bar links to %q, title %q", job, href, title)
				case n > 1 && (href != "/runs?job="+job || !strings.Contains(title, fmt.Sprintf("%d runs, %d failed", n, f))):
					t.Errorf("lane %s: a bar of %d runs links to %q, title %q", job, n, href, title)
				}
			}
			var wantFailed int
			wantWorst := ""
			for _, r := range byJob[job] {
				if r.Status == scheduler.StatusFailed {
					wantFailed++
				}
				if severity(r.Status) > severity(scheduler.Status(wantWorst)) {
					wantWorst = string(r.Status)
				}
			}
			if runs != len(byJob[job]) || failures != wantFailed || worst != wantWorst {
				t.Errorf("lane %s: bars of %d runs, %d failed, worst %s; want %d, %d, %s", job, runs, failures, worst, len(byJob[job]), wantFailed, wantWorst)
			}
		}
	})

	t.Run("error text and table names holding markup and a newline are shown as text", func(t *testing.T) {
		for _, path := range []string{"/", "/runs?job=flaky", "/runs/flaky/" + l.latest.Key(), "/tables"} {
			page := b.get(path)
			if strings.Contains(page.body, "<script>") {
				t.Errorf("%s: the page holds a <script> tag", path)
			}
			if len(find(page.doc, sel("script", "src", ""))) != 0 {
				t.Errorf("%s: a script element came from data", path)
			}
		}
		page := b.get("/runs/flaky/" + l.latest.Key())
		failed, _, err := l.h.Get(context.Background(), "flaky", l.latest.Key())
		if err != nil || !strings.Contains(failed.Error, "<script>alert(1)</script>") {
			t.Fatalf("the failed record: %+v %v", failed, err)
		}
		if pre := one(t, "error text", find(page.doc, sel("pre", "class", "error-text"))); text(pre) != failed.Error {
			t.Errorf("run page error %q, want %q", text(pre), failed.Error)
		}
		runs := b.get("/runs?job=flaky&status=failed")
		row := one(t, "failed row", find(runs.doc, sel("tr", "data-status", "failed")))
		if got := text(one(t, "error cell", find(row, sel("td", "class", "error")))); got != failed.Error {
			t.Errorf("runs page error cell %q: want the first line, as text", got)
		}
		tables := b.get("/tables")
		if len(find(tables.doc, sel("tr", "data-table", "<script>x</script>\nnext"))) != 1 {
			t.Errorf("the table named with markup is not listed by its name as text:\n%s", tables.body)
		}
	})

	t.Run("the runs page filters by job and by status", func(t *testing.T) {
		page := b.get("/runs")
		form := one(t, "filter form", find(page.doc, sel("form", "method", "get")))
		for _, name := range []string{"job", "status"} {
			s := one(t, "select "+name, find(form, sel("select", "name", name)))
			one(t, "label of "+name, find(form, sel("label", "for", attr(s, "id"))))
		}
		cases := []struct {
			query string
			want  func(r scheduler.Record) bool
		}{
			{"", func(scheduler.Record) bool { return true }},
			{"?job=flaky", func(r scheduler.Record) bool { return r.Job == "flaky" }},
			{"?status=succeeded", func(r scheduler.Record) bool { return r.Status == scheduler.StatusSucceeded }},
			{"?job=flaky&status=failed", func(r scheduler.Record) bool { return r.Job == "flaky" && r.Status == scheduler.StatusFailed }},
			{"?job=load&status=failed", func(r scheduler.Record) bool { return false }},
		}
		for _, c := range cases {
			page := b.get("/runs" + c.query)
			table := one(t, "table#runs", find(page.doc, sel("table", "id", "runs")))
			var got, want []string
			for _, tr := range find(table, func(n *html.Node) bool { return n.Data == "tr" && attr(n, "data-job") != "" }) {
				got = append(got, attr(tr, "data-job")+"/"+attr(tr, "data-interval")+"/"+attr(tr, "data-status"))
			}
			for _, r := range recs {
				if c.want(r) {
					want = append(want, r.Job+"/"+r.Interval+"/"+string(r.Status))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("/runs%s: rows %v, want %v", c.query, got, want)
			}
		}
	})

	t.Run("a run's page shows its record and summary", func(t *testing.T) {
		page := b.get("/runs/load/" + l.latest.Key())
		if page.code != 200 {
			t.Fatalf("%d", page.code)
		}
		summary := text(one(t, "pre#summary", find(page.doc, sel("pre", "id", "summary"))))
		if !strings.Contains(summary, "\n  \"files\": 3,\n  \"note\": ") {
			t.Errorf("summary %q: want it indented", summary)
		}
		if missing := b.get("/runs/load/20000101T000000Z"); missing.code != 404 || !strings.Contains(missing.body, "never ran") {
			t.Errorf("a run that never ran: %d", missing.code)
		}
	})

	t.Run("a table that cannot be described shows why in the page", func(t *testing.T) {
		page := b.get("/tables/" + url.PathEscape("<script>x</script>\nnext"))
		if page.code != 200 {
			t.Fatalf("%d", page.code)
		}
		detail := one(t, "section#table-detail", find(page.doc, sel("section", "id", "table-detail")))
		if e := one(t, "error line", find(detail, sel("p", "class", "error"))); !strings.Contains(text(e), "nothing") {
			t.Errorf("error line %q", text(e))
		}
	})

	t.Run("every response carries the security headers", func(t *testing.T) {
		for _, path := range []string{"/", "/runs", "/runs/load/" + l.latest.Key(), "/tables", "/ui/login", "/static/console.css", "/tables/nope"} {
			h := b.get(path).header
			for k, v := range map[string]string{"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"} {
				if h.Get(k) != v {
					t.Errorf("%s: %s %q, want %q", path, k, h.Get(k), v)
				}
			}
		}
		refused := b.post("/ui/jobs/load/run", url.Values{}, nil)
		if refused.code != 403 || refused.header.Get("Content-Security-Policy") == "" {
			t.Errorf("a refused POST: %d, CSP %q", refused.code, refused.header.Get("Content-Security-Policy"))
		}
	})
}

// Without a token (loopback only) an action needs the page's CSRF token
// and is refused from another site's page; with both it cancels and
// starts runs.
func TestActionsWithoutToken(t *testing.T) {
	l := newLake(t)
	b := l.serveConsole(t, "")
	_, here := b.apiRuns()
	if len(here) != 1 {
		t.Fatalf("running here: %v", here)
	}
	id := here[0].ID
	if r := b.post("/ui/runs/"+id+"/cancel", url.Values{}, nil); r.code != http.StatusForbidden || !strings.Contains(r.body, "CSRF") {
		t.Fatalf("cancel without CSRF: %d\n%s", r.code, r.body)
	}
	if r := b.post("/ui/jobs/load/run", url.Values{"csrf": {"00"}}, nil); r.code != http.StatusForbidden {
		t.Fatalf("run with a wrong CSRF token: %d", r.code)
	}
	csrf := b.csrf("/runs")
	if r := b.post("/ui/runs/"+id+"/cancel", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}); r.code != http.StatusForbidden {
		t.Fatalf("cancel from another site: %d", r.code)
	}
	if other := newBrowser(t, b.base); other.post("/ui/runs/"+id+"/cancel", url.Values{"csrf": {csrf}}, nil).code != http.StatusForbidden {
		t.Fatalf("another browser's CSRF token (no cookie) was taken")
	}
	if _, here := b.apiRuns(); len(here) != 1 {
		t.Fatalf("a refused cancel stopped the run")
	}
	page := b.get("/runs?status=running")
	form := one(t, "cancel form", find(page.doc, sel("form", "class", "action-cancel")))
	if attr(form, "action") != "/ui/runs/"+id+"/cancel" {
		t.Fatalf("cancel form action %q", attr(form, "action"))
	}
	r := b.post(attr(form, "action"), url.Values{"csrf": {csrf}, "back": {"/runs"}}, nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/runs" {
		t.Fatalf("cancel: %d %q", r.code, r.header.Get("Location"))
	}
	<-l.stopped
	<-l.idle
	if rec, _, err := l.h.Get(context.Background(), "block", l.latest.Key()); err != nil || rec.Status != scheduler.StatusCancelled {
		t.Fatalf("the cancelled run's record: %+v %v", rec, err)
	}
	if flash := b.get("/runs"); !strings.Contains(text(one(t, "flash", find(flash.doc, sel("p", "class", "flash")))), "Cancelled run "+id) {
		t.Errorf("no message after the cancel")
	}

	r = b.post("/ui/jobs/block/run", url.Values{"csrf": {b.csrf("/")}}, nil)
	if r.code != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Fatalf("run now: %d %q\n%s", r.code, r.header.Get("Location"), r.body)
	}
	again := <-l.started
	_, here = b.apiRuns()
	if len(here) != 1 || here[0].ID != again || here[0].Job != "block" || here[0].Attempt != 2 {
		t.Fatalf("/api/runs running here after run now: %+v", here)
	}
	if r := b.post("/ui/jobs/nope/run", url.Values{"csrf": {b.csrf("/")}}, nil); r.code != http.StatusNotFound {
		t.Errorf("run of an unknown job: %d", r.code)
	}
}

// With a token, the pages are read-only until a login with it: no
// action forms and a notice, and a POST without the session is refused;
// a wrong token opens no session; the right one does, and its actions
// work, but never from another site's page.
func TestActionsWithToken(t *testing.T) {
	const token = "s3cret-token"
	l := newLake(t)
	b := l.serveConsole(t, token)
	_, here := b.apiRuns()
	id := here[0].ID

	page := b.get("/")
	notice := one(t, "#readonly", find(page.doc, sel("p", "id", "readonly")))
	if attr(notice, "role") != "status" || !strings.Contains(text(notice), "Log in") {
		t.Errorf("read-only notice: %v %q", notice.Attr, text(notice))
	}
	if n := len(find(page.doc, sel("form", "class", "action-run"))) + len(find(b.get("/runs").doc, sel("form", "class", "action-cancel"))); n != 0 {
		t.Errorf("%d action forms before login", n)
	}
	csrf := b.csrf("/ui/login")
	if r := b.post("/ui/runs/"+id+"/cancel", url.Values{"csrf": {csrf}}, nil); r.code != http.StatusForbidden || !strings.Contains(r.body, "read-only") {
		t.Errorf("cancel without a session: %d\n%s", r.code, r.body)
	}
	login := one(t, "login form", find(b.get("/ui/login").doc, sel("form", "action", "/ui/login")))
	pw := one(t, "password field", find(login, sel("input", "type", "password")))
	if l := one(t, "its label", find(login, sel("label", "for", attr(pw, "id")))); text(l) != "Token" {
		t.Errorf("password label %q", text(l))
	}
	for _, wrong := range []string{"", "s3cret", token + "x"} {
		r := b.post("/ui/login", url.Values{"csrf": {csrf}, attr(pw, "name"): {wrong}}, nil)
		if r.code != http.StatusForbidden || len(r.header.Values("Set-Cookie")) > 0 && strings.Contains(strings.Join(r.header.Values("Set-Cookie"), ";"), sessionCookie+"=") {
			t.Errorf("login with %q: %d %v", wrong, r.code, r.header.Values("Set-Cookie"))
		}
	}
	if r := b.post("/ui/login", url.Values{attr(pw, "name"): {token}}, nil); r.code != http.StatusForbidden {
		t.Errorf("login without CSRF: %d", r.code)
	}
	r := b.post("/ui/login", url.Values{"csrf": {csrf}, attr(pw, "name"): {token}}, nil)
	if r.code != http.StatusSeeOther {
		t.Fatalf("login: %d\n%s", r.code, r.body)
	}
	set := strings.Join(r.header.Values("Set-Cookie"), "\n")
	for _, want := range []string{sessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(set, want) {
			t.Errorf("session cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, token) {
		t.Errorf("the session cookie holds the token")
	}

	page = b.get("/runs")
	if len(find(page.doc, sel("p", "id", "readonly"))) != 0 {
		t.Errorf("read-only after login")
	}
	form := one(t, "cancel form", find(page.doc, sel("form", "class", "action-cancel")))
	csrf = b.csrf("/runs")
	if r := b.post(attr(form, "action"), url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}); r.code != http.StatusForbidden {
		t.Fatalf("cancel from http://evil.example with a session and CSRF: %d", r.code)
	}
	if _, here := b.apiRuns(); len(here) != 1 {
		t.Fatalf("a refused cancel stopped the run")
	}
	if r := b.post(attr(form, "action"), url.Values{"csrf": {csrf}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("cancel with a session: %d\n%s", r.code, r.body)
	}
	<-l.stopped
	<-l.idle
	if r := b.post("/ui/jobs/block/run", url.Values{"csrf": {csrf}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("run now with a session: %d\n%s", r.code, r.body)
	}
	<-l.started
	if r := b.post("/ui/logout", url.Values{"csrf": {csrf}}, nil); r.code != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.code)
	}
	if len(find(b.get("/").doc, sel("p", "id", "readonly"))) != 1 {
		t.Errorf("not read-only after logout")
	}
}
