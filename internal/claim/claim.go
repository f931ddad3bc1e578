package claim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/lease"
)

// ErrTakenOver is wrapped by Hold's error when the work failed after
// another worker took the claim over: the other worker does the unit.
var ErrTakenOver = errors.New("the claim was taken over")

// Record is a claim object's content, as JSON.
type Record struct {
	// Unit names the unit of work claimed.
	Unit string `json:"unit"`
	// Worker is the holder's name; Token is unique to this claim, so
	// that two claims of one unit never have the same bytes.
	Worker string `json:"worker"`
	Token  string `json:"token"`
	// Attempt counts the claims of the unit: 1, then one more per
	// take-over.
	Attempt int `json:"attempt"`
	// Renewed is the holder's clock at the last renewal, for people:
	// no other process judges a lease by it.
	Renewed time.Time `json:"renewed"`
	// LeaseSeconds is the holder's TTL: others wait at least that long.
	LeaseSeconds float64 `json:"lease_ttl_seconds"`
}

// Claimer takes and holds claims for one worker. Its fields are set
// before the first Take and not changed after; it is safe for concurrent
// use then.
type Claimer struct {
	// Store holds the claim objects.
	Store cloud.Store
	// Worker names the worker in its claims.
	Worker string
	// TTL is how long a claim holds without a renewal (it must be above
	// zero); a holder renews every third of it, and a claim written with
	// a longer TTL is waited on for that longer one.
	TTL time.Duration
	// Now is this process's clock: written into claims, and the clock
	// lease judging times a holder's silence on. Nil: time.Now.
	Now func() time.Time
	// Logger gets a line per failed renewal; nil: none.
	Logger *slog.Logger

	judge lease.Judge
}

// Claim is a claim this worker holds.
type Claim struct {
	Record
	// TakenOver: the unit was claimed by another worker before, whose
	// lease ended.
	TakenOver bool

	c    *Claimer
	key  string
	etag string
}

func (c *Claimer) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// Take claims unit, whose claim object is key: create-only, or by taking
// over the claim there once this process has seen it unchanged for the
// holder's lease (a first look only starts the count). Nil and no error
// when a live worker holds it, or another worker took it over first.
func (c *Claimer) Take(ctx context.Context, key, unit string) (*Claim, error) {
	if c.TTL <= 0 {
		return nil, fmt.Errorf("claim %s: lease TTL %s: want above zero", unit, c.TTL)
	}
	cl := &Claim{c: c, key: key, Record: Record{Unit: unit, Worker: c.Worker, Token: newToken(), Attempt: 1,
		Renewed: c.now().UTC(), LeaseSeconds: c.TTL.Seconds()}}
	data, err := json.Marshal(cl.Record)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", unit, err)
	}
	etag, won, err := PutOnce(ctx, c.Store, key, data)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", unit, err)
	}
	if won {
		cl.etag = etag
		return cl, nil
	}
	old, oldTag, err := Read(ctx, c.Store, key)
	if errors.Is(err, cloud.ErrNotFound) {
		return nil, nil // gone between the two calls: look again later
	}
	if err != nil {
		return nil, fmt.Errorf("read claim %s: %w", unit, err)
	}
	var held Record
	if err := json.Unmarshal(old, &held); err != nil {
		return nil, fmt.Errorf("claim %s: %w", cloud.Redact(c.Store.URL(key)), err)
	}
	ttl := max(c.TTL, time.Duration(held.LeaseSeconds*float64(time.Second)))
	if expired, _ := c.judge.Expired(key, oldTag, c.now(), ttl); !expired {
		return nil, nil
	}
	cl.Attempt = held.Attempt + 1
	if data, err = json.Marshal(cl.Record); err != nil {
		return nil, fmt.Errorf("claim %s: %w", unit, err)
	}
	etag, won, err = PutSettled(ctx, c.Store, key, data, cloud.PutOptions{IfMatch: oldTag})
	if err != nil {
		return nil, fmt.Errorf("take over claim %s: %w", unit, err)
	}
	if !won {
		return nil, nil // another worker took it over first
	}
	c.judge.Forget(key)
	cl.etag, cl.TakenOver = etag, true
	return cl, nil
}

// Hold runs work under the claim, renewing it every third of the lease
// until work returns. A renewal that finds the claim taken over cancels
// work's context (its cause wraps ErrTakenOver); a renewal that fails
// otherwise is logged and tried again at the next tick, the lease having
// two thirds left. Hold returns work's error, or, when work failed after
// the claim was taken over (and ctx was not cancelled), an error wrapping
// ErrTakenOver. Work that finished despite a take-over returns nil: what
// it produced must be recorded create-only, racing the other worker's.
func (cl *Claim) Hold(ctx context.Context, work func(context.Context) error) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		cl.renew(rctx, cancel, stop)
	}()
	err := work(rctx)
	close(stop)
	<-stopped
	if cause := context.Cause(rctx); err != nil && errors.Is(cause, ErrTakenOver) && ctx.Err() == nil {
		return cause
	}
	return err
}

// renew renews the claim every third of the lease until stop is closed or
// ctx ends, and cancels ctx when another worker took the claim over.
func (cl *Claim) renew(ctx context.Context, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	c := cl.c
	tick := time.NewTicker(c.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r := cl.Record
		r.Renewed = c.now().UTC()
		data, err := json.Marshal(r)
		if err != nil {
			cancel(fmt.Errorf("unit %s: encode claim: %w", cl.Unit, err))
			return
		}
		tag, won, err := PutSettled(ctx, c.Store, cl.key, data, cloud.PutOptions{IfMatch: cl.etag})
		switch {
		case err != nil && ctx.Err() == nil:
			if c.Logger != nil {
				c.Logger.Warn("renew claim", "unit", cl.Unit, "err", err)
			}
		case err == nil && !won:
			cancel(fmt.Errorf("unit %s: %w", cl.Unit, ErrTakenOver))
			return
		case err == nil:
			cl.etag = tag
		}
	}
}

// newToken returns 16 random hex digits.
func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
