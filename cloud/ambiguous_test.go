package cloud_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// TestAmbiguousConditionalPut pins how a conditional Put resolves an
// outcome the SDK's retries leave ambiguous: by reading the object back.
func TestAmbiguousConditionalPut(t *testing.T) {
	const key = "_sluice/v/2.json"
	ours, theirs := []byte(`{"version":2,"run":"ours"}`), []byte(`{"version":2,"run":"theirs"}`)

	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			openFaults := func(t *testing.T, ft *testenv.Faults, maxAttempts int) (cloud.Store, cloud.Store, *testenv.Faults) {
				loc := testenv.Location(t, kind)
				flaky := openStore(t, loc, cloud.Options{HTTPClient: ft.Client(), MaxAttempts: maxAttempts})
				return flaky, openStore(t, loc, cloud.DefaultOptions()), ft
			}
			open := func(t *testing.T, fault func(*http.Request) (*http.Response, error), maxAttempts int) (cloud.Store, cloud.Store, *testenv.Faults) {
				return openFaults(t, &testenv.Faults{Key: key, FirstPut: fault}, maxAttempts)
			}
			check := func(t *testing.T, ft *testenv.Faults, direct cloud.Store, want []byte) {
				t.Helper()
				if ft.Puts() == 0 {
					t.Errorf("the fault never fired")
				}
				if got := get(t, direct, key); !bytes.Equal(got, want) {
					t.Errorf("stored %s, want %s", got, want)
				}
			}

			t.Run("a create whose answer was lost, refused on retry, is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, testenv.DeliverThenDrop, 0)
				info, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				if err != nil {
					t.Fatalf("Put: %v; the bytes stored are ours, so it won", err)
				}
				if info.Size != int64(len(ours)) || info.ETag == "" {
					t.Errorf("Put returned %+v", info)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create refused on retry with other bytes there lost", func(t *testing.T) {
				var flakyDirect cloud.Store
				flaky, direct, ft := open(t, func(req *http.Request) (*http.Response, error) {
					// Our request never arrives; a rival's create does.
					put(t, flakyDirect, key, theirs, cloud.PutOptions{IfAbsent: true})
					return nil, testenv.ErrReset
				}, 0)
				flakyDirect = direct
				_, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				checkErr(t, "Put", err, cloud.ErrPreconditionFailed, flaky.URL(key))
				check(t, ft, direct, theirs)
			})

			t.Run("a create the SDK gave up on that did not land is sent again", func(t *testing.T) {
				flaky, direct, ft := open(t, func(*http.Request) (*http.Response, error) { return nil, testenv.ErrReset }, 1)
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("Put: %v; nothing was there, so sending again is safe", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create the SDK gave up on that landed is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, testenv.DeliverThenDrop, 1)
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("Put: %v", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a swap whose answer was lost, refused on retry, is ours", func(t *testing.T) {
				flaky, direct, ft := open(t, testenv.DeliverThenDrop, 0)
				v1 := put(t, direct, key, theirs, cloud.PutOptions{})
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfMatch: v1.ETag}); err != nil {
					t.Fatalf("Put: %v", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a retried create refused other than by 412 after a lost answer is ours", func(t *testing.T) {
				// The first attempt lands, its answer is lost; the retry
				// is refused 403 (say, credentials that just expired).
				// The first attempt's write stands all the same.
				refuse := func(req *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{},
						Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
				}
				flaky, direct, ft := openFaults(t, &testenv.Faults{Key: key, FirstPut: testenv.DeliverThenDrop, LaterPut: refuse}, 2)
				if _, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("Put: %v; the bytes stored are ours, so it won", err)
				}
				check(t, ft, direct, ours)
			})

			// What reading back cannot settle is neither a success nor a
			// failure: the caller must not delete what the write refers to.
			unknown := func(t *testing.T, err error, flaky cloud.Store) {
				t.Helper()
				checkErr(t, "Put", err, cloud.ErrOutcomeUnknown, flaky.URL(key))
				if errors.Is(err, cloud.ErrPreconditionFailed) {
					t.Errorf("Put: %v; an unknown outcome reads as a lost race", err)
				}
				if !strings.Contains(err.Error(), "outcome unknown") {
					t.Errorf("Put: %q does not say the outcome is unknown", err)
				}
			}

			t.Run("a create that landed and cannot be read back is of unknown outcome", func(t *testing.T) {
				flaky, direct, ft := openFaults(t, testenv.LandedUnread(key), 2)
				_, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				unknown(t, err, flaky)
				if ft.Gets() == 0 {
					t.Errorf("no read-back was tried")
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create cancelled before its read-back is of unknown outcome", func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				flaky, direct, ft := open(t, func(req *http.Request) (*http.Response, error) {
					resp, err := testenv.DeliverThenDrop(req)
					cancel()
					return resp, err
				}, 0)
				_, err := flaky.Put(cctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				unknown(t, err, flaky)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Put: %v; want it to say it was cancelled", err)
				}
				check(t, ft, direct, ours)
			})

			t.Run("a create answered in no round is of unknown outcome", func(t *testing.T) {
				// Nothing is there when read back, every time; but a
				// request the client gave up on may still land.
				flaky, direct, ft := openFaults(t, &testenv.Faults{Key: key, FirstPut: testenv.Drop, LaterPut: testenv.Drop}, 1)
				_, err := flaky.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				unknown(t, err, flaky)
				if ft.Puts() < 2 {
					t.Errorf("sent %d times; nothing was there, so it should be sent again", ft.Puts())
				}
				if _, err := direct.Stat(ctx, key); !errors.Is(err, cloud.ErrNotFound) {
					t.Errorf("Stat: %v; no request reached the server", err)
				}
			})

			t.Run("a refusal on the first attempt is no ambiguity", func(t *testing.T) {
				// Same bytes already there, but no retry happened: the
				// create lost, and saying so is the truth.
				loc := testenv.Location(t, kind)
				st := openStore(t, loc, cloud.DefaultOptions())
				put(t, st, key, ours, cloud.PutOptions{IfAbsent: true})
				_, err := st.Put(ctx, key, bytes.NewReader(ours), int64(len(ours)), cloud.PutOptions{IfAbsent: true})
				checkErr(t, "Put", err, cloud.ErrPreconditionFailed, st.URL(key))
			})
		})
	}
}
