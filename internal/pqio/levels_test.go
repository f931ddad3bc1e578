package pqio

import (
	"testing"

	"github.com/parquet-go/parquet-go"
)

// SetDefinitionLevel gives what Value.Level gives, and with this
// parquet-go it takes the fast path (a failing check after an upgrade
// means it fell back to Level: correct, but slow).
func TestSetDefinitionLevelMatchesLevel(t *testing.T) {
	if defLevelOffset == noOffset {
		t.Fatal("parquet.Value's definition level was not found: SetDefinitionLevel falls back to Value.Level")
	}
	for _, v := range []parquet.Value{
		parquet.Int32Value(42), parquet.Int64Value(-1), parquet.FloatValue(1.5), parquet.DoubleValue(-0.25),
		parquet.BooleanValue(false), parquet.ByteArrayValue([]byte("abc")), parquet.FixedLenByteArrayValue([]byte{1, 2, 3, 4}),
		parquet.Int64Value(9).Level(0, 0, 7),
	} {
		got := v
		SetDefinitionLevel(&got, 1)
		want := v.Level(v.RepetitionLevel(), 1, max(v.Column(), 0))
		if got.DefinitionLevel() != 1 || got.RepetitionLevel() != want.RepetitionLevel() || got.Kind() != want.Kind() || !parquet.Equal(got, want) {
			t.Errorf("%v: got level %d kind %s value %v, want %v", v, got.DefinitionLevel(), got.Kind(), got, want)
		}
		if got.Column() != v.Column() {
			t.Errorf("%v: column index %d, want %d unchanged", v, got.Column(), v.Column())
		}
	}
}

// BenchmarkSetDefinitionLevel and BenchmarkValueLevel build 4,096 levelled
// int64 values each way.
func BenchmarkSetDefinitionLevel(b *testing.B) {
	dst := make([]parquet.Value, 4096)
	for b.Loop() {
		for i := range dst {
			dst[i] = parquet.Int64Value(int64(i))
			SetDefinitionLevel(&dst[i], 1)
		}
	}
}

func BenchmarkValueLevel(b *testing.B) {
	dst := make([]parquet.Value, 4096)
	for b.Loop() {
		for i := range dst {
			dst[i] = parquet.Int64Value(int64(i)).Level(0, 1, 0)
		}
	}
}
