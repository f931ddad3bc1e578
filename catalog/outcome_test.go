package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// versionKey is where version v of a table lives (docs/format).
func versionKey(v int64) string { return fmt.Sprintf("_sluice/versions/%020d.json", v) }

// flakyTable opens the table at loc through a store whose HTTP transport
// is faults, with one retry per request.
func flakyTable(t *testing.T, loc string, faults *testenv.Faults) *catalog.Table {
	t.Helper()
	st, err := cloud.OpenWithOptions(context.Background(), loc, cloud.Options{HTTPClient: faults.Client(), MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	tbl := catalog.NewTable(loc, st, catalog.Options{})
	t.Cleanup(func() { tbl.Close() })
	return tbl
}

// failFirstGets fails the first n GETs it is given, and passes the rest.
func failFirstGets(n int32) func(*http.Request) (*http.Response, error) {
	var seen atomic.Int32
	return func(req *http.Request) (*http.Response, error) {
		if seen.Add(1) <= n {
			return testenv.Drop(req)
		}
		return http.DefaultTransport.RoundTrip(req)
	}
}

// TestCommitOfUnknownOutcome pins what a commit does when the version it
// wrote may or may not have landed: it reads the version back, and what
// that cannot settle is an error wrapping cloud.ErrOutcomeUnknown, never
// an ordinary failure that would let the caller delete the files.
func TestCommitOfUnknownOutcome(t *testing.T) {
	day := time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			// prepare makes a table of two versions and returns it with
			// the files of a third, written and not committed.
			prepare := func(t *testing.T, faults func(key string) *testenv.Faults) (loc string, clean, flaky *catalog.Table, add []catalog.DataFile) {
				loc = testenv.Location(t, kind)
				clean, _ = newTable(t, loc)
				appendRows(t, clean, eventRows(day, 0, 10))
				flaky = flakyTable(t, loc, faults(versionKey(3)))
				m, err := flaky.Latest(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if add, err = flaky.WriteFiles(ctx, m, eventRows(day, 100, 10)); err != nil {
					t.Fatal(err)
				}
				return loc, clean, flaky, add
			}
			change := func(add []catalog.DataFile) catalog.Change {
				return catalog.Change{Operation: "append", RunID: "ours", Add: add, DataChange: true}
			}

			t.Run("a version that landed and cannot be read back is of unknown outcome", func(t *testing.T) {
				_, clean, flaky, add := prepare(t, testenv.LandedUnread)
				_, err := flaky.Commit(ctx, change(add))
				if !errors.Is(err, cloud.ErrOutcomeUnknown) {
					t.Fatalf("Commit: %v; want an error wrapping cloud.ErrOutcomeUnknown", err)
				}
				if errors.Is(err, catalog.ErrConflict) || errors.Is(err, cloud.ErrPreconditionFailed) {
					t.Errorf("Commit: %v; an unknown outcome reads as a lost race", err)
				}
				if msg := err.Error(); !strings.Contains(msg, "outcome unknown") || !strings.Contains(msg, "version 3") {
					t.Errorf("Commit: %q; want it to say version 3's outcome is unknown", msg)
				}
				// It did land: the table, read through a sound store,
				// has it with our files.
				m, err := clean.Latest(ctx)
				if err != nil {
					t.Fatal(err)
				}
				live := livePaths(t, clean, m)
				if m.Version != 3 || m.RunID != "ours" || len(live) != 2 {
					t.Fatalf("latest is version %d by %q with %d files; want version 3 by ours with 2", m.Version, m.RunID, len(live))
				}
				for _, f := range add {
					if _, ok := live[f.Path]; !ok {
						t.Errorf("%s is not live in version 3", f.Path)
					}
				}
			})

			t.Run("a piece of unknown outcome fails the commit plainly: no version was written", func(t *testing.T) {
				_, clean, flaky, add := prepare(t, func(string) *testenv.Faults {
					f := testenv.LandedUnread("")
					f.Match = func(path string) bool { return strings.Contains(path, "_sluice/pieces/") }
					return f
				})
				_, err := flaky.Commit(ctx, change(add))
				if err == nil || errors.Is(err, cloud.ErrOutcomeUnknown) {
					t.Fatalf("Commit: %v; want a failure that is not of unknown outcome", err)
				}
				if v, err := clean.LatestVersion(ctx); err != nil || v != 2 {
					t.Fatalf("latest version %d, %v; want 2, unchanged", v, err)
				}
			})

			t.Run("a version the store could not read back, and the catalog could, is committed", func(t *testing.T) {
				_, clean, flaky, add := prepare(t, func(key string) *testenv.Faults {
					return &testenv.Faults{Key: key, FirstPut: testenv.DeliverThenDrop, Get: failFirstGets(2)}
				})
				m, err := flaky.Commit(ctx, change(add))
				if err != nil {
					t.Fatalf("Commit: %v; version 3 is ours", err)
				}
				if m.Version != 3 {
					t.Errorf("committed version %d, want 3", m.Version)
				}
				if latest, err := clean.Latest(ctx); err != nil || latest.Version != 3 || latest.CommitID != m.CommitID {
					t.Fatalf("latest: %+v, %v; want our version 3", latest, err)
				}
			})

			t.Run("a resend refused because the first send landed late is ours, not a lost race", func(t *testing.T) {
				// The first send is held back and fails; so does the
				// SDK's retry; the store cannot read back; the catalog
				// reads nothing there and sends again, and just before
				// that resend arrives, the first send lands.
				var first *http.Request
				var firstBody []byte
				var later atomic.Int32
				_, clean, flaky, add := prepare(t, func(key string) *testenv.Faults {
					return &testenv.Faults{Key: key, Get: failFirstGets(2),
						FirstPut: func(req *http.Request) (*http.Response, error) {
							body, err := io.ReadAll(req.Body)
							if err != nil {
								return nil, err
							}
							first, firstBody = req, body
							return testenv.Drop(req)
						},
						LaterPut: func(req *http.Request) (*http.Response, error) {
							switch later.Add(1) {
							case 1:
								return testenv.Drop(req) // the SDK's retry
							case 2:
								late := first.Clone(context.Background())
								late.Body = io.NopCloser(bytes.NewReader(firstBody))
								resp, err := http.DefaultTransport.RoundTrip(late)
								if err != nil {
									return nil, err
								}
								resp.Body.Close()
								if resp.StatusCode/100 != 2 {
									return nil, fmt.Errorf("the late first send: %s", resp.Status)
								}
							}
							return http.DefaultTransport.RoundTrip(req)
						}}
				})
				m, err := flaky.Commit(ctx, change(add))
				if err != nil {
					t.Fatalf("Commit: %v; version 3 is ours", err)
				}
				if m.Version != 3 || later.Load() < 2 {
					t.Errorf("committed version %d after %d later sends; want version 3, resent once", m.Version, later.Load())
				}
				latest, err := clean.Latest(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if f, r, _ := latest.Totals(); latest.Version != 3 || f != 2 || r != 20 {
					t.Fatalf("latest is version %d with %d files, %d rows; want 3 with 2 and 20: the change once", latest.Version, f, r)
				}
			})

			t.Run("a version another commit took, read back by the catalog, is a lost race and rebased", func(t *testing.T) {
				var clean *catalog.Table
				_, clean, flaky, add := prepare(t, func(key string) *testenv.Faults {
					return &testenv.Faults{Key: key, Get: failFirstGets(2), FirstPut: func(req *http.Request) (*http.Response, error) {
						// A rival commits version 3 first; our request
						// then reaches the server, is refused, and its
						// answer is lost.
						appendRows(t, clean, eventRows(day, 200, 10))
						return testenv.DeliverThenDrop(req)
					}}
				})
				m, err := flaky.Commit(ctx, change(add))
				if err != nil {
					t.Fatalf("Commit: %v; it lost version 3 and should have rebased", err)
				}
				if m.Version != 4 {
					t.Errorf("committed version %d, want 4 (after the rival's 3)", m.Version)
				}
				latest, err := clean.Latest(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(livePaths(t, clean, latest)); latest.Version != 4 || n != 3 {
					t.Fatalf("latest is version %d with %d files; want 4 with 3 (ours, the rival's, the first)", latest.Version, n)
				}
			})
		})
	}
}
