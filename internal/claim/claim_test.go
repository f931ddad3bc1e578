package claim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/claim"
	"github.com/sluice-data/sluice/internal/faults"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// kinds are the stores every test runs against.
var kinds = []string{testenv.Local, testenv.S3}

func open(t *testing.T, kind string) cloud.Store {
	t.Helper()
	st, err := cloud.Open(context.Background(), testenv.Location(t, kind))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// clock is a clock a test moves by hand.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// Of two create-only writers of one key, the first wins and the second
// learns it lost, without an error; the object and its ETag are the
// winner's.
func TestPutOnceFirstWriterWins(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t, kind)
			etag, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte(`{"worker":"a"}`))
			if err != nil || !won || etag == "" {
				t.Fatalf("first writer: etag %q won %v, %v; want it won with an ETag", etag, won, err)
			}
			if _, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte(`{"worker":"b"}`)); err != nil || won {
				t.Fatalf("second writer: won %v, %v; want it lost, no error", won, err)
			}
			data, got, err := claim.Read(ctx, st, "w/a.json")
			if err != nil || string(data) != `{"worker":"a"}` || got != etag {
				t.Fatalf("read %s (ETag %q), %v; want the first writer's, ETag %q", data, got, err, etag)
			}
			if _, _, err := claim.Read(ctx, st, "w/none.json"); !errors.Is(err, cloud.ErrNotFound) {
				t.Fatalf("reading a missing object: %v; want ErrNotFound", err)
			}
		})
	}
}

// A write that landed but whose answer was lost, and that the store could
// not settle, is settled by reading the object back: the writer's bytes
// are there, so it won. On local disk the store wrapper loses every
// answer; on S3 the transport loses the PUT's answer and the store's own
// read-back, and the second read-back goes through.
func TestPutOnceSettlesAnUnknownOutcome(t *testing.T) {
	t.Run(testenv.Local, func(t *testing.T) {
		ctx := context.Background()
		in := faults.New(faults.Config{Seed: 1, Rates: map[faults.Kind]float64{faults.TimeoutAfter: 1}})
		st := in.Store(open(t, testenv.Local))
		etag, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte("mine"))
		if err != nil || !won || etag == "" {
			t.Fatalf("landed, answer lost: etag %q won %v, %v; want won, with its ETag", etag, won, err)
		}
		if _, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte("theirs")); err != nil || won {
			t.Fatalf("a second creator: won %v, %v; want lost", won, err)
		}
		swapped, won, err := claim.PutSettled(ctx, st, "w/a.json", []byte("mine, renewed"), cloud.PutOptions{IfMatch: etag})
		if err != nil || !won || swapped == etag {
			t.Fatalf("a swap that landed, answer lost: etag %q won %v, %v; want won with a new ETag", swapped, won, err)
		}
		if _, won, err := claim.PutSettled(ctx, st, "w/a.json", []byte("stale"), cloud.PutOptions{IfMatch: etag}); err != nil || won {
			t.Fatalf("a swap from an old ETag: won %v, %v; want lost", won, err)
		}
		if in.Counts()[faults.TimeoutAfter] == 0 {
			t.Fatal("no answer was lost: the test tested nothing")
		}
		if data, _, err := claim.Read(ctx, st, "w/a.json"); err != nil || string(data) != "mine, renewed" {
			t.Fatalf("object %q, %v; want the swap's bytes", data, err)
		}
	})
	t.Run(testenv.S3, func(t *testing.T) {
		ctx := context.Background()
		loc := testenv.Location(t, testenv.S3)
		var gets atomic.Int32
		f := &testenv.Faults{Key: "w/a.json", FirstPut: testenv.DeliverThenDrop, Get: func(req *http.Request) (*http.Response, error) {
			if gets.Add(1) == 1 {
				return testenv.Drop(req) // the store's own read-back
			}
			return http.DefaultTransport.RoundTrip(req)
		}}
		st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: f.Client(), MaxAttempts: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		etag, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte("mine"))
		if err != nil || !won || etag == "" {
			t.Fatalf("landed, answer lost: etag %q won %v, %v; want won, with its ETag", etag, won, err)
		}
		if f.Puts() == 0 || gets.Load() < 2 {
			t.Fatalf("the fault did not fire: %d puts, %d gets", f.Puts(), gets.Load())
		}
	})
}

// A write that landed, whose answer was lost and that no read-back can
// settle, is an error wrapping cloud.ErrOutcomeUnknown: never a win nor a
// plain loss, for the write may be there.
func TestPutOnceThatCannotBeSettledIsUnknown(t *testing.T) {
	ctx := context.Background()
	loc := testenv.Location(t, testenv.S3)
	f := testenv.LandedUnread("w/a.json")
	st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: f.Client(), MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, won, err := claim.PutOnce(ctx, st, "w/a.json", []byte("mine"))
	if !errors.Is(err, cloud.ErrOutcomeUnknown) || won {
		t.Fatalf("won %v, %v; want an error wrapping ErrOutcomeUnknown", won, err)
	}
	if f.Puts() == 0 || f.Gets() == 0 {
		t.Fatalf("the fault did not fire: %d puts, %d gets", f.Puts(), f.Gets())
	}
}

// A claim is taken create-only; another worker takes it over only once it
// has seen it unchanged for the holder's lease (the longer of the two
// workers'), on its own clock, and then the claim is its, one attempt on.
func TestClaimIsTakenOverOnlyAfterItsLease(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t, kind)
			ca, cb := newClock(), newClock()
			a := &claim.Claimer{Store: st, Worker: "a", TTL: 2 * time.Minute, Now: ca.now}
			b := &claim.Claimer{Store: st, Worker: "b", TTL: time.Minute, Now: cb.now}
			held, err := a.Take(ctx, "claims/u1.json", "u1")
			if err != nil || held == nil || held.Attempt != 1 || held.TakenOver || held.Worker != "a" {
				t.Fatalf("first claim: %+v, %v; want a's, attempt 1", held, err)
			}
			for _, step := range []time.Duration{0, time.Minute, time.Minute - time.Second} {
				cb.advance(step)
				if c, err := b.Take(ctx, "claims/u1.json", "u1"); err != nil || c != nil {
					t.Fatalf("after %s: %+v, %v; want the live claim left alone", step, c, err)
				}
			}
			cb.advance(time.Second)
			took, err := b.Take(ctx, "claims/u1.json", "u1")
			if err != nil || took == nil || took.Attempt != 2 || !took.TakenOver || took.Token == held.Token {
				t.Fatalf("after a's lease: %+v, %v; want b's claim, attempt 2, taken over", took, err)
			}
			if c, err := a.Take(ctx, "claims/u1.json", "u1"); err != nil || c != nil {
				t.Fatalf("a again at once: %+v, %v; want b's claim left alone", c, err)
			}
			if data, _, err := claim.Read(ctx, st, "claims/u1.json"); err != nil || !strings.Contains(string(data), `"worker":"b"`) {
				t.Fatalf("claim object %s, %v; want b's", data, err)
			}
		})
	}
}

// A held claim is renewed every third of its lease while the work runs:
// its object changes, and stays this claim's.
func TestHoldRenewsTheClaim(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st := open(t, kind)
			a := &claim.Claimer{Store: st, Worker: "a", TTL: 300 * time.Millisecond}
			c, err := a.Take(ctx, "claims/u1.json", "u1")
			if err != nil || c == nil {
				t.Fatalf("claim: %+v, %v", c, err)
			}
			_, first, err := claim.Read(ctx, st, "claims/u1.json")
			if err != nil {
				t.Fatal(err)
			}
			var last []byte
			err = c.Hold(ctx, func(ctx context.Context) error {
				seen := map[string]bool{first: true}
				for len(seen) < 3 {
					select {
					case <-ctx.Done():
						return context.Cause(ctx)
					case <-time.After(20 * time.Millisecond):
					}
					data, etag, err := claim.Read(ctx, st, "claims/u1.json")
					if err != nil {
						return err
					}
					seen[etag], last = true, data
				}
				return nil
			})
			if err != nil {
				t.Fatalf("work under the claim: %v; want two renewals seen", err)
			}
			if !strings.Contains(string(last), `"token":"`+c.Token+`"`) || !strings.Contains(string(last), `"attempt":1`) {
				t.Fatalf("renewed claim %s; want the same claim, attempt 1", last)
			}
		})
	}
}

// A renewal that finds the claim taken over cancels the work, and Hold
// says the claim was taken over.
func TestHoldStopsTheWorkWhenTheClaimIsTakenOver(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st := open(t, kind)
			cb := newClock()
			a := &claim.Claimer{Store: st, Worker: "a", TTL: 3 * time.Second}
			b := &claim.Claimer{Store: st, Worker: "b", TTL: 3 * time.Second, Now: cb.now}
			c, err := a.Take(ctx, "claims/u1.json", "u1")
			if err != nil || c == nil {
				t.Fatalf("claim: %+v, %v", c, err)
			}
			if got, err := b.Take(ctx, "claims/u1.json", "u1"); err != nil || got != nil {
				t.Fatalf("b's first look: %+v, %v; want nothing taken", got, err)
			}
			var once sync.Once
			err = c.Hold(ctx, func(ctx context.Context) error {
				var terr error
				once.Do(func() {
					// b's clock says a's lease is over before a's first
					// renewal (a second away on the real clock).
					cb.advance(3 * time.Second)
					var took *claim.Claim
					if took, terr = b.Take(ctx, "claims/u1.json", "u1"); terr == nil && took == nil {
						terr = errors.New("b did not take the claim over")
					}
				})
				if terr != nil {
					return terr
				}
				<-ctx.Done()
				return context.Cause(ctx)
			})
			if !errors.Is(err, claim.ErrTakenOver) {
				t.Fatalf("Hold: %v; want ErrTakenOver", err)
			}
		})
	}
}

// ReadMany reads many objects a few at a time and gives them back in the
// order asked; of several missing, the error names the first in that
// order.
func TestReadManyKeepsTheOrder(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t, kind)
			var keys []string
			for i := range 40 {
				key := fmt.Sprintf("results/u%05d.json", 40-i)
				if _, _, err := claim.PutOnce(ctx, st, key, []byte(key)); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, key)
			}
			all, err := claim.ReadMany(ctx, st, keys, 4)
			if err != nil || len(all) != len(keys) {
				t.Fatalf("read %d, %v; want %d", len(all), err, len(keys))
			}
			for i, data := range all {
				if string(data) != keys[i] {
					t.Fatalf("object %d is %q; want %q", i, data, keys[i])
				}
			}
			bad := append(slices.Clone(keys[:10]), "results/missing-1.json")
			bad = append(bad, keys[10:]...)
			bad = append(bad, "results/missing-2.json")
			if _, err := claim.ReadMany(ctx, st, bad, 0); !errors.Is(err, cloud.ErrNotFound) || !strings.Contains(err.Error(), "missing-1") {
				t.Fatalf("two missing: %v; want ErrNotFound naming the first", err)
			}
		})
	}
}
