package scheduler

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, tested with errors.Is.
var (
	// ErrInvalid: the pipeline file is malformed; the error is an
	// ErrorList naming each problem's file, line, column and key.
	ErrInvalid = errors.New("invalid pipeline")
	// ErrUnknownJob: a job name that the pipeline file does not define.
	ErrUnknownJob = errors.New("unknown job")
	// ErrLeaseLost: another instance took the run's interval over (our
	// lease expired before a heartbeat renewed it); the run stops.
	ErrLeaseLost = errors.New("lease lost")
	// ErrTimeout: the job ran past its timeout; its context was cancelled.
	ErrTimeout = errors.New("timed out")
	// ErrCancelled: the run was cancelled (the admin API, or shutdown).
	ErrCancelled = errors.New("cancelled")
	// ErrUpstreamPending: a job's upstream has not finished the interval.
	ErrUpstreamPending = errors.New("upstream has not finished the interval")
	// ErrUnreadableRecord: a run record that is not valid JSON (a file
	// damaged by hand or by a disk). History.List skips it and says so.
	ErrUnreadableRecord = errors.New("unreadable run record")
	// ErrTransient marks a job's error worth retrying: the store
	// throttled or timed out, a commit lost its race once too often, a
	// warehouse lock was not granted in time. See Transient.
	ErrTransient = errors.New("transient")
	// ErrPermanent marks a job's error that retrying cannot fix: bad
	// options, bad input, a verification failure, a conflict that needs
	// a new plan. The runner fails the run at once. See Permanent.
	ErrPermanent = errors.New("permanent")
)

// classified is an error with its class, which errors.Is finds, and the
// error's own text unchanged.
type classified struct {
	err   error
	class error
}

func (c classified) Error() string   { return c.err.Error() }
func (c classified) Unwrap() []error { return []error{c.err, c.class} }

// Transient marks err worth retrying (nil stays nil). A kind's error it
// could not classify is retried as a transient one is: most are I/O that
// may pass.
func Transient(err error) error {
	if err == nil || errors.Is(err, ErrPermanent) {
		return err
	}
	return classified{err, ErrTransient}
}

// Permanent marks err as one retrying cannot fix (nil stays nil): the
// runner fails the run without retrying it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return classified{err, ErrPermanent}
}

// errorClass is the class a run record gives a failed run's error.
func errorClass(err error) string {
	switch {
	case errors.Is(err, ErrCancelled):
		return "cancelled"
	case errors.Is(err, ErrPermanent):
		return "permanent"
	}
	return "transient"
}

// Pos is a place in a pipeline file.
type Pos struct {
	File         string
	Line, Column int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column) }

// Error is one problem in a pipeline file: where, which key, and why.
// Its text never holds a value that came from the environment.
type Error struct {
	Pos Pos
	// Key is the dotted path of the key at fault (jobs.rollup.timeout).
	Key string
	Msg string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Key, e.Msg)
}

// ErrorList is every problem found in a pipeline file, in file order. It
// matches ErrInvalid under errors.Is.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(l, ErrInvalid) hold.
func (l ErrorList) Is(target error) bool { return target == ErrInvalid }

// OptionError is what a Kind's Check returns for one bad option: the
// parser adds the option's position. An empty Key is the kind's options
// together (two that do not go together).
type OptionError struct {
	Key string
	Msg string
}

func (e *OptionError) Error() string { return fmt.Sprintf("%s: %s", e.Key, e.Msg) }
