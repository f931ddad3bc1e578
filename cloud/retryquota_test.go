package cloud_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// failTwice answers the first two PUTs of every key with a 500, without
// sending them, and passes everything else to the server.
type failTwice struct {
	mu   sync.Mutex
	seen map[string]int
}

func (f *failTwice) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut {
		f.mu.Lock()
		f.seen[req.URL.Path]++
		n := f.seen[req.URL.Path]
		f.mu.Unlock()
		if n <= 2 {
			if req.Body != nil {
				req.Body.Close()
			}
			return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// An S3 store that fails every write twice before taking it gets every
// write of a long run through within MaxAttempts. The AWS SDK's retry
// quota (500 tokens, 14 a retry, back only when a retry succeeds) ran dry
// after some 35 failed retries, and from then on failed each request at
// its first error however many attempts were allowed: the 35th Put here.
// (Azure's retry policy has no such quota; its retry delays would make
// this run take a minute there.)
func TestRetriesAreNotCutShortByAQuota(t *testing.T) {
	client := &http.Client{Transport: &failTwice{seen: map[string]int{}}}
	st := openStore(t, testenv.Location(t, testenv.S3), cloud.Options{HTTPClient: client, MaxAttempts: 5})
	ctx := context.Background()
	for i := range 60 {
		key := fmt.Sprintf("data/part-%02d.parquet", i)
		if _, err := st.Put(ctx, key, strings.NewReader(key), int64(len(key)), cloud.PutOptions{}); err != nil {
			t.Fatalf("Put %s (the %dth): %v", key, i+1, err)
		}
	}
	for i := range 60 {
		key := fmt.Sprintf("data/part-%02d.parquet", i)
		if got := get(t, st, key); string(got) != key {
			t.Errorf("Get %s: %q", key, got)
		}
	}
}
