package pqio

import (
	"reflect"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// parquet-go's Value.Level is the only exported way to give a value its
// definition level, and it is not inlined: its result is assembled a byte
// at a time in memory that the caller then copies 16 bytes at a time, a
// store-forwarding stall per value. Building an int64 value with Level
// takes about 30 ns, without it 1.5 ns, and a nullable column's every
// non-null value needs level 1. SetDefinitionLevel writes the one byte in
// place instead. Its offset is read from the type by reflection, not
// assumed, and checked once against Level; if parquet-go changes Value so
// that the check fails, SetDefinitionLevel falls back to Level.

// defLevelOffset is the offset of parquet.Value's definition level byte,
// or noOffset when SetDefinitionLevel must use Value.Level.
var defLevelOffset = findDefLevelOffset()

const noOffset = ^uintptr(0)

func findDefLevelOffset() uintptr {
	f, ok := reflect.TypeFor[parquet.Value]().FieldByName("definitionLevel")
	if !ok || f.Type.Kind() != reflect.Uint8 {
		return noOffset
	}
	// The byte must be the definition level and nothing else: set it on
	// values of every shape and compare with what Level gives.
	for _, v := range []parquet.Value{parquet.Int64Value(-7), parquet.ByteArrayValue([]byte("probe")), parquet.BooleanValue(true), parquet.DoubleValue(2.5)} {
		for _, def := range []int{1, 3} {
			got, want := v, v.Level(0, def, 0)
			*(*byte)(unsafe.Add(unsafe.Pointer(&got), f.Offset)) = byte(def)
			if got.DefinitionLevel() != def || got.RepetitionLevel() != 0 || got.Column() != v.Column() ||
				!parquet.Equal(got, want) || got.Kind() != want.Kind() {
				return noOffset
			}
		}
	}
	return f.Offset
}

// SetDefinitionLevel sets v's definition level to def (0 to 255), leaving
// its value, repetition level and column index as they are: what
// v.Level(v.RepetitionLevel(), def, v.Column()) returns, without its cost.
// (Should it fall back to Level, a value without a column index gets
// column 0, which column buffers do not read.)
func SetDefinitionLevel(v *parquet.Value, def int) {
	if defLevelOffset == noOffset {
		setLevel(v, def)
		return
	}
	*(*byte)(unsafe.Add(unsafe.Pointer(v), defLevelOffset)) = byte(def)
}

// setLevel is SetDefinitionLevel's fallback, apart so that the fast path
// inlines at its callers.
func setLevel(v *parquet.Value, def int) {
	*v = v.Level(v.RepetitionLevel(), def, max(v.Column(), 0))
}
