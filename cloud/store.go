package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Sentinel errors. Every error a Store returns for one of these conditions
// wraps the sentinel, so callers test with errors.Is and never parse
// messages. ErrOutcomeUnknown is in errors.go.
var (
	// ErrNotFound: the object (or the bucket/container) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrBucketNotFound: the bucket (S3) or container (Azure) itself does
	// not exist. It wraps ErrNotFound, so errors.Is(err, ErrNotFound) holds
	// too; test for it when a missing bucket is a configuration error
	// rather than a missing object.
	ErrBucketNotFound = fmt.Errorf("bucket %w", ErrNotFound)
	// ErrPreconditionFailed: a conditional Put lost: the object already
	// existed (IfAbsent) or its ETag no longer matched (IfMatch). Azure's
	// 409 BlobAlreadyExists and every store's 412 both map here.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrUnsupportedURL: the location's scheme or shape is not one we serve.
	ErrUnsupportedURL = errors.New("unsupported location")
	// ErrPermission: the credentials were refused (401/403, EACCES).
	ErrPermission = errors.New("permission denied")
	// ErrInvalidKey: the key is empty, starts with '/', holds NUL or a
	// backslash, is longer than 1024 bytes, has an empty, "." or ".."
	// segment or one longer than 255 bytes, or names a reserved ".tmp-"
	// file. Every store
	// rejects the same keys, so a table that works on local disk works on
	// S3 and Azure too.
	ErrInvalidKey = errors.New("invalid key")
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	// Key is the object's key relative to the store's root, '/'-separated,
	// never with a leading '/'.
	Key string
	// Size in bytes.
	Size int64
	// ETag identifies this exact version of the object. It is opaque: pass
	// it back in PutOptions.IfMatch, never parse it. On local disk it
	// changes on every Put; on S3 it is the content's MD5 (a Put of the
	// same bytes keeps it); on Azure it changes on every Put.
	ETag string
	// ModTime is when this version of the object was written.
	ModTime time.Time
}

// PutOptions makes a Put conditional. The zero value is an unconditional
// overwrite.
type PutOptions struct {
	// IfAbsent makes the Put create-only: it fails with
	// ErrPreconditionFailed if the key exists. Exactly one of several
	// racing creators wins.
	IfAbsent bool
	// IfMatch, when not empty, makes the Put a compare-and-swap: it fails
	// with ErrPreconditionFailed unless the key exists with this ETag.
	IfMatch string
}

// Store is an object store rooted at one location (a folder, or a bucket or
// container plus a prefix). Keys are relative to that root and
// '/'-separated; every store refuses the same malformed keys with
// ErrInvalidKey. All methods are safe for concurrent use.
type Store interface {
	// Get returns a reader over the whole object, which the caller closes.
	// ErrNotFound if the key does not exist.
	Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// GetRange returns length bytes starting at off; length < 0 reads to the
	// end. ErrNotFound if the key does not exist.
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Put stores size bytes read from r under key (size < 0: unknown).
	// The object appears whole or not at all: a reader never sees a partial
	// object. A conditional Put whose outcome was ambiguous (a timeout, a
	// retried request) is resolved by reading the object back, never
	// guessed; what that cannot settle fails with ErrOutcomeUnknown. If r
	// is an io.Seeker, Put may rewind it to retry.
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error)
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order, paging as needed. fn returning an error stops the
	// listing with that error. Listing a prefix with no objects is not an
	// error.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Delete removes key. Deleting a key that does not exist is not an
	// error (idempotent).
	Delete(ctx context.Context, key string) error
	// Stat returns the object's info. ErrNotFound if it does not exist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// URL returns the location of key as users write it: an absolute path
	// on local disk, s3://bucket/prefix/key or az://account/container/key.
	URL(key string) string
	// Close releases the store's resources.
	Close() error
}

// PutFile stores the local file f, of size bytes, under key, as Put does,
// for a caller that wrote f and is done with it. On local disk,
// when f lives on the store's file system, the object becomes f's data by
// a hard link instead of a copy, so a big file is written once, not
// twice; f must then not be written again (removing it is fine). Other
// stores, and local disk across file systems, read f from its start.
func PutFile(ctx context.Context, st Store, key string, f *os.File, size int64, opts PutOptions) (ObjectInfo, error) {
	if ls, ok := st.(*localStore); ok {
		return ls.putFile(ctx, key, f, size, opts)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ObjectInfo{}, &opError{url: st.URL(key), op: "put", detail: errText(err), cause: err}
	}
	return st.Put(ctx, key, f, size, opts)
}
