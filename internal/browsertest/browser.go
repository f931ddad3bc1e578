package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Viewport is the size, in CSS pixels, of every tab's page: 1280 wide,
// the width the screenshots in docs/ are taken at. A full-page screenshot
// is as tall as the page.
const (
	ViewportWidth  = 1280
	ViewportHeight = 800
)

// EnvChromium names a Chromium or Chrome binary to use instead of
// "chromium" on PATH.
const EnvChromium = "SLUICE_CHROMIUM"

// startTimeout bounds how long Chromium may take to start and open its
// first tab. A cold start on a busy 2-core machine takes a few seconds.
const startTimeout = 60 * time.Second

// Browser is one headless Chromium process, stopped when the test that
// started it ends.
type Browser struct {
	ctx context.Context // the browser's own chromedp context, never bounded
	out *lockedBuffer   // what Chromium printed, for a failure's message
}

// ExecPath returns the Chromium binary the tests run: $SLUICE_CHROMIUM,
// else "chromium" on PATH. The error is one line that says how to
// install it.
func ExecPath() (string, error) {
	if p := os.Getenv(EnvChromium); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvChromium, p, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", errors.New("the browser tests need Chromium and there is no chromium on PATH: `make deps` installs it (Debian's chromium package), or set " + EnvChromium + " to a Chromium or Chrome binary")
	}
	return p, nil
}

// Start runs a headless Chromium for the rest of t (and its subtests).
// A missing browser fails t at once, with the line ExecPath gives.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := ExecPath()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(ViewportWidth, ViewportHeight),
		chromedp.CombinedOutput(out),
		// The pages are drawn in software: no GPU process to start.
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Do starts the process; its context must not be bounded (a
	// deadline there would end the browser), so the wait is bounded here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		err = fmt.Errorf("no answer within %s", startTimeout)
	}
	if err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start %s: %v%s", path, err, out.tail())
	}
	return &Browser{ctx: ctx, out: out}
}

// NewTab opens a tab in a browser context of its own (no cookies shared
// with any other tab), closed when t ends. Every call on it fails t once
// timeout has passed.
func (b *Browser) NewTab(t testing.TB, timeout time.Duration) *Tab {
	t.Helper()
	tabCtx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(tabCtx, chromedp.EmulateViewport(ViewportWidth, ViewportHeight)) }()
	var err error
	select {
	case err = <-opened:
	case <-time.After(timeout):
		err = fmt.Errorf("no answer within %s", timeout)
	}
	if err != nil {
		cancel()
		t.Fatalf("open a tab: %v%s", err, b.out.tail())
	}
	return (&Tab{tab: tabCtx}).For(t, timeout)
}

// lockedBuffer keeps what Chromium prints; the allocator writes it from
// its own goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 64<<10 {
		l.buf.Reset() // only the end matters
	}
	return l.buf.Write(p)
}

// tail returns the last lines Chromium printed, as the end of an error
// message ("" when it printed nothing).
func (l *lockedBuffer) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.buf.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "\nChromium printed:\n" + strings.Join(lines, "\n")
}
