package rollup

import (
	"encoding/binary"

	"github.com/sluice-data/sluice/catalog"
)

// keyIndex numbers the distinct keys, 0, 1, ... in order of first sight,
// and keeps each key's values for the output rows.
type keyIndex struct {
	ids  map[string]int32
	vals [][]any
	buf  []byte
}

func newKeyIndex() *keyIndex { return &keyIndex{ids: map[string]int32{}} }

func (ki *keyIndex) len() int { return len(ki.vals) }

// encode returns row i's key as bytes that are equal exactly when the keys
// are: a NULL flag per column, then the value (a length prefix for byte
// values).
func (ki *keyIndex) encode(cols []*colData, i int) []byte {
	b := ki.buf[:0]
	for _, c := range cols {
		if !c.valid[i] {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		if isBytes(c.typ.Kind) {
			v := c.value(i)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		} else {
			b = binary.LittleEndian.AppendUint64(b, uint64(c.ints[i]))
		}
	}
	ki.buf = b
	return b
}

// lookup returns row i's key number, -1 if the key is new.
func (ki *keyIndex) lookup(cols []*colData, i int) int32 {
	if id, ok := ki.ids[string(ki.encode(cols, i))]; ok {
		return id
	}
	return -1
}

// add numbers row i's key, which lookup just said is new (its encoding is
// still in ki.buf).
func (ki *keyIndex) add(cols []*colData, i int) int32 {
	id := int32(len(ki.vals))
	ki.ids[string(ki.buf)] = id
	vals := make([]any, len(cols))
	for j, c := range cols {
		vals[j] = goValue(c, i)
	}
	ki.vals = append(ki.vals, vals)
	return id
}

// goValue is row i of c as catalog writes it: nil for NULL.
func goValue(c *colData, i int) any {
	if !c.valid[i] {
		return nil
	}
	switch c.typ.Kind {
	case catalog.KindInt32:
		return int32(c.ints[i])
	case catalog.KindInt64:
		return c.ints[i]
	case catalog.KindBool:
		return c.ints[i] != 0
	case catalog.KindDate:
		return dayTime(c.ints[i])
	case catalog.KindBinary:
		return append([]byte(nil), c.value(i)...)
	default: // string, uuid
		return string(c.value(i))
	}
}
