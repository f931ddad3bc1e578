package cloud

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxConditionalPutSize caps the body of a conditional Put (IfAbsent or
// IfMatch). Conditional puts are manifests and leases — small — and their
// body is held in memory so that it can be sent in one atomic request,
// resent on retry and compared when the outcome is ambiguous.
const MaxConditionalPutSize = 64 << 20

// isConditional reports whether opts make a Put conditional.
func isConditional(opts PutOptions) bool { return opts.IfAbsent || opts.IfMatch != "" }

// readBody reads all of r, up to limit bytes; size >= 0 is checked against
// what was read. More than limit bytes is an error.
func readBody(r io.Reader, size int64, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("body of %d bytes exceeds the %d-byte limit of a conditional put", size, limit)
	}
	if r == nil {
		r = bytes.NewReader(nil)
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if n > limit {
		return nil, fmt.Errorf("body exceeds the %d-byte limit of a conditional put", limit)
	}
	if size >= 0 && n != size {
		return nil, fmt.Errorf("body has %d bytes, want %d", n, size)
	}
	return buf.Bytes(), nil
}

// putOutcome is what one conditional put attempt (with the SDK's own
// retries inside it) reports.
type putOutcome struct {
	info ObjectInfo
	err  error
	// ambiguous: the request may have been applied although err says
	// otherwise — a retried request answered 412/409, or the SDK gave up
	// on a timeout or 5xx without a definite answer.
	ambiguous bool
}

// maxAmbiguousRounds bounds how many times a conditional put is resent when
// the outcome was ambiguous and the read-back found nothing: the request
// evidently did not land, so sending it again is safe.
const maxAmbiguousRounds = 3

// putConditional sends body under key with opts via put and resolves an
// ambiguous outcome by reading the object back through get: our bytes →
// success; other bytes → ErrPreconditionFailed; nothing (create-only) → send
// again, up to maxAmbiguousRounds times. What it cannot settle (the
// read-back failed, the context ended first, nothing was there after the
// last round) is an error wrapping ErrOutcomeUnknown, never a plain
// failure: the write may have landed.
func putConditional(ctx context.Context, url string, body []byte, opts PutOptions,
	put func(context.Context) putOutcome,
	get func(context.Context) (io.ReadCloser, ObjectInfo, error),
) (ObjectInfo, error) {
	// The unknown outcome's cause is what stopped the read-back, never
	// the put's own error: that may wrap ErrPreconditionFailed (a retry
	// refused), which would read as a lost race.
	unknown := func(detail string, cause error) error {
		return &opError{url: url, op: "put", detail: detail, kind: ErrOutcomeUnknown, cause: cause}
	}
	text := func(err error) string { return strings.TrimPrefix(err.Error(), url+": ") }
	for round := 1; ; round++ {
		out := put(ctx)
		if out.err != nil && round > 1 {
			// An earlier round was ambiguous and may land late, whatever
			// this one heard (a 412 may be our own first round).
			out.ambiguous = true
		}
		if out.err == nil || !out.ambiguous {
			return out.info, out.err
		}
		if ctx.Err() != nil {
			return ObjectInfo{}, unknown("no definite answer ("+text(out.err)+") and cancelled before it could be read back", ctx.Err())
		}
		rc, info, err := get(ctx)
		switch {
		case errors.Is(err, ErrNotFound):
			if opts.IfMatch != "" {
				// Someone deleted the object: our swap cannot have landed.
				return ObjectInfo{}, &opError{url: url, op: "put", detail: "if-match: object vanished", kind: ErrPreconditionFailed, cause: out.err}
			}
			if round < maxAmbiguousRounds {
				continue
			}
			return ObjectInfo{}, unknown(fmt.Sprintf("no definite answer in %d rounds (%s); reading back found nothing, but a request may still land", round, text(out.err)), nil)
		case err != nil:
			return ObjectInfo{}, unknown("no definite answer ("+text(out.err)+") and reading it back failed ("+text(err)+")", err)
		}
		same, err := sameBytes(rc, body)
		rc.Close()
		if err != nil {
			return ObjectInfo{}, unknown("no definite answer ("+text(out.err)+") and reading it back failed ("+text(err)+")", err)
		}
		if same {
			// Our first attempt landed; the retry lost to ourselves.
			return info, nil
		}
		return ObjectInfo{}, &opError{url: url, op: "put", detail: "another writer's object is there", kind: ErrPreconditionFailed, cause: out.err}
	}
}

// sameBytes reports whether r yields exactly want.
func sameBytes(r io.Reader, want []byte) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for len(want) > 0 {
		chunk, err := br.Peek(min(len(want), 64<<10))
		if len(chunk) == 0 && err != nil {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		if !bytes.Equal(chunk, want[:len(chunk)]) {
			return false, nil
		}
		want = want[len(chunk):]
		if _, err := br.Discard(len(chunk)); err != nil {
			return false, err
		}
	}
	_, err := br.ReadByte()
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, nil
}

// sizedReader counts what it reads and, when want >= 0, fails with an
// error instead of io.EOF if the body is not exactly want bytes long.
type sizedReader struct {
	r    io.Reader
	want int64
	n    int64
}

func (c *sizedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.want >= 0 {
		if c.n > c.want {
			return n, fmt.Errorf("body has more than %d bytes", c.want)
		}
		if err == io.EOF && c.n != c.want {
			return n, fmt.Errorf("body has %d bytes, want %d", c.n, c.want)
		}
	}
	return n, err
}
