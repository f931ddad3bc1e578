package catalog

import (
	"bytes"
	"context"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/sluice-data/sluice/cloud"
)

func pqSchema(t testing.TB, s string) Schema {
	t.Helper()
	sc, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

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
