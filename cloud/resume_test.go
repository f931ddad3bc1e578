package cloud_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// cutFirstGets passes a GET to the server and cuts its body after half,
// as a dropped connection does, the first n times.
func cutFirstGets(n int32) func(*http.Request) (*http.Response, error) {
	var seen atomic.Int32
	return func(req *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil || seen.Add(1) > n || resp.ContentLength < 2 {
			return resp, err
		}
		resp.Body = &cutBody{ReadCloser: resp.Body, left: resp.ContentLength / 2}
		return resp, nil
	}
}

type cutBody struct {
	io.ReadCloser
	left int64
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// A download whose connection breaks mid-body is resumed from where it
// broke, on both object stores: Get and GetRange return every byte. On S3
// the SDK retries requests, never a body half read; before the resume a
// broken body failed the read (and the command) with unexpected EOF.
func TestBrokenDownloadResumes(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	const key = "data/part-1.parquet"
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			ft := &testenv.Faults{Key: key, Get: cutFirstGets(2)}
			st := openStore(t, testenv.Location(t, kind), cloud.Options{HTTPClient: ft.Client()})
			put(t, st, key, body, cloud.PutOptions{})
			if got := get(t, st, key); !bytes.Equal(got, body) {
				t.Errorf("Get: %d bytes, want the %d stored", len(got), len(body))
			}
			rc, err := st.GetRange(ctx, key, 1000, 500000)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, body[1000:501000]) {
				t.Errorf("GetRange: %d bytes, %v; want the 500000 stored there", len(got), err)
			}
			if ft.Gets() < 2 {
				t.Errorf("the fault cut %d downloads, want 2", ft.Gets())
			}
		})
	}
}
