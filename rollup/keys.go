package rollup

import (
	"encoding/binary"

	"github.com/sluice-data/sluice/catalog"
)

// keyIndex numbers the distinct keys, 0, 1, ... in order of first sight,
// and keeps each key's values for the output rows.
//
// A key of one integer-like column (int32, int64, date, bool) that is not
// NULL is looked up by its value: in dense when it is in [0, len(dense)),
// else in ints. Any other key (several columns, strings, NULL) is looked
// up by its byte encoding in ids. Against one map of encodings, the
// integer path took a 20-million-event rollup of 50,000 lists from 8.1 s
// to 3.1 s: more than half the time went to hashing and comparing
// encoded keys.
type keyIndex struct {
	ids map[string]int32
	// ints and dense hold the integer keys; dense[x] is key x's number,
	// -1 for none. No key of dense's range is in ints.
	ints  map[int64]int32
	dense []int32
	vals  [][]any
	buf   []byte
	// slab is room for the next keys' vals, made for many at once.
	slab []any
}

func newKeyIndex() *keyIndex { return &keyIndex{ids: map[string]int32{}, ints: map[int64]int32{}} }

func (ki *keyIndex) len() int { return len(ki.vals) }

// intKey tells whether row i's key is looked up by its integer value.
func intKey(cols []*colData, i int) bool {
	return len(cols) == 1 && cols[0].valid[i] && !isBytes(cols[0].typ.Kind)
}

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
	if intKey(cols, i) {
		x := cols[0].ints[i]
		if uint64(x) < uint64(len(ki.dense)) {
			return ki.dense[x]
		}
		if id, ok := ki.ints[x]; ok {
			return id
		}
		return -1
	}
	if id, ok := ki.ids[string(ki.encode(cols, i))]; ok {
		return id
	}
	return -1
}

// add numbers row i's key, which lookup just said is new, and leaves its
// encoding in ki.buf.
func (ki *keyIndex) add(cols []*colData, i int) int32 {
	id := int32(len(ki.vals))
	b := ki.encode(cols, i)
	if intKey(cols, i) {
		ki.addInt(cols[0].ints[i], id)
	} else {
		ki.ids[string(b)] = id
	}
	if len(ki.slab) < len(cols) {
		ki.slab = make([]any, 1024*len(cols))
	}
	vals := ki.slab[:len(cols):len(cols)]
	ki.slab = ki.slab[len(cols):]
	for j, c := range cols {
		vals[j] = goValue(c, i)
	}
	ki.vals = append(ki.vals, vals)
	return id
}

// addInt records integer key x as number id. dense grows (doubling, so
// that moving keys out of ints is paid once per doubling) to cover x when
// x is below 4 times the number of keys plus 1024: its size stays within
// a few times the keys', whatever their values.
func (ki *keyIndex) addInt(x int64, id int32) {
	limit := 4*int64(len(ki.vals)+1) + 1024
	if x >= 0 && x >= int64(len(ki.dense)) && x < limit {
		n := min(max(2*int64(len(ki.dense)), x+1, 1024), limit)
		old := int64(len(ki.dense))
		for range n - old {
			ki.dense = append(ki.dense, -1)
		}
		for k, v := range ki.ints {
			if k >= old && k < n {
				ki.dense[k] = v
				delete(ki.ints, k)
			}
		}
	}
	if uint64(x) < uint64(len(ki.dense)) {
		ki.dense[x] = id
		return
	}
	ki.ints[x] = id
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
