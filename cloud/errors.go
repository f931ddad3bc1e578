package cloud

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrOutcomeUnknown: a conditional Put may or may not have landed. The
// request was sent but no definite answer came back (a timeout, a dropped
// response, a 5xx after the SDK's retries, the context ending first), and
// reading the object back could not settle it. It is not a failure: the
// object may be there, now or later. A caller must act as if it might be:
// never delete what the write refers to, and never report it as "not
// written". The other sentinels are in store.go.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// opError is every store's error: one line, "<url>: <op>: <detail>: <kind>",
// matching the sentinel kind (if any) and the underlying cause under
// errors.Is / errors.As. The cause's own text is left out when detail
// already says it, which keeps SDK errors that span several lines (azcore's
// ResponseError) out of the message.
//
// The message never carries a secret: the SDKs' errors embed the request
// URL (net/http's *url.Error, azcore.ResponseError, smithy's errors), and
// with a SAS token that URL holds the signature. Error passes the whole
// line through Redact, and Unwrap hands out the cause wrapped so that its
// Error is redacted too; errors.Is and errors.As still reach the cause
// itself (whose own text is then the holder's to keep to itself).
type opError struct {
	url    string
	op     string
	detail string
	kind   error // a sentinel, or nil
	cause  error // the SDK or OS error, or nil
}

func (e *opError) Error() string {
	var b strings.Builder
	b.WriteString(e.url)
	b.WriteString(": ")
	b.WriteString(e.op)
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(OneLine(Redact(e.detail), cloudLineLimit))
	}
	if e.kind != nil {
		b.WriteString(": ")
		if errors.Is(e.kind, ErrNotFound) {
			b.WriteString(ErrNotFound.Error())
		} else {
			b.WriteString(e.kind.Error())
		}
	}
	return Redact(b.String())
}

func (e *opError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, redactedError{e.cause})
	}
	return errs
}

// redactedError is a cause whose text is redacted; it unwraps to the
// cause, so errors.Is and errors.As see through it.
type redactedError struct{ err error }

func (r redactedError) Error() string { return Redact(r.err.Error()) }
func (r redactedError) Unwrap() error { return r.err }

// cloudLineLimit caps a store's detail in an error: a response body can be
// a page of XML.
const cloudLineLimit = 400

// OneLine folds s onto one line, for an error message or a log line that
// users grep line by line: runs of white space (newlines among them)
// become one space, and control characters left after that (a name from
// the data may hold any) are escaped as Go quotes them, so the line can
// neither move the cursor nor fake another. When limit > 0 and the line is
// longer than limit bytes, it is cut at a character boundary at or before
// limit and ends in "…". This is the one rule for sluice's messages: the
// stores fold theirs with it, and so do the Parquet reader and the CLI.
func OneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		var b strings.Builder
		for _, r := range s {
			if unicode.IsControl(r) {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	if limit <= 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// The longest key, and the longest segment of one, that every store
// takes: S3 and Azure name objects of up to 1024 bytes, and most local
// file systems take names of up to 255.
const (
	maxKeyBytes     = 1024
	maxSegmentBytes = 255
)

// checkKey enforces the keys every store accepts (see ErrInvalidKey).
func checkKey(key string) error {
	if key == "" {
		return errors.New("empty key")
	}
	if strings.HasPrefix(key, "/") {
		return errors.New("key starts with '/'")
	}
	if strings.ContainsRune(key, 0) {
		return errors.New("key holds NUL")
	}
	// A backslash is a separator on Windows, and some services and tools
	// take it for '/': a key holding one could name a different object,
	// or climb out of its folder, depending on who reads it.
	if strings.ContainsRune(key, '\\') {
		return errors.New("key holds a backslash")
	}
	if len(key) > maxKeyBytes {
		return fmt.Errorf("key of %d bytes is longer than %d", len(key), maxKeyBytes)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return errors.New("key has an empty segment")
		case seg == "." || seg == "..":
			return errors.New("key has a '.' or '..' segment")
		case len(seg) > maxSegmentBytes:
			return fmt.Errorf("key has a segment of %d bytes, longer than %d", len(seg), maxSegmentBytes)
		case strings.HasPrefix(seg, tmpPrefix):
			return errors.New("key names a reserved " + tmpPrefix + " file")
		}
	}
	return nil
}

func invalidKey(url, op string, err error) error {
	return &opError{url: url, op: op, detail: err.Error(), kind: ErrInvalidKey}
}
