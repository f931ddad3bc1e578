package faults

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind names one sort of fault.
type Kind string

// The kinds of fault an Injector injects.
const (
	// ServerError: the store answers 500 (after the SDK's retries, for
	// the Store wrapper; one answer, for Transport).
	ServerError Kind = "server_error"
	// Throttle: the store answers 503 SlowDown or 429 Too Many Requests.
	Throttle Kind = "throttle"
	// TimeoutBefore: the request times out before it reached the store;
	// nothing was applied.
	TimeoutBefore Kind = "timeout_before"
	// TimeoutAfter: a write reached the store and was applied, then its
	// answer was lost: the ambiguous case. Reads are not affected.
	TimeoutAfter Kind = "timeout_after"
	// SlowRead: a read's first byte comes after Config.SlowDelay.
	SlowRead Kind = "slow_read"
	// TruncatedRead: a read's body ends early with io.ErrUnexpectedEOF,
	// as a connection dropped mid-body does.
	TruncatedRead Kind = "truncated_read"
	// StaleList: a listing misses a key written within Config.StaleFor
	// (Store only: Transport passes listings through).
	StaleList Kind = "stale_list"
	// NoSpace: a write fails with ENOSPC, as on a full local disk.
	NoSpace Kind = "enospc"
	// IOError: a read or write fails with EIO, as on a failing disk.
	IOError Kind = "eio"
)

// Kinds lists every kind, in the order figures print them.
var Kinds = []Kind{ServerError, Throttle, TimeoutBefore, TimeoutAfter, SlowRead, TruncatedRead, StaleList, NoSpace, IOError}

// ErrInjected is wrapped by every error a fault makes, so a test tells an
// injected failure from a real one with errors.Is.
var ErrInjected = errors.New("injected fault")

// Config is what an Injector decides by.
type Config struct {
	// Seed fixes every decision.
	Seed uint64
	// Rates gives each kind the chance, in [0, 1], that one eligible call
	// gets it. A missing kind is never injected.
	Rates map[Kind]float64
	// SlowDelay is how late a SlowRead's first byte comes. Zero: 200ms.
	SlowDelay time.Duration
	// StaleFor is how long after a Put a listing may miss the key. Zero:
	// 5s.
	StaleFor time.Duration
	// MaxInARow, when above zero, is how many calls of one operation on
	// one key in a row may be faulted: the next one passes. It makes a
	// mix of retryable faults retryable for certain, whatever the draws,
	// for a client that retries more times than this. Zero: no limit.
	MaxInARow int
}

// Injector decides faults and counts them. It is safe for concurrent use.
type Injector struct {
	cfg     Config
	enabled atomic.Bool

	mu     sync.Mutex
	calls  map[string]uint64 // op+key -> calls so far
	inARow map[string]int    // op+key -> faulted calls in a row, just before
	counts map[Kind]int64
}

// New returns an enabled Injector.
func New(cfg Config) *Injector {
	if cfg.SlowDelay <= 0 {
		cfg.SlowDelay = 200 * time.Millisecond
	}
	if cfg.StaleFor <= 0 {
		cfg.StaleFor = 5 * time.Second
	}
	rates := make(map[Kind]float64, len(cfg.Rates))
	for k, r := range cfg.Rates {
		rates[k] = clamp(r)
	}
	cfg.Rates = rates
	in := &Injector{cfg: cfg, calls: map[string]uint64{}, inARow: map[string]int{}, counts: map[Kind]int64{}}
	in.enabled.Store(true)
	return in
}

// SetEnabled turns every fault on or off; off, the wrappers pass every call
// through untouched.
func (in *Injector) SetEnabled(on bool) { in.enabled.Store(on) }

// Seed returns the seed the Injector decides by.
func (in *Injector) Seed() uint64 { return in.cfg.Seed }

// Counts returns how many faults of each kind were injected so far.
func (in *Injector) Counts() map[Kind]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[Kind]int64, len(in.counts))
	for k, n := range in.counts {
		out[k] = n
	}
	return out
}

// Total returns how many faults were injected so far, of every kind.
func (in *Injector) Total() int64 {
	var n int64
	for _, c := range in.Counts() {
		n += c
	}
	return n
}

// String prints the counts as "kind=n ..." in Kinds order, zeros included.
func (in *Injector) String() string {
	c := in.Counts()
	parts := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

// pick returns the first of kinds this call (the next call of op on key)
// gets, or "" for none, and counts it, with the call's number. Every call
// of op on key advances the number, faulted or not; past Config.MaxInARow
// faulted calls in a row, the next passes.
func (in *Injector) pick(op, key string, kinds ...Kind) (Kind, uint64) {
	if !in.enabled.Load() {
		return "", 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	id := op + "\x00" + key
	n := in.calls[id]
	in.calls[id] = n + 1
	if max := in.cfg.MaxInARow; max > 0 && in.inARow[id] >= max {
		delete(in.inARow, id)
		return "", n
	}
	for _, k := range kinds {
		rate := in.cfg.Rates[k]
		if rate <= 0 {
			continue
		}
		if in.draw(k, id, n) < rate {
			in.counts[k]++
			in.inARow[id]++
			return k, n
		}
	}
	delete(in.inARow, id)
	return "", n
}

// draw is the uniform number in [0, 1) for (seed, kind, id, n): the
// first 53 bits of their SHA-256.
func (in *Injector) draw(k Kind, id string, n uint64) float64 {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], in.cfg.Seed)
	h.Write(b[:])
	h.Write([]byte(k))
	h.Write([]byte{0})
	h.Write([]byte(id))
	binary.LittleEndian.PutUint64(b[:], n)
	h.Write(b[:])
	x := binary.LittleEndian.Uint64(h.Sum(nil))
	return float64(x>>11) / (1 << 53)
}

// Error is the error of one injected fault: one line naming the object
// (URL), the operation and the fault. It matches ErrInjected, and its
// cause (ENOSPC, EIO, a timeout) under errors.Is.
type Error struct {
	Kind Kind
	URL  string
	Op   string
	// Cause is what the fault stands in for: syscall.ENOSPC, syscall.EIO,
	// ErrTimeout, or a *StatusError.
	Cause error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %v (%s)", e.URL, e.Op, e.Cause, ErrInjected)
}

// Unwrap returns ErrInjected and the cause.
func (e *Error) Unwrap() []error { return []error{ErrInjected, e.Cause} }

// ErrTimeout stands in for a request timeout. It says Timeout() true, as
// net's timeouts do.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// StatusError stands in for a store's HTTP error answer.
type StatusError struct {
	Status int
	Code   string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d %s", e.Status, e.Code) }

// cause returns what kind k stands in for; n varies throttling between
// 503 SlowDown and 429.
func cause(k Kind, n uint64) error {
	switch k {
	case ServerError:
		return &StatusError{Status: 500, Code: "InternalError"}
	case Throttle:
		if n%2 == 0 {
			return &StatusError{Status: 503, Code: "SlowDown"}
		}
		return &StatusError{Status: 429, Code: "TooManyRequests"}
	case TimeoutBefore, TimeoutAfter:
		return ErrTimeout
	case NoSpace:
		return syscall.ENOSPC
	case IOError:
		return syscall.EIO
	}
	return errors.New(string(k))
}

// FormatCounts prints counts as "kind=n ..." sorted by kind, for counts
// gathered from several injectors.
func FormatCounts(c map[Kind]int64) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[Kind(k)]))
	}
	return strings.Join(parts, " ")
}

// clamp keeps a rate in [0, 1].
func clamp(r float64) float64 { return math.Max(0, math.Min(1, r)) }
