package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithymw "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	// s3PartSize is the part size of a multipart upload, and the most a
	// non-seekable body is buffered before one is started.
	s3PartSize = 16 << 20
	// s3MaxSinglePut is the largest object one PutObject may carry.
	s3MaxSinglePut = 5 << 30
	// s3MaxParts is S3's limit on the parts of one multipart upload.
	s3MaxParts = 10000
)

// s3Store is a Store on an S3 bucket (or any S3-compatible server reached
// through AWS_ENDPOINT_URL).
type s3Store struct {
	loc      Location
	client   *s3.Client
	pageSize int32
}

func newS3Store(ctx context.Context, l Location, opts Options) (*s3Store, error) {
	maxAttempts := opts.maxAttempts()
	loadOpts := []func(*config.LoadOptions) error{
		// The standard retryer: capped exponential backoff with jitter on
		// throttling, 5xx, connection errors and timeouts; MaxAttempts
		// and the backoff alone bound the retries. Its client-side retry
		// quota is off: a bucket of 500 tokens, 14 taken by each retry
		// and given back only when that retry succeeds, ran dry after
		// some 35 failed retries over a store's life (a long ingest, a
		// vacuum of thousands of files, sluice serve for days), and from
		// then on every request failed at its first error, with attempts
		// left and no backoff (aws-sdk-go-v2 #3413).
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = 20 * time.Second
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, &opError{url: l.String(), op: "open", detail: "load AWS config: " + err.Error(), cause: err}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	// Set after loading: the loader tunes its own client (e.g. with
	// AWS_CA_BUNDLE) and refuses a plain *http.Client.
	var next aws.HTTPClient = cfg.HTTPClient
	if opts.HTTPClient != nil {
		next = opts.HTTPClient
	}
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = countingClient{next: next}
	pathStyle := cfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	if v, err := strconv.ParseBool(os.Getenv("AWS_S3_USE_PATH_STYLE")); err == nil {
		pathStyle = v
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		// Objects written without a checksum are normal; do not log each.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &s3Store{loc: l, client: client, pageSize: int32(opts.ListPageSize)}, nil
}

// attemptsKey carries an *atomic.Int32 that countingClient bumps on every
// HTTP attempt, so that a conditional Put knows whether the SDK retried it.
type attemptsKey struct{}

func withAttemptCounter(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

type countingClient struct{ next aws.HTTPClient }

func (c countingClient) Do(req *http.Request) (*http.Response, error) {
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return c.next.Do(req)
}

func (s *s3Store) fullKey(key string) string {
	if s.loc.Prefix == "" {
		return key
	}
	return s.loc.Prefix + "/" + key
}

func (s *s3Store) URL(key string) string { return joinKey(s.loc.String(), key) }

func (s *s3Store) Close() error { return nil }

// err maps an SDK error onto our sentinels, in one line naming the object.
func (s *s3Store) err(key, op string, err error) error {
	e := &opError{url: s.URL(key), op: op, cause: err}
	var ae smithy.APIError
	var re *smithyhttp.ResponseError
	status, code, msg := 0, "", ""
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	var nsb *s3types.NoSuchBucket
	switch {
	case code == "NoSuchBucket" || errors.As(err, &nsb):
		e.kind = ErrBucketNotFound
		e.detail = fmt.Sprintf("bucket %q does not exist", s.loc.Bucket)
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		e.kind = ErrNotFound
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed" || code == "ConditionalRequestConflict":
		e.kind = ErrPreconditionFailed
		e.detail = describeAPI(status, code, msg)
	case status == http.StatusForbidden || status == http.StatusUnauthorized ||
		code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" ||
		code == "ExpiredToken" || code == "InvalidToken":
		e.kind = ErrPermission
		e.detail = describeAPI(status, code, msg)
	case ae != nil:
		e.detail = describeAPI(status, code, msg)
	default:
		e.detail = err.Error()
	}
	return e
}

func describeAPI(status int, code, msg string) string {
	var parts []string
	if status != 0 {
		parts = append(parts, "HTTP "+strconv.Itoa(status))
	}
	if code != "" {
		parts = append(parts, code)
	}
	d := strings.Join(parts, " ")
	if msg != "" {
		d += ": " + msg
	}
	return d
}

// ambiguous reports whether a failed write may nevertheless have been
// applied. Only a definite refusal of the one request sent is not: a 4xx
// (or 3xx) answer to the first and only attempt, or nothing sent at all.
// Everything else may have landed:
//   - the context ended while the request was out;
//   - the SDK retried: an earlier attempt may have landed, whatever the
//     last one heard (a 412 may be the retry losing to its own first
//     attempt);
//   - no answer (a timeout, a dropped connection or response), or a 5xx
//     after every retry: the server may have applied it before failing;
//   - a 2xx whose response could not be read: it landed.
func ambiguous(ctx context.Context, attempts int32, status int) bool {
	switch {
	case attempts == 0:
		return false // never sent (signing, credentials, a context already done)
	case ctx.Err() != nil, attempts > 1:
		return true
	case status == 0 || status >= 500:
		return true
	case status >= 200 && status < 300:
		return true
	}
	return false
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, ObjectInfo{}, invalidKey(s.URL(key), "get", err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return nil, ObjectInfo{}, s.err(key, "get", err)
	}
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}
	return s.resumable(ctx, key, info.ETag, 0, -1, out.Body), info, nil
}

func (s *s3Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, invalidKey(s.URL(key), "get range", err)
	}
	if off < 0 {
		return nil, invalidKey(s.URL(key), "get range", fmt.Errorf("negative offset %d", off))
	}
	if length == 0 {
		if _, err := s.Stat(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	rng := fmt.Sprintf("bytes=%d-", off)
	if length > 0 {
		rng = fmt.Sprintf("bytes=%d-%d", off, off+length-1)
	}
	// A stored checksum covers the whole object, never a range: validating
	// a range against it fails (as it does on servers that send it anyway).
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), Range: &rng},
		func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			// Past the end: an empty read, as on local disk.
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, s.err(key, "get range", err)
	}
	end := int64(-1)
	if length > 0 {
		end = off + length
	}
	return s.resumable(ctx, key, aws.ToString(out.ETag), off, end, out.Body), nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "stat", err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return ObjectInfo{}, s.err(key, "stat", err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag), ModTime: aws.ToTime(out.LastModified)}, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return invalidKey(s.URL(key), "delete", err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		mapped := s.err(key, "delete", err)
		if errors.Is(mapped, ErrNotFound) && !errors.Is(mapped, ErrBucketNotFound) {
			return nil
		}
		return mapped
	}
	return nil
}

func (s *s3Store) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	root := ""
	if s.loc.Prefix != "" {
		root = s.loc.Prefix + "/"
	}
	in := &s3.ListObjectsV2Input{Bucket: &s.loc.Bucket, Prefix: aws.String(root + prefix)}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.err(prefix, "list", err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), root)
			info := ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), ModTime: aws.ToTime(o.LastModified)}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// modTimeOf reads when the server stored the object from a PUT response
// (Last-Modified if sent, else Date), falling back to our own clock.
func modTimeOf(md smithymw.Metadata) time.Time {
	if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && raw != nil {
		for _, h := range []string{"Last-Modified", "Date"} {
			if t, err := http.ParseTime(raw.Header.Get(h)); err == nil {
				return t
			}
		}
	}
	return time.Now()
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "put", err)
	}
	if isConditional(opts) {
		body, err := readBody(r, size, MaxConditionalPutSize)
		if err != nil {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: err.Error(), cause: err}
		}
		put := func(ctx context.Context) putOutcome {
			in := &s3.PutObjectInput{
				Bucket:        &s.loc.Bucket,
				Key:           aws.String(s.fullKey(key)),
				Body:          bytes.NewReader(body),
				ContentLength: aws.Int64(int64(len(body))),
			}
			if opts.IfAbsent {
				in.IfNoneMatch = aws.String("*")
			}
			if opts.IfMatch != "" {
				in.IfMatch = aws.String(opts.IfMatch)
			}
			actx, attempts := withAttemptCounter(ctx)
			info, err := s.putObject(actx, key, in)
			if err != nil {
				return putOutcome{err: err, ambiguous: ambiguous(ctx, attempts.Load(), httpStatus(err))}
			}
			return putOutcome{info: info}
		}
		get := func(ctx context.Context) (io.ReadCloser, ObjectInfo, error) { return s.Get(ctx, key) }
		return putConditional(ctx, s.URL(key), body, opts, put, get)
	}

	// Unconditional. A seekable body goes in one request the SDK can
	// rewind and retry.
	if rs, ok := r.(io.ReadSeeker); ok {
		cur, err := rs.Seek(0, io.SeekCurrent)
		if err == nil {
			var end int64
			end, err = rs.Seek(0, io.SeekEnd)
			if err == nil {
				_, err = rs.Seek(cur, io.SeekStart)
			}
			if err == nil && end-cur <= s3MaxSinglePut {
				n := end - cur
				if size >= 0 && n != size {
					return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: fmt.Sprintf("body has %d bytes, want %d", n, size)}
				}
				return s.putObject(ctx, key, &s3.PutObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), Body: rs, ContentLength: aws.Int64(n)})
			}
		}
	}
	if r == nil {
		r = bytes.NewReader(nil)
	}
	// Otherwise buffer one part: a small body goes in one request, a big
	// one as a multipart upload, which S3 publishes whole on completion.
	first := make([]byte, s3PartSize)
	n, err := io.ReadFull(r, first)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if size >= 0 && int64(n) != size {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: fmt.Sprintf("body has %d bytes, want %d", n, size)}
		}
		return s.putObject(ctx, key, &s3.PutObjectInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), Body: bytes.NewReader(first[:n]), ContentLength: aws.Int64(int64(n))})
	case err != nil:
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "read body: " + err.Error(), cause: err}
	}
	return s.putMultipart(ctx, key, first, r, size)
}

func (s *s3Store) putObject(ctx context.Context, key string, in *s3.PutObjectInput) (ObjectInfo, error) {
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return ObjectInfo{}, s.err(key, "put", err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(in.ContentLength), ETag: aws.ToString(out.ETag), ModTime: modTimeOf(out.ResultMetadata)}, nil
}

// putMultipart uploads first and the rest of r as the parts of one
// multipart upload, one part in memory at a time, and aborts the upload on
// any failure so no parts are left behind.
func (s *s3Store) putMultipart(ctx context.Context, key string, first []byte, r io.Reader, size int64) (info ObjectInfo, err error) {
	partSize := int64(s3PartSize)
	if size > 0 && size/partSize >= s3MaxParts {
		partSize = size/(s3MaxParts-1) + 1
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key))})
	if err != nil {
		return ObjectInfo{}, s.err(key, "put", err)
	}
	defer func() {
		if err != nil {
			// Best effort; the context may be the reason we failed.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), UploadId: created.UploadId})
		}
	}()
	var parts []s3types.CompletedPart
	var total int64
	buf := first
	for partNo := int32(1); ; partNo++ {
		if int64(len(buf)) < partSize && len(buf) > 0 && partNo == 1 {
			// first was read with the default size; top it up to partSize.
			more := make([]byte, partSize-int64(len(buf)))
			n, rerr := io.ReadFull(r, more)
			buf = append(buf, more[:n]...)
			if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
				return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "read body: " + rerr.Error(), cause: rerr}
			}
		}
		out, perr := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), UploadId: created.UploadId,
			PartNumber: aws.Int32(partNo), Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		})
		if perr != nil {
			return ObjectInfo{}, s.err(key, "put", perr)
		}
		parts = append(parts, s3types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(partNo)})
		total += int64(len(buf))
		if partNo == s3MaxParts {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "body exceeds the multipart limit"}
		}
		next := make([]byte, partSize)
		n, rerr := io.ReadFull(r, next)
		if n == 0 && (rerr == io.EOF || rerr == nil) {
			break
		}
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "read body: " + rerr.Error(), cause: rerr}
		}
		buf = next[:n]
	}
	if size >= 0 && total != size {
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: fmt.Sprintf("body has %d bytes, want %d", total, size)}
	}
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.loc.Bucket, Key: aws.String(s.fullKey(key)), UploadId: created.UploadId,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return ObjectInfo{}, s.err(key, "put", err)
	}
	return ObjectInfo{Key: key, Size: total, ETag: aws.ToString(done.ETag), ModTime: modTimeOf(done.ResultMetadata)}, nil
}

var _ Store = (*s3Store)(nil)
