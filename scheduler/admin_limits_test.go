package scheduler

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The admin server cuts off a client that never finishes its headers
// (slowloris) and refuses a body over its limit, with or without a
// Content-Length.
func TestAdminLimits(t *testing.T) {
	p, h, kinds := serveLake(t, t.TempDir(), "", nil)
	s := &Server{Runner: &Runner{Pipeline: p, Kinds: kinds, History: h}}
	a := &Admin{Server: s, Limits: AdminLimits{ReadHeaderTimeout: 200 * time.Millisecond, MaxBodyBytes: 1024}}
	hs := a.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()

	// Half a request line's headers, then nothing: the server closes.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: sluice\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on the test, not the assertion
	if _, err := io.ReadAll(c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a client that never ends its headers was not cut off")
		}
	}

	// Too large a body: refused by its length, and by reading it.
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(strings.Repeat("x", 4096))
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		resp, err := http.Post(base+"/api/jobs/load/run", "text/plain", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a 4 KiB body (chunked %v) over a 1 KiB limit: status %d, want 413", chunked, resp.StatusCode)
		}
	}
	// Within the limits the API answers.
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || line != "ok\n" {
		t.Errorf("healthz: %d %q", resp.StatusCode, line)
	}
}
