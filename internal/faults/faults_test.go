package faults_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/faults"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func localStore(t *testing.T) cloud.Store {
	t.Helper()
	st, err := cloud.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func putBytes(ctx context.Context, st cloud.Store, key string, b []byte, opts cloud.PutOptions) error {
	_, err := st.Put(ctx, key, bytes.NewReader(b), int64(len(b)), opts)
	return err
}

func readAll(ctx context.Context, st cloud.Store, key string) ([]byte, error) {
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// The same seed makes the same decisions for the same calls, in whatever
// order they come; another seed makes others.
func TestSeedDecidesTheFaults(t *testing.T) {
	ctx := context.Background()
	run := func(seed uint64, reverse bool) string {
		in := faults.New(faults.Config{Seed: seed, Rates: map[faults.Kind]float64{faults.ServerError: 0.3}})
		st := in.Store(localStore(t))
		keys := make([]string, 40)
		for i := range keys {
			keys[i] = fmt.Sprintf("k/%02d", i)
		}
		if reverse {
			for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
		failed := map[string]bool{}
		for _, k := range keys {
			failed[k] = putBytes(ctx, st, k, []byte("x"), cloud.PutOptions{}) != nil
		}
		var b strings.Builder
		for i := range 40 {
			if failed[fmt.Sprintf("k/%02d", i)] {
				fmt.Fprintf(&b, "%d,", i)
			}
		}
		if got := in.Counts()[faults.ServerError]; got != int64(strings.Count(b.String(), ",")) {
			t.Errorf("counted %d server errors, saw %s", got, b.String())
		}
		return b.String()
	}
	a, b, c := run(7, false), run(7, true), run(8, false)
	if a != b {
		t.Errorf("seed 7 failed %s in order and %s reversed", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 failed the same puts %s", a)
	}
	if n := strings.Count(a, ","); n < 4 || n > 24 {
		t.Errorf("a rate of 0.3 failed %d of 40 puts", n)
	}
}

// A conditional Put that times out after it landed is there, and its
// error says the outcome is unknown, never a plain failure.
func TestTimeoutAfterLands(t *testing.T) {
	ctx := context.Background()
	base := localStore(t)
	in := faults.New(faults.Config{Seed: 1, Rates: map[faults.Kind]float64{faults.TimeoutAfter: 1}})
	st := in.Store(base)
	err := putBytes(ctx, st, "_sluice/v/1.json", []byte("one"), cloud.PutOptions{IfAbsent: true})
	if !errors.Is(err, cloud.ErrOutcomeUnknown) || !errors.Is(err, faults.ErrInjected) {
		t.Fatalf("Put: %v; want an unknown outcome", err)
	}
	if got, err := readAll(ctx, base, "_sluice/v/1.json"); err != nil || string(got) != "one" {
		t.Errorf("stored %q, %v; the write landed", got, err)
	}
	err = putBytes(ctx, st, "data/a.parquet", []byte("a"), cloud.PutOptions{})
	if err == nil || errors.Is(err, cloud.ErrOutcomeUnknown) {
		t.Errorf("unconditional Put: %v; want a timeout", err)
	}
	if _, err := base.Stat(ctx, "data/a.parquet"); err != nil {
		t.Errorf("Stat: %v; the write landed", err)
	}
}

// ENOSPC and EIO name the file and match the errno.
func TestDiskFaultsNameTheFile(t *testing.T) {
	ctx := context.Background()
	base := localStore(t)
	for kind, errno := range map[faults.Kind]syscall.Errno{faults.NoSpace: syscall.ENOSPC, faults.IOError: syscall.EIO} {
		in := faults.New(faults.Config{Seed: 1, Rates: map[faults.Kind]float64{kind: 1}})
		err := putBytes(ctx, in.Store(base), "p/f.parquet", []byte("x"), cloud.PutOptions{})
		if !errors.Is(err, errno) {
			t.Errorf("%s: %v; want %v", kind, err, errno)
		}
		if err != nil && !strings.Contains(err.Error(), base.URL("p/f.parquet")) {
			t.Errorf("%s: %q does not name the file", kind, err)
		}
		if _, err := base.Stat(ctx, "p/f.parquet"); !errors.Is(err, cloud.ErrNotFound) {
			t.Errorf("%s: Stat: %v; nothing was written", kind, err)
		}
	}
}

// With MaxInARow, a key faulted that many times in a row passes on the
// next call, and the run starts again after it; other keys keep their own.
func TestMaxInARowLetsTheNextCallThrough(t *testing.T) {
	ctx := context.Background()
	base := localStore(t)
	in := faults.New(faults.Config{Seed: 1, MaxInARow: 2, Rates: map[faults.Kind]float64{faults.IOError: 1}})
	st := in.Store(base)
	var got []bool
	for range 6 {
		got = append(got, putBytes(ctx, st, "p/a", []byte("x"), cloud.PutOptions{}) == nil)
	}
	if want := []bool{false, false, true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("puts of one key succeeded %v; want %v", got, want)
	}
	if err := putBytes(ctx, st, "p/b", []byte("x"), cloud.PutOptions{}); !errors.Is(err, syscall.EIO) {
		t.Errorf("first put of another key: %v; want EIO", err)
	}
	if n := in.Counts()[faults.IOError]; n != 5 {
		t.Errorf("%d faults counted; want 5", n)
	}
}

// A listing misses a just-written key; a truncated read ends in
// io.ErrUnexpectedEOF.
func TestStaleListAndTruncatedRead(t *testing.T) {
	ctx := context.Background()
	base := localStore(t)
	if err := putBytes(ctx, base, "old", []byte("0123456789"), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	in := faults.New(faults.Config{Seed: 1, Rates: map[faults.Kind]float64{faults.StaleList: 1, faults.TruncatedRead: 1}})
	st := in.Store(base)
	if err := putBytes(ctx, st, "new", []byte("x"), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := st.List(ctx, "", func(o cloud.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "old" {
		t.Errorf("listed %v; want the just-written key missed", keys)
	}
	if _, err := readAll(ctx, st, "old"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read: %v; want io.ErrUnexpectedEOF", err)
	}
	if c := in.Counts(); c[faults.StaleList] != 1 || c[faults.TruncatedRead] != 1 {
		t.Errorf("counts %v", c)
	}
}

// Through Transport, each SDK retries 500s, throttling and timeouts, and
// settles creates whose every answer was lost by reading them back.
func TestTransportUnderTheSDKs(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			loc := testenv.Location(t, kind)
			direct, err := cloud.Open(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			open := func(rates map[faults.Kind]float64, attempts int) (cloud.Store, *faults.Injector) {
				in := faults.New(faults.Config{Seed: 3, Rates: rates, SlowDelay: time.Millisecond})
				c := &httpClient{in.Transport(nil)}
				st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: c.client(), MaxAttempts: attempts})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st, in
			}
			st, in := open(map[faults.Kind]float64{faults.ServerError: 0.2, faults.Throttle: 0.2, faults.TimeoutBefore: 0.1, faults.SlowRead: 0.2}, 10)
			for i := range 20 {
				key := fmt.Sprintf("r/%d", i)
				if err := putBytes(ctx, st, key, []byte(key), cloud.PutOptions{}); err != nil {
					t.Fatalf("Put %s: %v", key, err)
				}
				if got, err := readAll(ctx, st, key); err != nil || string(got) != key {
					t.Fatalf("Get %s: %q, %v", key, got, err)
				}
			}
			c := in.Counts()
			if c[faults.ServerError] == 0 || c[faults.Throttle] == 0 || c[faults.TimeoutBefore] == 0 {
				t.Errorf("faults %v; want each kind at least once in 40+ requests", c)
			}
			// One attempt, whose answer is lost: only reading back settles it.
			st, in = open(map[faults.Kind]float64{faults.TimeoutAfter: 1}, 1)
			if err := putBytes(ctx, st, "_sluice/v/1.json", []byte("ours"), cloud.PutOptions{IfAbsent: true}); err != nil {
				t.Fatalf("create whose answers were all lost: %v; reading back finds ours", err)
			}
			if in.Counts()[faults.TimeoutAfter] == 0 {
				t.Errorf("no answer was lost")
			}
			if got, err := readAll(ctx, direct, "_sluice/v/1.json"); err != nil || string(got) != "ours" {
				t.Errorf("stored %q, %v", got, err)
			}
		})
	}
}

// Proxy in front of the S3 server: a store pointed at it meets the
// faults and gets through them.
func TestProxyInFrontOfS3(t *testing.T) {
	ctx := context.Background()
	target, err := url.Parse(testenv.S3Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	in := faults.New(faults.Config{Seed: 5, Rates: map[faults.Kind]float64{faults.ServerError: 0.2, faults.TimeoutAfter: 0.3, faults.TruncatedRead: 0.1}})
	srv := httptest.NewServer(in.Proxy(target))
	defer srv.Close()
	loc := testenv.Location(t, testenv.S3)
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{MaxAttempts: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 30 {
		key := fmt.Sprintf("_sluice/v/%d.json", i)
		if err := putBytes(ctx, st, key, []byte(key), cloud.PutOptions{IfAbsent: true}); err != nil {
			t.Fatalf("Put %s: %v", key, err)
		}
	}
	in.SetEnabled(false)
	for i := range 30 {
		key := fmt.Sprintf("_sluice/v/%d.json", i)
		if got, err := readAll(ctx, st, key); err != nil || string(got) != key {
			t.Errorf("Get %s: %q, %v", key, got, err)
		}
	}
	if c := in.Counts(); c[faults.TimeoutAfter] == 0 {
		t.Errorf("faults %v", c)
	}
}

// A cut drops open connections and refuses new ones for a while; then
// connections go through again.
func TestTCPProxyCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := faults.NewTCPProxy("127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func() error {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("hi")); err != nil {
			return err
		}
		b := make([]byte, 2)
		_, err = io.ReadFull(c, b)
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	p.Cut(time.Hour)
	open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Errorf("an open connection survived the cut")
	}
	if err := echo(); err == nil {
		t.Errorf("a new connection went through during the cut")
	}
	p.Cut(0)
	if err := echo(); err != nil {
		t.Errorf("after the cut: %v", err)
	}
	if p.Cuts() != 2 {
		t.Errorf("Cuts() = %d", p.Cuts())
	}
}

type httpClient struct{ rt http.RoundTripper }

func (c *httpClient) client() *http.Client { return &http.Client{Transport: c.rt} }
