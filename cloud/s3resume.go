package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// maxResumes bounds how many times one S3 download is resumed.
const maxResumes = 3

// resumingBody is an S3 object's body that resumes a download the
// connection broke mid-body, from the byte it got to, at the same version
// (If-Match on the ETag), up to maxResumes times — as Azure's retry
// reader does. The SDK retries a request, never a body half read.
type resumingBody struct {
	ctx  context.Context
	s    *s3Store
	key  string
	etag string
	off  int64 // the next byte's offset in the object
	end  int64 // one past the last byte wanted; < 0: the object's end
	body io.ReadCloser
	n    int // resumes so far
}

// resumable wraps body, which starts at byte off of key's version etag
// and ends before end (< 0: at the object's end). Without an ETag it
// cannot pin the version, and body is returned as is.
func (s *s3Store) resumable(ctx context.Context, key, etag string, off, end int64, body io.ReadCloser) io.ReadCloser {
	if etag == "" {
		return body
	}
	return &resumingBody{ctx: ctx, s: s, key: key, etag: etag, off: off, end: end, body: body}
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for {
		n, err := b.body.Read(p)
		b.off += int64(n)
		if err == nil || errors.Is(err, io.EOF) || b.ctx.Err() != nil || b.n >= maxResumes {
			return n, err
		}
		if b.end >= 0 && b.off >= b.end {
			return n, io.EOF // all of it came before the break
		}
		b.n++
		b.body.Close()
		rng := fmt.Sprintf("bytes=%d-", b.off)
		if b.end >= 0 {
			rng = fmt.Sprintf("bytes=%d-%d", b.off, b.end-1)
		}
		out, gerr := b.s.client.GetObject(b.ctx, &s3.GetObjectInput{Bucket: &b.s.loc.Bucket, Key: aws.String(b.s.fullKey(b.key)),
			Range: &rng, IfMatch: aws.String(b.etag)},
			func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
		if gerr != nil {
			b.body = io.NopCloser(&errReader{err})
			return n, fmt.Errorf("%w (resuming at byte %d failed too: %w)", err, b.off, b.s.err(b.key, "get", gerr))
		}
		b.body = out.Body
		if n > 0 {
			return n, nil
		}
	}
}

func (b *resumingBody) Close() error { return b.body.Close() }

// errReader fails every Read with err.
type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }
