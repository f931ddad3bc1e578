package compact

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/sluice-data/sluice/catalog"
)

// The order-independent checksum that verifies a rewrite: every row's
// values, hashed in the table's column order, make a row hash; the checksum
// is the sum of the row hashes. A sum (not a XOR) keeps duplicate rows from
// cancelling out, and neither the order of the files nor the order of the
// rows within them changes it, while any changed, lost or added value does
// (up to 64-bit collisions).
//
// It is computed column-wise: for a batch of rows (a row group), each
// column's values are hashed (salted by the column) and folded into
// rowHash[i] in column order, then the finished row hashes are mixed and
// added up. The fold is a multiply-add (see fold): the values' hashes are
// already well mixed, so it needs no mixing of its own, and it is the
// inner loop of every rewrite's verification, on both sides. Values are
// hashed in the table's representation, after conversion (an INT96 input
// and its microsecond output hash alike), so inputs and outputs compare.

// hashSeed is the seed of byte-string hashes; it is per process, and
// checksums are only ever compared within one.
var hashSeed = maphash.MakeSeed()

// mix64 is splitmix64's finalizer: a bijection that spreads every input bit
// over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// valueHasher hashes the non-null values of a table column, as parquet-go
// holds them in the table's physical type. It is the column's physical
// kind: rowHashes.mix switches on it once per batch, not once per value.
type valueHasher parquet.Kind

// hasherFor returns the value hasher of a table column's physical type.
func hasherFor(k parquet.Kind) valueHasher { return valueHasher(k) }

// hash hashes one non-null value (the reference of mix's loops).
func (hv valueHasher) hash(v *parquet.Value) uint64 {
	switch parquet.Kind(hv) {
	case parquet.Boolean:
		return hashBool(v.Boolean())
	case parquet.Int32:
		return uint64(int64(v.Int32()))
	case parquet.Int64:
		return uint64(v.Int64())
	case parquet.Float:
		return uint64(math.Float32bits(v.Float()))
	case parquet.Double:
		return math.Float64bits(v.Double())
	case parquet.Int96:
		return hashInt96(v.Int96())
	default: // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
		return maphash.Bytes(hashSeed, v.ByteArray())
	}
}

func hashBool(b bool) uint64 {
	if b {
		return 1
	}
	return 2
}

func hashInt96(i deprecated.Int96) uint64 {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(i[1])<<32|uint64(i[0]))
	binary.LittleEndian.PutUint32(b[8:], i[2])
	return maphash.Bytes(hashSeed, b[:])
}

// golden is 2^64 divided by the golden ratio, odd: the multiplier of fold
// and of columnSalt.
const golden = 0x9e3779b97f4a7c15

// fold adds the salted hash x of a row's next column value to the row's
// hash so far: a bijection of row for each x, so no value is lost, and
// order-dependent, so values swapped between columns change the result.
func fold(row, x uint64) uint64 { return row*golden + x }

// columnSalt makes the same value hash differently in different columns,
// so that swapping two columns' values changes the checksum.
func columnSalt(col int) uint64 { return mix64(uint64(col+1) * golden) }

// nullHash is the hash of a NULL in column col.
func nullHash(col int) uint64 { return mix64(columnSalt(col) ^ 0x6e756c6c) }

// rowHashes accumulates the checksum of batches of rows, column by column.
type rowHashes struct {
	rows []uint64 // per-row hash of the current batch
	sum  uint64   // sum of the finished rows' hashes
	n    int64    // rows finished
}

// begin starts a batch of n rows.
func (h *rowHashes) begin(n int) {
	if cap(h.rows) < n {
		h.rows = make([]uint64, n)
	}
	h.rows = h.rows[:n]
	clear(h.rows)
}

// mix folds one column's hashes of rows [off, off+len(vals)) of the batch;
// nulls hash as nullHash(col). Call it for every column of the batch, in
// column order.
func (h *rowHashes) mix(col int, off int, vals []parquet.Value, hv valueHasher) {
	salt := columnSalt(col)
	null := nullHash(col)
	rows := h.rows[off : off+len(vals)]
	rows = rows[:len(vals)]
	// One loop per kind, with the value's hash inline: the same hashes as
	// hv.hash, without a call per value.
	switch parquet.Kind(hv) {
	case parquet.Int32:
		for i := range vals {
			x := null
			if v := &vals[i]; !v.IsNull() {
				x = mix64(uint64(int64(v.Int32())) ^ salt)
			}
			rows[i] = fold(rows[i], x)
		}
	case parquet.Int64:
		for i := range vals {
			x := null
			if v := &vals[i]; !v.IsNull() {
				x = mix64(uint64(v.Int64()) ^ salt)
			}
			rows[i] = fold(rows[i], x)
		}
	case parquet.Double:
		for i := range vals {
			x := null
			if v := &vals[i]; !v.IsNull() {
				x = mix64(math.Float64bits(v.Double()) ^ salt)
			}
			rows[i] = fold(rows[i], x)
		}
	case parquet.ByteArray, parquet.FixedLenByteArray:
		for i := range vals {
			x := null
			if v := &vals[i]; !v.IsNull() {
				x = mix64(maphash.Bytes(hashSeed, v.ByteArray()) ^ salt)
			}
			rows[i] = fold(rows[i], x)
		}
	default:
		for i := range vals {
			x := null
			if v := &vals[i]; !v.IsNull() {
				x = mix64(hv.hash(v) ^ salt)
			}
			rows[i] = fold(rows[i], x)
		}
	}
}

// mixNulls folds n NULLs of column col into rows [off, off+n) of the batch.
func (h *rowHashes) mixNulls(col int, off, n int) {
	x := nullHash(col)
	rows := h.rows[off : off+n]
	for i := range rows {
		rows[i] = fold(rows[i], x)
	}
}

// end finishes the batch: its row hashes are added to the sum.
func (h *rowHashes) end() {
	for _, r := range h.rows {
		h.sum += mix64(r)
	}
	h.n += int64(len(h.rows))
	h.rows = h.rows[:0]
}

// tableHashers returns the value hasher of each column of the table.
func tableHashers(ps *parquet.Schema, schema catalog.Schema) []valueHasher {
	leaves := ps.Fields()
	out := make([]valueHasher, len(schema.Columns))
	for i := range schema.Columns {
		out[i] = hasherFor(leaves[i].Type().Kind())
	}
	return out
}
