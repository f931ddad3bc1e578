package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

const (
	// azBlockSize is the block size of a staged upload, and the most a
	// non-seekable body is buffered before one is started.
	azBlockSize = 8 << 20
	// azUploadConcurrency bounds the blocks of one upload in flight (each
	// holds azBlockSize bytes of memory).
	azUploadConcurrency = 4
)

// azureStore is a Store on an Azure Blob container (ADLS Gen2 accounts
// included: we speak the Blob API, which they serve too).
type azureStore struct {
	loc       Location
	container *container.Client
	pageSize  int32
}

// connStringAccount returns the AccountName of a storage connection string.
func connStringAccount(cs string) string {
	for _, kv := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if strings.EqualFold(k, "AccountName") {
			return v
		}
	}
	return ""
}

func newAzureStore(ctx context.Context, l Location, opts Options) (*azureStore, error) {
	retries := int32(opts.maxAttempts() - 1)
	if retries == 0 {
		retries = -1 // azcore reads 0 as "the default, 3"; < 0 is "none"
	}
	co := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{
		// azcore's retry policy: exponential backoff with jitter on
		// 408/429/5xx and transport errors, capped at MaxRetryDelay.
		Retry: policy.RetryOptions{
			MaxRetries:    retries,
			RetryDelay:    200 * time.Millisecond,
			MaxRetryDelay: 20 * time.Second,
		},
		PerRetryPolicies: []policy.Policy{countingPolicy{}},
	}}
	if opts.HTTPClient != nil {
		co.Transport = opts.HTTPClient
	}
	var client *azblob.Client
	var err error
	if cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); cs != "" {
		if acct := connStringAccount(cs); acct != "" && acct != l.Account {
			return nil, &opError{url: l.String(), op: "open", detail: fmt.Sprintf("AZURE_STORAGE_CONNECTION_STRING is for account %q, not %q", acct, l.Account), kind: ErrPermission}
		}
		client, err = azblob.NewClientFromConnectionString(cs, co)
		if err != nil {
			// The parser's errors do not echo the string; still, say
			// only which variable was bad, never its value.
			return nil, &opError{url: l.String(), op: "open", detail: "AZURE_STORAGE_CONNECTION_STRING does not parse", cause: err}
		}
	} else {
		cred, cerr := azidentity.NewDefaultAzureCredential(nil)
		if cerr != nil {
			return nil, &opError{url: l.String(), op: "open", detail: "azure credentials: " + OneLine(cerr.Error(), cloudLineLimit), kind: ErrPermission, cause: cerr}
		}
		client, err = azblob.NewClient("https://"+l.Account+".blob.core.windows.net/", cred, co)
		if err != nil {
			return nil, &opError{url: l.String(), op: "open", detail: OneLine(err.Error(), cloudLineLimit), cause: err}
		}
	}
	return &azureStore{
		loc:       l,
		container: client.ServiceClient().NewContainerClient(l.Bucket),
		pageSize:  int32(opts.ListPageSize),
	}, nil
}

// countingPolicy bumps the attempt counter withAttemptCounter put in the
// request's context, once per try.
type countingPolicy struct{}

func (countingPolicy) Do(req *policy.Request) (*http.Response, error) {
	if n, ok := req.Raw().Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return req.Next()
}

func (s *azureStore) fullKey(key string) string {
	if s.loc.Prefix == "" {
		return key
	}
	return s.loc.Prefix + "/" + key
}

func (s *azureStore) URL(key string) string { return joinKey(s.loc.String(), key) }

func (s *azureStore) Close() error { return nil }

func (s *azureStore) blob(key string) *blockblob.Client {
	return s.container.NewBlockBlobClient(s.fullKey(key))
}

// err maps an azcore error onto our sentinels. azcore's ResponseError text
// spans many lines (request, response, headers), so the message is built
// from its status and code only.
func (s *azureStore) err(key, op string, err error) error {
	e := &opError{url: s.URL(key), op: op, cause: err}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		e.detail = err.Error()
		return e
	}
	code := re.ErrorCode
	switch {
	case code == "ContainerNotFound":
		e.kind = ErrBucketNotFound
		e.detail = fmt.Sprintf("container %q does not exist", s.loc.Bucket)
	case code == "BlobNotFound" || re.StatusCode == http.StatusNotFound:
		e.kind = ErrNotFound
		if code != "" {
			e.detail = code
		}
	case re.StatusCode == http.StatusPreconditionFailed || code == "BlobAlreadyExists" || code == "ConditionNotMet":
		e.kind = ErrPreconditionFailed
		e.detail = fmt.Sprintf("HTTP %d %s", re.StatusCode, code)
	case re.StatusCode == http.StatusForbidden || re.StatusCode == http.StatusUnauthorized:
		e.kind = ErrPermission
		e.detail = fmt.Sprintf("HTTP %d %s", re.StatusCode, code)
	default:
		e.detail = fmt.Sprintf("HTTP %d %s", re.StatusCode, code)
	}
	return e
}

func azStatus(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func infoFromProps(key string, size *int64, etag *azcore.ETag, mod *time.Time) ObjectInfo {
	info := ObjectInfo{Key: key}
	if size != nil {
		info.Size = *size
	}
	if etag != nil {
		info.ETag = string(*etag)
	}
	if mod != nil {
		info.ModTime = *mod
	}
	return info
}

func (s *azureStore) download(ctx context.Context, key, op string, rng blob.HTTPRange) (io.ReadCloser, ObjectInfo, error) {
	resp, err := s.blob(key).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		return nil, ObjectInfo{}, s.err(key, op, err)
	}
	info := infoFromProps(key, resp.ContentLength, resp.ETag, resp.LastModified)
	// The retry reader resumes a broken download at the same version
	// (If-Match on the ETag) instead of failing the whole read.
	return resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: 3}), info, nil
}

func (s *azureStore) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, ObjectInfo{}, invalidKey(s.URL(key), "get", err)
	}
	return s.download(ctx, key, "get", blob.HTTPRange{})
}

func (s *azureStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, invalidKey(s.URL(key), "get range", err)
	}
	if off < 0 {
		return nil, invalidKey(s.URL(key), "get range", fmt.Errorf("negative offset %d", off))
	}
	if length == 0 {
		// Count 0 means "to the end" to azblob; an empty range needs no
		// request beyond the existence check.
		if _, err := s.Stat(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	rng := blob.HTTPRange{Offset: off}
	if length > 0 {
		rng.Count = length
	}
	rc, _, err := s.download(ctx, key, "get range", rng)
	if err != nil && azStatus(err) == http.StatusRequestedRangeNotSatisfiable {
		// Past the end: an empty read, as on local disk.
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	return rc, err
}

func (s *azureStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "stat", err)
	}
	p, err := s.blob(key).GetProperties(ctx, nil)
	if err != nil {
		return ObjectInfo{}, s.err(key, "stat", err)
	}
	return infoFromProps(key, p.ContentLength, p.ETag, p.LastModified), nil
}

func (s *azureStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return invalidKey(s.URL(key), "delete", err)
	}
	_, err := s.blob(key).Delete(ctx, nil)
	if err != nil {
		mapped := s.err(key, "delete", err)
		if errors.Is(mapped, ErrNotFound) && !errors.Is(mapped, ErrBucketNotFound) {
			return nil
		}
		return mapped
	}
	return nil
}

func (s *azureStore) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	root := ""
	if s.loc.Prefix != "" {
		root = s.loc.Prefix + "/"
	}
	o := &container.ListBlobsFlatOptions{Prefix: ptr(root + prefix)}
	if s.pageSize > 0 {
		o.MaxResults = ptr(s.pageSize)
	}
	pager := s.container.NewListBlobsFlatPager(o)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return s.err(prefix, "list", err)
		}
		for _, it := range page.Segment.BlobItems {
			if it == nil || it.Name == nil {
				continue
			}
			key := strings.TrimPrefix(*it.Name, root)
			info := ObjectInfo{Key: key}
			if p := it.Properties; p != nil {
				info = infoFromProps(key, p.ContentLength, p.ETag, p.LastModified)
			}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (s *azureStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, invalidKey(s.URL(key), "put", err)
	}
	bb := s.blob(key)
	if isConditional(opts) {
		body, err := readBody(r, size, MaxConditionalPutSize)
		if err != nil {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: err.Error(), cause: err}
		}
		mac := &blob.ModifiedAccessConditions{}
		if opts.IfAbsent {
			mac.IfNoneMatch = ptr(azcore.ETagAny)
		}
		if opts.IfMatch != "" {
			mac.IfMatch = ptr(azcore.ETag(opts.IfMatch))
		}
		put := func(ctx context.Context) putOutcome {
			actx, attempts := withAttemptCounter(ctx)
			// One Put Blob request: atomic, and checked by the service.
			info, err := s.upload(actx, key, bb, body, &blob.AccessConditions{ModifiedAccessConditions: mac})
			if err != nil {
				return putOutcome{err: err, ambiguous: ambiguous(ctx, attempts.Load(), azStatus(err))}
			}
			return putOutcome{info: info}
		}
		get := func(ctx context.Context) (io.ReadCloser, ObjectInfo, error) { return s.Get(ctx, key) }
		return putConditional(ctx, s.URL(key), body, opts, put, get)
	}

	if r == nil {
		r = bytes.NewReader(nil)
	}
	// A body that fits one block goes in one Put Blob; a bigger one is
	// staged block by block and published whole by Put Block List.
	first := make([]byte, azBlockSize)
	n, err := io.ReadFull(r, first)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if size >= 0 && int64(n) != size {
			return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: fmt.Sprintf("body has %d bytes, want %d", n, size)}
		}
		return s.upload(ctx, key, bb, first[:n], nil)
	case err != nil:
		return ObjectInfo{}, &opError{url: s.URL(key), op: "put", detail: "read body: " + err.Error(), cause: err}
	}
	// sizedReader fails the read — and so the upload, before its block
	// list is committed — if the body is not size bytes long.
	cr := &sizedReader{r: io.MultiReader(bytes.NewReader(first), r), want: size}
	resp, err := bb.UploadStream(ctx, cr, &blockblob.UploadStreamOptions{BlockSize: azBlockSize, Concurrency: azUploadConcurrency})
	if err != nil {
		return ObjectInfo{}, s.err(key, "put", err)
	}
	return infoFromProps(key, &cr.n, resp.ETag, resp.LastModified), nil
}

func (s *azureStore) upload(ctx context.Context, key string, bb *blockblob.Client, body []byte, ac *blob.AccessConditions) (ObjectInfo, error) {
	resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(body)), &blockblob.UploadOptions{AccessConditions: ac})
	if err != nil {
		return ObjectInfo{}, s.err(key, "put", err)
	}
	n := int64(len(body))
	return infoFromProps(key, &n, resp.ETag, resp.LastModified), nil
}

var _ Store = (*azureStore)(nil)
