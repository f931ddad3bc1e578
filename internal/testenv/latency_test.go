package testenv_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Through a Latency transport, every request to the S3 test server takes
// at least the delay, a large body moves no faster than the cap each way,
// and the requests are counted by the store operation they are. (The
// elapsed times are lower bounds of real sleeps, not a measure of speed.)
func TestLatencyDelaysCapsAndCountsRequests(t *testing.T) {
	ctx := context.Background()
	o := testenv.LatencyOptions{Delay: 40 * time.Millisecond, ReadBytesPerSecond: 16 << 20, WriteBytesPerSecond: 16 << 20}
	lat, err := testenv.NewLatency(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lat.CloseIdleConnections()
	st, err := cloud.OpenWithOptions(ctx, testenv.Location(t, testenv.S3), cloud.Options{HTTPClient: lat.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	timed := func(what string, least time.Duration, f func() error) {
		t.Helper()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if took := time.Since(start); took < least {
			t.Errorf("%s took %v; want at least %v", what, took, least)
		}
	}
	const size = 4 << 20 // 250 ms at 16 MiB/s
	body := bytes.Repeat([]byte("sluice latency "), size/15+1)[:size]
	transfer := time.Duration(float64(size) / float64(16<<20) * float64(time.Second))
	timed("a small put", o.Delay, func() error {
		_, err := st.Put(ctx, "small", bytes.NewReader([]byte("x")), 1, cloud.PutOptions{})
		return err
	})
	timed("a 4 MiB put", o.Delay+transfer, func() error {
		_, err := st.Put(ctx, "big", bytes.NewReader(body), size, cloud.PutOptions{})
		return err
	})
	timed("a 4 MiB get", o.Delay+transfer, func() error {
		rc, _, err := st.Get(ctx, "big")
		if err != nil {
			return err
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err == nil && !bytes.Equal(got, body) {
			t.Errorf("read back %d bytes that differ from the %d written", len(got), len(body))
		}
		return err
	})
	timed("a list", o.Delay, func() error {
		return st.List(ctx, "", func(cloud.ObjectInfo) error { return nil })
	})
	timed("a stat", o.Delay, func() error {
		_, err := st.Stat(ctx, "small")
		return err
	})
	timed("a delete", o.Delay, func() error { return st.Delete(ctx, "small") })

	c := lat.Counts()
	want := testenv.RequestCounts{Get: 1, List: 1, Put: 2, Head: 1, Delete: 1}
	if c.Get != want.Get || c.List != want.List || c.Put != want.Put || c.Head != want.Head || c.Delete != want.Delete ||
		c.Post != 0 || c.Other != 0 {
		t.Errorf("counted %v; want %v", c, want)
	}
	if c.BytesRead < size || c.BytesWritten < size+1 {
		t.Errorf("counted %d bytes read and %d written; want at least %d and %d", c.BytesRead, c.BytesWritten, size, size+1)
	}
}

// A request whose context ends during the delay fails with the context's
// error, without reaching the server.
func TestLatencyGivesUpWithTheContext(t *testing.T) {
	lat, err := testenv.NewLatency(testenv.LatencyOptions{Delay: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loc := testenv.Location(t, testenv.S3)
	st, err := cloud.OpenWithOptions(context.Background(), loc, cloud.Options{HTTPClient: lat.Client(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	direct, err := cloud.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := st.Put(ctx, "k", bytes.NewReader([]byte("x")), 1, cloud.PutOptions{}); err == nil {
		t.Fatal("a put cancelled during its delay succeeded")
	}
	if _, _, err := direct.Get(context.Background(), "k"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("reading the object of the cancelled put: %v; want not found: the put must not reach the server", err)
	}
}

// Bad options are refused, each named.
func TestLatencyOptionsValidate(t *testing.T) {
	if err := testenv.DefaultLatencyOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	_, err := testenv.NewLatency(testenv.LatencyOptions{Delay: -1, ReadBytesPerSecond: -1, WriteBytesPerSecond: -1}, nil)
	if err == nil {
		t.Fatal("negative options accepted")
	}
	for _, field := range []string{"Delay", "ReadBytesPerSecond", "WriteBytesPerSecond"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}
