package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/sluice-data/sluice/cloud"
)

// What sluice prints passes through cloud.Redact as a last line of
// defence: the stores redact their own errors, but a location, a Kafka
// source or an SDK's message may reach an error or a log line by another
// way. The hooks are an error (its text redacted, so the stderr line and
// the --json "error" field alike), the stderr writer, the slog handler's
// ReplaceAttr and the --json summary's strings.

// redactedError is an error whose text is redacted; it unwraps to the
// error itself, so errors.Is and errors.As see through it.
type redactedError struct{ err error }

func (r redactedError) Error() string { return cloud.Redact(r.err.Error()) }
func (r redactedError) Unwrap() error { return r.err }

// redactErr wraps err so that its text is redacted; nil stays nil.
func redactErr(err error) error {
	if err == nil {
		return nil
	}
	return redactedError{err}
}

// redactingWriter redacts each write: every line sluice prints to stderr
// is written whole, in one call.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, cloud.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactAttr is the slog ReplaceAttr that redacts the message and every
// string, error or other value whose text holds a secret.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(cloud.Redact(a.Value.String()))
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.StringValue(cloud.Redact(v.Error()))
		default:
			if s := fmt.Sprint(v); cloud.Redact(s) != s {
				a.Value = slog.StringValue(cloud.Redact(s))
			}
		}
	}
	return a
}

// redactSummary redacts the string values of a --json summary.
func redactSummary(v map[string]any) {
	for k, x := range v {
		if s, ok := x.(string); ok {
			v[k] = cloud.Redact(s)
		}
	}
}
