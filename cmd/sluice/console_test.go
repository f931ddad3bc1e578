package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/internal/browsertest"
)

// consoleToken is the token serve runs with in TestConsole: actions need
// a session, which logging in with it opens.
const consoleToken = "console-test-token"

// The console's four jobs, in the pipeline file's order.
var consoleJobs = []string{"ingest-events", "compact-events", "publish-events", "stream-clicks"}

// TestConsole drives serve's web console in headless Chromium, as an
// operator would, over a lake a real pipeline wrote: five hours of an
// ingest from landing files (one bad record quarantined), a compact
// after it that leaves one partition's small files alone, a publish that
// fails (no PostgreSQL listens on its port), and a Kafka ingest that was
// cancelled on an older interval and is running now (its broker hands
// out one record at a time). The pages must show what the JSON API
// says; the actions must work with a session and be refused without one
// and from another site's page.
//
// With SLUICE_SCREENSHOTS set to a folder, it saves a full-page PNG of
// each page there (scripts/screenshots.sh makes docs/console/ so).
func TestConsole(t *testing.T) {
	b := browsertest.Start(t) // first: without Chromium, fail at once
	l := newConsoleLake(t)
	adm := l.serve(t)
	op := b.NewTab(t, time.Minute)
	consoleLogin(t, op, adm)

	t.Run("jobs page lists every job with its last status", func(t *testing.T) {
		consoleJobsPage(t, op.For(t, 20*time.Second), adm)
	})
	t.Run("timeline accounts for every run of the last day", func(t *testing.T) {
		consoleTimeline(t, op.For(t, 20*time.Second), adm)
	})
	t.Run("runs page filters by job and by status", func(t *testing.T) {
		consoleRunsFilter(t, op.For(t, 20*time.Second), adm)
	})
	t.Run("run page shows a failed run's error", func(t *testing.T) {
		consoleFailedRun(t, op.For(t, 20*time.Second), adm)
	})
	t.Run("tables page and a table's page", func(t *testing.T) {
		consoleTables(t, op.For(t, 20*time.Second), adm)
	})
	t.Run("actions need a session and the console's own pages", func(t *testing.T) {
		consoleActions(t, b, adm)
	})
}

// consoleLake is the test's pipeline: its file, its lake, the landing
// folder and the Kafka cluster it reads, and the hours it ran.
type consoleLake struct {
	dir, config string
	lake        string
	// hours are the interval starts the history covers, oldest first:
	// the five hours before the current one.
	hours []time.Time
	// fetches counts the fetch requests the Kafka broker has had.
	fetches *atomic.Int64
}

// newConsoleLake writes the pipeline and its history: a backfill of the
// five last hours (ingest and compact succeed, publish fails), and a
// Kafka ingest of the oldest hour stopped with SIGTERM (cancelled).
func newConsoleLake(t *testing.T) *consoleLake {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Hour)
	l := &consoleLake{dir: dir, config: filepath.Join(dir, "pipeline.yaml"), lake: filepath.Join(dir, "lake")}
	for i := 5; i >= 1; i-- {
		l.hours = append(l.hours, now.Add(-time.Duration(i)*time.Hour))
	}
	land := filepath.Join(dir, "land")
	if err := os.MkdirAll(land, 0o755); err != nil {
		t.Fatal(err)
	}
	// One small file lands in each hour, so each interval's ingest takes
	// one and writes a file to each of two days; the last holds a record
	// whose event_id is no UUID. The compact job keeps one day in one
	// file; the other's five files are the table's small-file debt.
	for i, h := range l.hours {
		var b strings.Builder
		for j := 1; j <= 4; j++ {
			fmt.Fprintf(&b, `{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":%d,"event_time":"2024-05-0%dT10:00:00Z"}`+"\n",
				10*i+j, j, i+1, 1+j%2)
		}
		if i == len(l.hours)-1 {
			b.WriteString(`{"event_id":"not-a-uuid","list_id":9,"tally":1,"event_time":"2024-05-01T10:00:00Z"}` + "\n")
		}
		p := filepath.Join(land, fmt.Sprintf("part-%d.jsonl", i+1))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		at := h.Add(10 * time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// The schedule ticks on those hours and the current one only, so
	// serve has no tick to run while the test looks at it.
	var ticks []string
	for _, h := range append(slices.Clone(l.hours), now) {
		ticks = append(ticks, fmt.Sprint(h.Hour()))
	}
	schedule := "CRON_TZ=UTC 0 0 " + strings.Join(ticks, ",") + " * * *"
	brokers, fetches := trickleKafka(t, l.hours[0].Add(5*time.Minute))
	l.fetches = fetches
	// The locations are relative, as a user's pipeline beside its lake
	// would have them, and every command runs in dir: the pages show
	// lake/events, not the test's temporary folder.
	os.WriteFile(l.config, []byte(`lake: lake
tables:
  events:
    location: lake/events
    schema: "event_id:uuid,list_id:int64,tally:int32,event_time:timestamp"
    partition_by: day(event_time)
  clicks:
    location: lake/clicks
    schema: "click_id:int64,page:string,at:timestamp"
jobs:
  ingest-events:
    schedule: "`+schedule+`"
    ingest: {table: events, from: land, format: jsonl}
  compact-events:
    after: [ingest-events]
    compact: {table: events, min_input_files: 2, partition: date=2024-05-01}
  publish-events:
    after: [compact-events]
    publish: {table: events, to: "postgres://sluice@127.0.0.1:1/warehouse", as: events}
  stream-clicks:
    schedule: "`+schedule+`"
    ingest: {table: clicks, from: "kafka://`+brokers+`/clicks"}
`), 0o644)

	r := l.sluice(t, "backfill", "--config", "pipeline.yaml", "ingest-events",
		"--from", l.hours[0].Format(time.RFC3339), "--to", l.hours[len(l.hours)-1].Format(time.RFC3339))
	if r.code != 1 || !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("backfill: exit %d, want 1 for the publish that cannot connect: %s", r.code, r.stderr)
	}
	l.cancelledRun(t)
	return l
}

// sluice runs the built binary in the pipeline's folder, as a user
// there would.
func (l *consoleLake) sluice(t *testing.T, args ...string) result {
	t.Helper()
	return runSluice(t, l.dir, os.Environ(), args...)
}

// cancelledRun runs stream-clicks for the oldest hour until its record
// says running and it fetches from the broker, then stops it as an
// operator's Ctrl-C would. A stop before its first fetch could land while
// the run opens its tables, whose error names the store's absolute
// folder, which no page of the console may show (screenshot).
func (l *consoleLake) cancelledRun(t *testing.T) {
	fetched := l.fetches.Load()
	cmd := exec.Command(sluiceBin, "run", "--config", "pipeline.yaml", "stream-clicks", "--at", l.hours[1].Format(time.RFC3339))
	cmd.Dir, cmd.Env = l.dir, os.Environ()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		recs := runsOf(t, mustSluice(t, "runs", "--config", l.config, "--job", "stream-clicks", "--json"))
		if len(recs) == 1 && recs[0]["status"] == "running" && l.fetches.Load() > fetched {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("stream-clicks never ran: %v", recs)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	recs := runsOf(t, mustSluice(t, "runs", "--config", l.config, "--job", "stream-clicks", "--json"))
	if len(recs) != 1 || recs[0]["status"] != "cancelled" {
		t.Fatalf("stream-clicks after SIGTERM: %v; want one cancelled run", recs)
	}
}

// trickleKafka starts a broker with a topic of 600 click records, all
// timestamped at ts, whose every fetch is answered after 200 ms with one
// record: an ingest of the topic keeps reading (and stays running) for
// two minutes. It returns the broker's address and a count of the fetch
// requests it has had.
func trickleKafka(t *testing.T, ts time.Time) (string, *atomic.Int64) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "clicks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 600 { // one produce each: one record a batch
		v := fmt.Sprintf(`{"click_id":%d,"page":"/p/%d","at":"%s"}`, i, i%7, ts.Format(time.RFC3339))
		if err := p.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v), Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	fetches := new(atomic.Int64)
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		fetches.Add(1)
		req := r.(*kmsg.FetchRequest)
		req.MaxBytes = 1
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				req.Topics[i].Partitions[j].PartitionMaxBytes = 1
			}
		}
		c.SleepControl(func() { time.Sleep(200 * time.Millisecond) })
		return nil, nil, false
	})
	return strings.Join(c.ListenAddrs(), ","), fetches
}

// consoleAdmin is a running serve: its address and what it logged.
type consoleAdmin struct {
	base string // http://127.0.0.1:PORT
	lake string
	dir  string // the pipeline's folder, which no page shows
	mu   sync.Mutex
	logs []string
}

// serve starts sluice serve with the token on a free loopback port and
// waits until its catch-up run of stream-clicks is running; the test's
// end stops it with SIGTERM.
func (l *consoleLake) serve(t *testing.T) *consoleAdmin {
	cmd := exec.Command(sluiceBin, "serve", "--config", "pipeline.yaml", "--listen", "127.0.0.1:0", "--token", consoleToken,
		"--log-format", "json", "--grace", "1s")
	cmd.Dir, cmd.Env = l.dir, os.Environ()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	adm := &consoleAdmin{lake: l.lake, dir: l.dir}
	listen, read := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "serving" {
				listen <- fmt.Sprint(m["listen"])
			}
			adm.mu.Lock()
			adm.logs = append(adm.logs, sc.Text())
			adm.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select { // its log ends when it does
		case <-read:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-read
		}
		cmd.Wait()
		if t.Failed() {
			adm.mu.Lock()
			t.Logf("serve's log:\n%s", strings.Join(adm.logs, "\n"))
			adm.mu.Unlock()
		}
	})
	select {
	case addr := <-listen:
		adm.base = "http://" + addr
	case <-time.After(30 * time.Second):
		t.Fatal("serve logged no serving line within 30 s")
	}
	adm.waitFor(t, "the catch-up run of stream-clicks", func(a apiRuns) bool { return a.runningHere("stream-clicks") != nil })
	return adm
}

// apiRun is a run record as GET /api/runs gives it.
type apiRun struct {
	Job      string `json:"job"`
	Interval string `json:"interval"`
	Status   string `json:"status"`
	ID       string `json:"id"`
	Attempt  int    `json:"attempt"`
	Error    string `json:"error"`
}

type apiRuns struct {
	Runs        []apiRun `json:"runs"`
	RunningHere []apiRun `json:"running_here"`
}

func (a apiRuns) runningHere(job string) *apiRun {
	for i := range a.RunningHere {
		if a.RunningHere[i].Job == job {
			return &a.RunningHere[i]
		}
	}
	return nil
}

// of returns job's records, newest interval first.
func (a apiRuns) of(job string) []apiRun {
	var out []apiRun
	for _, r := range a.Runs {
		if r.Job == job {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y apiRun) int { return strings.Compare(y.Interval, x.Interval) })
	return out
}

// runs reads GET /api/runs with query q ("" for all).
func (adm *consoleAdmin) runs(t *testing.T, q string) apiRuns {
	t.Helper()
	resp, err := http.Get(adm.base + "/api/runs" + q)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a apiRuns
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/runs%s: %d %v", q, resp.StatusCode, err)
	}
	return a
}

// waitFor polls /api/runs until ok holds, for up to 20 s.
func (adm *consoleAdmin) waitFor(t *testing.T, what string, ok func(apiRuns) bool) apiRuns {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a := adm.runs(t, "")
		if ok(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s; /api/runs: %+v", what, a)
		}
	}
}

// screenshot saves the tab's page as NAME.png in $SLUICE_SCREENSHOTS,
// when that is set.
func screenshot(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin, name string) {
	t.Helper()
	// A landing checkpoint's key is its source's absolute URL, as ingest
	// records it: the one place a page may show the folder.
	var body string
	tab.Eval(`(() => { const b = document.body.cloneNode(true); b.querySelectorAll("table#checkpoints").forEach(e => e.remove()); return b.textContent })()`, &body)
	if strings.Contains(body, adm.dir) {
		t.Errorf("the %s page shows the test's folder %s:\n%s", name, adm.dir, body)
	}
	if dir := os.Getenv("SLUICE_SCREENSHOTS"); dir != "" {
		tab.Screenshot(filepath.Join(dir, name+".png"))
	}
}

// consoleLogin logs tab in through /ui/login, as an operator does: a
// wrong token is refused, serve's opens a session.
func consoleLogin(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	t.Helper()
	tab.Open(adm.base + "/ui/login")
	var label string
	tab.Eval(`(() => { const i = document.querySelector("input[type=password]"); return i && i.labels.length ? i.labels[0].textContent : "" })()`, &label)
	if !strings.Contains(label, "Token") {
		t.Fatalf("/ui/login: the password input's label is %q, want Token", label)
	}
	tab.Type("input[type=password]", "not-the-token")
	if code := tab.Click(`form[action="/ui/login"] button`); code != http.StatusForbidden {
		t.Errorf("login with a wrong token: status %d, want 403", code)
	}
	tab.Open(adm.base + "/ui/login")
	tab.Type("input[type=password]", consoleToken)
	if code := tab.Click(`form[action="/ui/login"] button`); code != http.StatusOK {
		t.Fatalf("login with serve's token: status %d at %s", code, tab.URL())
	}
	tab.Open(adm.base + "/")
	if tab.Count("#readonly") != 0 || tab.Count("form.action-run") != len(consoleJobs) {
		t.Fatalf("after login: %d #readonly, %d Run now forms; want none and one a job", tab.Count("#readonly"), tab.Count("form.action-run"))
	}
}

func consoleJobsPage(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	tab.Open(adm.base + "/")
	a := adm.runs(t, "")
	if got := tab.Text("h1"); got != "sluice" {
		t.Errorf("h1 %q, want sluice", got)
	}
	for _, nav := range []string{"/", "/runs", "/tables"} {
		if tab.Count(fmt.Sprintf(`nav a[href="%s"]`, nav)) != 1 {
			t.Errorf("no nav link to %s", nav)
		}
	}
	want := map[string]string{"ingest-events": "succeeded", "compact-events": "succeeded", "publish-events": "failed", "stream-clicks": "running"}
	got := map[string]string{}
	for _, job := range consoleJobs {
		if recs := a.of(job); len(recs) > 0 {
			got[job] = recs[0].Status // the newest interval's
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("/api/runs gives last statuses %v, want %v", got, want)
	}
	var jobs []string
	for _, row := range tab.Attrs("#jobs tr[data-job]") {
		jobs = append(jobs, row["data-job"])
	}
	if !slices.Equal(jobs, consoleJobs) {
		t.Errorf("job rows %v, want %v", jobs, consoleJobs)
	}
	for _, job := range consoleJobs {
		row := fmt.Sprintf(`#jobs tr[data-job="%s"]`, job)
		st := tab.Text(row + " td.status")
		if st != want[job] || !strings.Contains(" "+tab.Attr(row+" td.status", "class")+" ", " st-"+want[job]+" ") {
			t.Errorf("%s: status cell %q, class %q; want the text %s and the class st-%s", job, st, tab.Attr(row+" td.status", "class"), want[job], want[job])
		}
		if tab.Text(row+" td.kind") == "" || tab.Text(row+" td.schedule") == "" || tab.Text(row+" td.next") == "" {
			t.Errorf("%s: kind, schedule or next tick is empty", job)
		}
		strip := tab.Attrs(row + " ol.strip li.run a")
		if len(strip) != len(a.of(job)) {
			t.Errorf("%s: %d runs in its strip, /api/runs has %d", job, len(strip), len(a.of(job)))
		}
		for _, r := range a.of(job) {
			if tab.Count(fmt.Sprintf(`%s ol.strip li.run.st-%s a[href="/runs/%s/%s"]`, row, r.Status, job, r.Interval)) != 1 {
				t.Errorf("%s: no %s run of %s in its strip", job, r.Status, r.Interval)
			}
		}
		// A person tells the runs apart by colour too: each bar is
		// drawn in its status's colour (the li's, from its st- class).
		var offColour []string
		tab.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%q), a => [a.parentElement.className, getComputedStyle(a).backgroundColor, getComputedStyle(a.parentElement).color])
			.filter(([, bg, want]) => bg !== want).map(([cls, bg, want]) => cls + ": " + bg + ", not " + want)`, row+" ol.strip li.run a"), &offColour)
		if len(offColour) > 0 {
			t.Errorf("%s: strip bars not in their status's colour: %v", job, offColour)
		}
		if tab.Count(row+" svg.trend") != 1 {
			t.Errorf("%s: no trend", job)
		}
		if tab.Count(row+fmt.Sprintf(` form.action-run[method=post][action="/ui/jobs/%s/run"] input[type=hidden][name=csrf]`, job)) != 1 ||
			tab.Text(row+" form.action-run button") != "Run now" {
			t.Errorf("%s: no Run now form with its CSRF token", job)
		}
	}
	screenshot(t, tab, adm, "jobs")
}

// consoleTimeline compares the timeline's bars with /api/runs: every
// run of the lake (all of the last day) is counted by one bar of its
// job's lane. A run alone in its five minutes has its own bar, of its
// status, linking to its page; runs that started in the same five
// minutes (here, the backfill's, moments apart) share one, of their
// worst status, saying how many and how many failed, linking to the
// job's runs. Every bar can be seen and is in its status's colour.
func consoleTimeline(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	tab.Open(adm.base + "/")
	a := adm.runs(t, "")
	var lanes []string
	for _, g := range tab.Attrs("#timeline svg g.lane[data-job]") {
		lanes = append(lanes, g["data-job"])
	}
	slices.Sort(lanes)
	if want := slices.Sorted(slices.Values(consoleJobs)); !slices.Equal(lanes, want) {
		t.Errorf("timeline lanes %v, want one a job: %v", lanes, want)
	}
	// Visible is how many pixels of the bar's width the drawing shows;
	// Fill its colour, Want the colour of the status's text elsewhere on
	// the page ("" when no text has that status).
	type bar struct {
		Lane, Href, Status, Class, Title, Fill, Want string
		Runs, Failed                                 int
		Visible                                      float64
	}
	var bars []bar
	tab.Eval(`(() => {
		const svg = document.querySelector("#timeline svg").getBoundingClientRect();
		const colour = st => { const e = document.querySelector(".st-" + st + ":not(rect)"); return e ? getComputedStyle(e).color : ""; };
		return Array.from(document.querySelectorAll("#timeline svg a"), a => {
			const r = a.querySelector("rect.bar"), g = a.closest("g.lane");
			if (!r) return {Href: a.getAttribute("href") || ""};
			const b = r.getBoundingClientRect(), st = r.getAttribute("data-status") || "";
			return {Lane: g ? g.dataset.job : "", Href: a.getAttribute("href") || "", Status: st, Class: r.getAttribute("class") || "",
				Title: r.querySelector("title") ? r.querySelector("title").textContent : "",
				Runs: Number(r.dataset.runs), Failed: Number(r.dataset.failed),
				Fill: getComputedStyle(r).fill, Want: colour(st),
				Visible: Math.max(0, Math.min(b.right, svg.right) - Math.max(b.left, svg.left))};
		});
	})()`, &bars)
	severity := map[string]int{"succeeded": 1, "skipped": 2, "cancelled": 3, "running": 4, "upstream_failed": 5, "failed": 6}
	type tally struct {
		runs, failed int
		worst        string
	}
	got, want := map[string]tally{}, map[string]tally{}
	byHref := map[string]apiRun{}
	for _, r := range a.Runs {
		byHref["/runs/"+r.Job+"/"+r.Interval] = r
		w := want[r.Job]
		w.runs++
		if r.Status == "failed" || r.Status == "upstream_failed" {
			w.failed++
		}
		if severity[r.Status] > severity[w.worst] {
			w.worst = r.Status
		}
		want[r.Job] = w
	}
	for _, b := range bars {
		g := got[b.Lane]
		g.runs, g.failed = g.runs+b.Runs, g.failed+b.Failed
		if severity[b.Status] > severity[g.worst] {
			g.worst = b.Status
		}
		got[b.Lane] = g
		switch {
		case !strings.Contains(" "+b.Class+" ", " st-"+b.Status+" ") || !strings.Contains(b.Title, b.Status):
			t.Errorf("bar %s: data-status %q, class %q, title %q; want its status as class and in its title", b.Href, b.Status, b.Class, b.Title)
		case b.Runs == 1 && (byHref[b.Href].Status != b.Status || byHref[b.Href].Job != b.Lane):
			t.Errorf("a run's bar links to %s (%s, lane %s); /api/runs has %+v", b.Href, b.Status, b.Lane, byHref[b.Href])
		case b.Runs > 1 && (b.Href != "/runs?job="+b.Lane || !strings.Contains(b.Title, fmt.Sprintf("%d runs, %d failed", b.Runs, b.Failed))):
			t.Errorf("a bar of %d runs in lane %s links to %s, title %q; want the job's runs and its count", b.Runs, b.Lane, b.Href, b.Title)
		case b.Visible < 1:
			t.Errorf("bar %s: %.1f px of it inside the timeline's drawing; a person cannot see or click it", b.Href, b.Visible)
		case b.Want != "" && b.Fill != b.Want:
			t.Errorf("bar %s (%s): filled %s, the page's %s text is %s", b.Href, b.Status, b.Fill, b.Status, b.Want)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("the lanes' bars count runs, failures and worst statuses %+v; /api/runs has %+v", got, want)
	}
}

// consoleRunsFilter picks a job, then a status, in the runs page's form
// and submits it in the browser: the rows are the ones /api/runs gives
// for the same filter.
func consoleRunsFilter(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	tab.Open(adm.base + "/runs")
	if n, all := tab.Count("#runs tr[data-job]"), len(adm.runs(t, "").Runs); n != all {
		t.Errorf("/runs shows %d runs, /api/runs %d", n, all)
	}
	screenshot(t, tab, adm, "runs")
	for _, f := range []struct{ name, value string }{{"job", "publish-events"}, {"status", "failed"}, {"status", "cancelled"}} {
		tab.Open(adm.base + "/runs")
		sel := fmt.Sprintf(`form[method=get] select[name=%s]`, f.name)
		var set bool
		tab.Eval(fmt.Sprintf(`(() => { const s = document.querySelector(%q); if (!s || ![...s.options].some(o => o.value === %q)) return false; s.value = %q; return true })()`,
			sel, f.value, f.value), &set)
		if !set {
			t.Errorf("the runs form has no %s option %q", f.name, f.value)
			continue
		}
		if code := tab.Navigate(fmt.Sprintf(`document.querySelector(%q).form.requestSubmit()`, sel)); code != http.StatusOK {
			t.Errorf("filter %s=%s: status %d", f.name, f.value, code)
		}
		if u, err := url.Parse(tab.URL()); err != nil || u.Path != "/runs" || u.Query().Get(f.name) != f.value {
			t.Errorf("filter %s=%s: the form went to %s", f.name, f.value, tab.URL())
		}
		want := adm.runs(t, "?"+f.name+"="+f.value).Runs
		rows := tab.Attrs("#runs tr[data-job]")
		if len(rows) != len(want) || len(want) == 0 {
			t.Errorf("filter %s=%s: %d rows, /api/runs gives %d", f.name, f.value, len(rows), len(want))
		}
		for _, row := range rows {
			if row["data-"+f.name] != f.value {
				t.Errorf("filter %s=%s: a row of %s %s %s", f.name, f.value, row["data-job"], row["data-interval"], row["data-status"])
			}
		}
	}
}

// consoleFailedRun follows a failed publish's link from the runs page:
// its page shows the record's error.
func consoleFailedRun(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	failed := adm.runs(t, "?job=publish-events&status=failed").Runs
	if len(failed) == 0 || !strings.Contains(failed[0].Error, "connection refused") {
		t.Fatalf("/api/runs: failed publishes %+v; want errors naming the refused connection", failed)
	}
	r := failed[0]
	tab.Open(adm.base + "/runs?job=publish-events&status=failed")
	link := fmt.Sprintf(`#runs tr[data-job="publish-events"][data-interval="%s"] a[href="/runs/publish-events/%s"]`, r.Interval, r.Interval)
	if code := tab.Click(link); code != http.StatusOK {
		t.Fatalf("the failed run's page: status %d", code)
	}
	body := tab.Text("body")
	for _, want := range []string{"publish-events", "failed", "dial tcp 127.0.0.1:1: connect: connection refused", r.ID} {
		if !strings.Contains(body, want) {
			t.Errorf("the failed run's page does not show %q:\n%s", want, body)
		}
	}
	screenshot(t, tab, adm, "run")
}

// consoleTables follows the tables page's link to events: its page draws
// the file-size histogram and the debt chart, lists every version and
// the quarantine's one reason.
func consoleTables(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin) {
	tab.Open(adm.base + "/tables")
	for _, name := range []string{"events", "clicks"} {
		if tab.Count(fmt.Sprintf(`#tables a[href="/tables/%s"]`, name)) != 1 {
			t.Errorf("the tables page has no link to /tables/%s", name)
		}
	}
	screenshot(t, tab, adm, "tables")
	if code := tab.Click(`#tables a[href="/tables/events"]`); code != http.StatusOK {
		t.Fatalf("/tables/events: status %d", code)
	}
	for _, sel := range []string{"#table-detail", "svg#histogram", "svg#debt", "table#versions", "table#quarantine"} {
		if tab.Count(sel) != 1 {
			t.Errorf("/tables/events has no %s", sel)
		}
	}
	if tab.Count("svg#histogram rect") == 0 {
		t.Errorf("the histogram draws no bar")
	}
	// The debt is the day the compact job leaves alone, and only it.
	if debt := tab.Text("svg#debt"); !strings.Contains(debt, "date=2024-05-02") || strings.Contains(debt, "date=2024-05-01") {
		t.Errorf("the debt chart says %q; want date=2024-05-02's small files only", debt)
	}
	hist, _ := summaryOf(t, mustSluice(t, "history", filepath.Join(adm.lake, "events"), "--json"))["versions"].([]any)
	if n := tab.Count("table#versions tbody tr"); n != len(hist) || n == 0 {
		t.Errorf("%d rows in #versions, sluice history lists %d versions", n, len(hist))
	}
	reasons := tab.Texts("table#quarantine tbody tr")
	if len(reasons) != 1 || !strings.Contains(reasons[0], "event_id") || tab.Text("table#quarantine tbody tr td:last-child") != "1" {
		t.Errorf("quarantine reasons %q; want one, about event_id, counted 1", reasons)
	}
	screenshot(t, tab, adm, "table")
}

// consoleActions: a browser without a session sees no action forms and
// its POSTs are refused; logged in, Run now starts a run and Cancel
// cancels it; a page of another origin that posts to the console, with
// the session cookie and a valid CSRF token, is refused and starts
// nothing.
func consoleActions(t *testing.T, b *browsertest.Browser, adm *consoleAdmin) {
	tab := b.NewTab(t, time.Minute)
	for _, page := range []string{"/", "/runs"} {
		tab.Open(adm.base + page)
		if tab.Count("p#readonly") != 1 || tab.Count("form.action-run, form.action-cancel") != 0 {
			t.Errorf("%s without a session: %d #readonly, %d action forms; want the notice and no forms",
				page, tab.Count("p#readonly"), tab.Count("form.action-run, form.action-cancel"))
		}
	}
	before := adm.runs(t, "").of("publish-events")
	var code int
	tab.Eval(`fetch("/ui/jobs/publish-events/run", {method: "POST", body: new URLSearchParams({csrf: "x"})}).then(r => r.status)`, &code)
	if code != http.StatusForbidden {
		t.Errorf("a POST to /ui/jobs/publish-events/run without a session: status %d, want 403", code)
	}
	publishUnchanged(t, adm, before, "the POST without a session")

	consoleLogin(t, tab, adm)
	csrf := tab.Attr(`tr[data-job="publish-events"] form.action-run input[name=csrf]`, "value")
	if !slices.Contains(tab.Cookies(adm.base), "sluice_session") {
		t.Fatalf("after login the browser holds no session cookie for %s: %v", adm.base, tab.Cookies(adm.base))
	}
	// Another origin (another port of the same host) posts to the
	// console: the session cookie goes along, and the form even carries
	// this browser's CSRF token.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/ui/jobs/publish-events/run"><input type="hidden" name="csrf" value="%s"><button>Win a prize</button></form>`,
			adm.base, csrf)
	}))
	defer evil.Close()
	tab.Open(evil.URL)
	if code := tab.Click("form button"); code != http.StatusForbidden {
		t.Errorf("a form of %s posting to the console: status %d, want 403", evil.URL, code)
	}
	publishUnchanged(t, adm, before, "the cross-origin POST")

	// Cancel the catch-up run from the runs page.
	first := adm.runs(t, "").runningHere("stream-clicks")
	if first == nil {
		t.Fatal("stream-clicks is not running")
	}
	consoleCancel(t, tab, adm, *first)

	// Run now starts the cancelled interval again; cancel that one too.
	tab.Open(adm.base + "/")
	if code := tab.Click(`tr[data-job="stream-clicks"] form.action-run button`); code != http.StatusOK {
		t.Errorf("Run now: status %d at %s", code, tab.URL())
	}
	a := adm.waitFor(t, "the run Run now started", func(a apiRuns) bool {
		r := a.runningHere("stream-clicks")
		return r != nil && r.ID != first.ID
	})
	second := *a.runningHere("stream-clicks")
	if second.Interval != first.Interval || second.Attempt != first.Attempt+1 {
		t.Errorf("Run now ran %s attempt %d; want %s again, attempt %d", second.Interval, second.Attempt, first.Interval, first.Attempt+1)
	}
	consoleCancel(t, tab, adm, second)
}

// consoleCancel clicks Cancel on run's row of the runs page and waits
// until its record says cancelled.
func consoleCancel(t *testing.T, tab *browsertest.Tab, adm *consoleAdmin, run apiRun) {
	t.Helper()
	tab.Open(adm.base + "/runs")
	form := fmt.Sprintf(`#runs tr[data-job="stream-clicks"][data-interval="%s"][data-status="running"] form.action-cancel[method=post][action="/ui/runs/%s/cancel"]`, run.Interval, run.ID)
	if code := tab.Click(form + " button"); code != http.StatusOK {
		t.Errorf("Cancel: status %d at %s", code, tab.URL())
	}
	adm.waitFor(t, "run "+run.ID+" to be cancelled", func(a apiRuns) bool {
		for _, r := range a.Runs {
			if r.ID == run.ID {
				return r.Status == "cancelled" && a.runningHere("stream-clicks") == nil
			}
		}
		return false
	})
}

// publishUnchanged checks that publish-events' records are still before:
// nothing ran it again.
func publishUnchanged(t *testing.T, adm *consoleAdmin, before []apiRun, what string) {
	t.Helper()
	a := adm.runs(t, "")
	if after := a.of("publish-events"); !slices.Equal(after, before) || a.runningHere("publish-events") != nil {
		t.Errorf("%s ran publish-events: records %+v, before %+v", what, after, before)
	}
}
