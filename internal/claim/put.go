package claim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-data/sluice/cloud"
	"golang.org/x/sync/errgroup"
)

// Read reads the whole object at key and returns it with its ETag. Its
// errors name the object; cloud.ErrNotFound (wrapped) when there is none.
func Read(ctx context.Context, st cloud.Store, key string) (data []byte, etag string, err error) {
	rc, info, err := st.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err = io.ReadAll(rc)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", cloud.Redact(st.URL(key)), err)
	}
	return data, info.ETag, nil
}

// PutOnce creates key with data, create-only. won tells whether this
// write is the one that exists, and etag is then its ETag: false with no
// error when another writer's object was there first. Data must hold
// something only this writer writes (a token, a worker's name), so that
// an unknown outcome can be settled by comparing bytes (see PutSettled).
func PutOnce(ctx context.Context, st cloud.Store, key string, data []byte) (etag string, won bool, err error) {
	return PutSettled(ctx, st, key, data, cloud.PutOptions{IfAbsent: true})
}

// PutSettled is a conditional put (opts.IfAbsent or opts.IfMatch) whose
// outcome is always settled: won with the new ETag, or lost (a failed
// precondition) with no error. One the store could not settle
// (cloud.ErrOutcomeUnknown) is settled here by reading the object back:
// data's bytes there mean this write landed. An error wraps
// cloud.ErrOutcomeUnknown only when that read-back failed too: the write
// may then have landed or not.
func PutSettled(ctx context.Context, st cloud.Store, key string, data []byte, opts cloud.PutOptions) (etag string, won bool, err error) {
	info, err := st.Put(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
	switch {
	case err == nil:
		return info.ETag, true, nil
	case errors.Is(err, cloud.ErrPreconditionFailed):
		return "", false, nil
	case !errors.Is(err, cloud.ErrOutcomeUnknown):
		return "", false, err
	}
	got, etag, rerr := Read(ctx, st, key)
	switch {
	case errors.Is(rerr, cloud.ErrNotFound) && opts.IfMatch != "":
		// The object was deleted: a swap cannot have landed.
		return "", false, nil
	case rerr != nil:
		return "", false, fmt.Errorf("%w (reading it back: %v)", err, rerr)
	}
	return etag, bytes.Equal(got, data), nil
}

// ReadLimit is how many reads ReadMany has in flight at most when its
// caller gives no limit: enough to hide a store's latency (114 result
// objects at 30 ms each take 3.4 s one after another, a quarter second
// 16 at a time), few enough not to be throttled.
const ReadLimit = 16

// ReadMany reads the whole objects at keys, at most limit at once
// (ReadLimit where limit is zero or less), and returns their bytes in
// keys' order. Its error is the first key's, in keys' order, that
// failed, so that a run reports the same one whatever order the reads
// ended in.
func ReadMany(ctx context.Context, st cloud.Store, keys []string, limit int) ([][]byte, error) {
	if limit <= 0 {
		limit = ReadLimit
	}
	out := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	var g errgroup.Group
	g.SetLimit(limit)
	for i, key := range keys {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				errs[i] = err
				return nil
			}
			out[i], _, errs[i] = Read(ctx, st, key)
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the store's errors name the object
		}
	}
	return out, nil
}
