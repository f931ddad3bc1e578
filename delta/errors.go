package delta

import "errors"

// The errors a log read fails with; match them with errors.Is.
var (
	// ErrCorruptLog: a log entry that does not parse, or a log without
	// the protocol or metadata a table must have.
	ErrCorruptLog = errors.New("corrupt Delta log")
	// ErrNotDelta: the location has no _delta_log/ with a commit or a
	// checkpoint in it.
	ErrNotDelta = errors.New("not a Delta table")
	// ErrVersionNotFound: the version asked for was never committed, or
	// its log entries are gone (a version missing between a checkpoint and
	// the version asked for, or cleaned up by a writer).
	ErrVersionNotFound = errors.New("no such version in the Delta log")
	// ErrUnsupportedFeature: the table uses a feature sluice does not
	// read (deletion vectors, column mapping, an unknown reader feature).
	ErrUnsupportedFeature = errors.New("unsupported Delta table feature")
	// ErrConflict: another writer committed the version first, and what
	// it did conflicts with the change (or the change was not rebased).
	ErrConflict = errors.New("another writer's Delta commit conflicts")
)
