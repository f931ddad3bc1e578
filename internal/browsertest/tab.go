package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Tab is one browser tab, bound to a test and a deadline: every method
// fails that test when the browser errs or the deadline passes. Selectors
// are CSS selectors, matched against the document as it is when the
// method runs: nothing waits for an element to appear, so a page that is
// loaded is read as it is, and an element that is absent is absent.
type Tab struct {
	t   testing.TB
	ctx context.Context // the tab's context, bounded by the deadline
	tab context.Context // the tab's context, unbounded
}

// For returns the same tab (its page, its cookies) bound to t with a
// fresh deadline timeout from now: a subtest's view of a shared tab.
func (p *Tab) For(t testing.TB, timeout time.Duration) *Tab {
	ctx, cancel := context.WithTimeout(p.tab, timeout)
	t.Cleanup(cancel)
	return &Tab{t: t, ctx: ctx, tab: p.tab}
}

// Open loads url and waits for its load event. It returns the HTTP status
// of the document.
func (p *Tab) Open(url string) int {
	p.t.Helper()
	resp, err := chromedp.Run(p.ctx, chromedp.NavigateResponse(url))
	if err != nil {
		p.t.Fatalf("open %s: %v", url, err)
	}
	return status(resp)
}

// Click clicks the first element sel matches, as a mouse would, and waits
// for the page the click leads to (a link followed, a form submitted). It
// returns that page's HTTP status. A click that loads no page fails at
// the deadline: use Eval for those.
func (p *Tab) Click(sel string) int {
	p.t.Helper()
	p.mustFind(sel)
	from := p.URL()
	resp, err := chromedp.RunResponse(p.ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("%s: click %s: %v", from, sel, err)
	}
	return status(resp)
}

// Navigate runs script, which makes the page load another (a form it
// submits, a location it sets), and waits for that page. It returns that
// page's HTTP status.
func (p *Tab) Navigate(script string) int {
	p.t.Helper()
	from := p.URL()
	resp, err := chromedp.RunResponse(p.ctx, chromedp.Evaluate[chromedp.Void](script))
	if err != nil {
		p.t.Fatalf("%s: run %q: %v", from, script, err)
	}
	return status(resp)
}

// Type focuses the first element sel matches and types text into it, key
// by key.
func (p *Tab) Type(sel, text string) {
	p.t.Helper()
	p.mustFind(sel)
	if err := chromedp.Do(p.ctx, chromedp.SendKeys(chromedp.CSS(sel), text)); err != nil {
		p.t.Fatalf("%s: type into %s: %v", p.URL(), sel, err)
	}
}

// Count returns how many elements sel matches.
func (p *Tab) Count(sel string) int {
	p.t.Helper()
	var n int
	p.Eval(fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(sel)), &n)
	return n
}

// Texts returns the text of every element sel matches, in document order,
// each with its runs of white space made one space and trimmed.
func (p *Tab) Texts(sel string) []string {
	p.t.Helper()
	var out []string
	p.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%s), e => e.textContent.replace(/\s+/g, " ").trim())`, jsString(sel)), &out)
	return out
}

// Text returns the text of the first element sel matches, as Texts gives
// it; no element fails the test.
func (p *Tab) Text(sel string) string {
	p.t.Helper()
	texts := p.Texts(sel)
	if len(texts) == 0 {
		p.t.Fatalf("%s: no element matches %s", p.URL(), sel)
	}
	return texts[0]
}

// Attrs returns the attributes of every element sel matches, in document
// order.
func (p *Tab) Attrs(sel string) []map[string]string {
	p.t.Helper()
	var out []map[string]string
	p.Eval(fmt.Sprintf(`Array.from(document.querySelectorAll(%s), e => Object.fromEntries(Array.from(e.attributes, a => [a.name, a.value])))`, jsString(sel)), &out)
	return out
}

// Attr returns attribute name of the first element sel matches ("" when
// that element has none); no element fails the test.
func (p *Tab) Attr(sel, name string) string {
	p.t.Helper()
	attrs := p.Attrs(sel)
	if len(attrs) == 0 {
		p.t.Fatalf("%s: no element matches %s", p.URL(), sel)
	}
	return attrs[0][name]
}

// Eval runs script in the page, waits for the promise it gives if it gives
// one, and decodes its value, as JSON, into out (nil: the value is
// ignored).
func (p *Tab) Eval(script string, out any) {
	p.t.Helper()
	if out == nil {
		if err := chromedp.Do(p.ctx, chromedp.Evaluate[chromedp.Void](script, chromedp.EvalAwaitPromise)); err != nil {
			p.t.Fatalf("run %q: %v", script, err)
		}
		return
	}
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]byte](script, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("run %q: %v", script, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		p.t.Fatalf("run %q: its value %s: %v", script, raw, err)
	}
}

// URL returns the address of the page the tab shows.
func (p *Tab) URL() string {
	p.t.Helper()
	u, err := chromedp.Run(p.ctx, chromedp.Location())
	if err != nil {
		p.t.Fatalf("read the tab's address: %v", err)
	}
	return u
}

// Cookies returns the names of the cookies the tab would send to url.
func (p *Tab) Cookies(url string) []string {
	p.t.Helper()
	res, err := chromedp.Call(p.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		p.t.Fatalf("read the cookies for %s: %v", url, err)
	}
	var names []string
	for _, c := range res.Cookies {
		names = append(names, c.Name)
	}
	return names
}

// Screenshot saves a PNG of the whole page (as tall as the page is,
// ViewportWidth wide) to path, making its folder.
func (p *Tab) Screenshot(path string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("%s: screenshot: %v", p.URL(), err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("write screenshot %s: %v", path, err)
	}
}

func (p *Tab) mustFind(sel string) {
	p.t.Helper()
	if p.Count(sel) == 0 {
		p.t.Fatalf("%s: no element matches %s", p.URL(), sel)
	}
}

// jsString quotes s as a JavaScript string literal (JSON's is one).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func status(resp *network.Response) int {
	if resp == nil {
		return 0
	}
	return int(resp.Status)
}
