package pqio

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

// sparkDir holds Parquet files written by Spark (see its README.md),
// relative to this package's folder.
const sparkDir = "../../testdata/spark-written"

// --- a store that counts requests -------------------------------------------------

// countingStore wraps a real store and counts reads, so tests can check how
// much a read costs on an object store.
type countingStore struct {
	cloud.Store

	mu     sync.Mutex
	gets   int // Get calls
	ranges int // GetRange calls
}

// newTestStore is a local-disk store in a fresh temporary folder.
func newTestStore(t testing.TB) *countingStore { return openTestStore(t, t.TempDir()) }

func openTestStore(t testing.TB, dir string) *countingStore {
	t.Helper()
	st, err := cloud.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingStore{Store: st}
}

func (s *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, cloud.ObjectInfo, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

func (s *countingStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	s.mu.Lock()
	s.ranges++
	s.mu.Unlock()
	return s.Store.GetRange(ctx, key, off, length)
}

func (s *countingStore) requests() (gets, ranges int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets, s.ranges
}

// --- helpers -------------------------------------------------------------------

func pqSchema(t testing.TB, s string) Schema {
	t.Helper()
	sc, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func pqSize(t testing.TB, st cloud.Store, key string) int64 {
	t.Helper()
	info, err := st.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// putRaw stores a Parquet file written by parquet-go directly from a group
// schema, for the shapes sluice itself never writes.
func putRaw(t *testing.T, st cloud.Store, key string, group parquet.Node, rows []parquet.Row, opts ...parquet.WriterOption) int64 {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, append([]parquet.WriterOption{parquet.NewSchema("raw", group)}, opts...)...)
	if len(rows) > 0 {
		if _, err := w.WriteRows(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), key, bytes.NewReader(buf.Bytes()), int64(buf.Len()), cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	return int64(buf.Len())
}
