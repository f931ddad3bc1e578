package compact

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/parquet-go/parquet-go"

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
// column's values are hashed and mixed into rowHash[i] in column order, then
// the finished row hashes are added up. Values are hashed in the table's
// representation, after conversion (an INT96 input and its microsecond
// output hash alike), so inputs and outputs compare.

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

// valueHasher hashes one non-null value of a table column, as parquet-go
// holds it in the table's physical type.
type valueHasher func(v *parquet.Value) uint64

// hasherFor returns the value hasher of a table column's physical type.
func hasherFor(k parquet.Kind) valueHasher {
	switch k {
	case parquet.Boolean:
		return func(v *parquet.Value) uint64 {
			if v.Boolean() {
				return 1
			}
			return 2
		}
	case parquet.Int32:
		return func(v *parquet.Value) uint64 { return uint64(int64(v.Int32())) }
	case parquet.Int64:
		return func(v *parquet.Value) uint64 { return uint64(v.Int64()) }
	case parquet.Float:
		return func(v *parquet.Value) uint64 { return uint64(math.Float32bits(v.Float())) }
	case parquet.Double:
		return func(v *parquet.Value) uint64 { return math.Float64bits(v.Double()) }
	case parquet.Int96:
		return func(v *parquet.Value) uint64 {
			i := v.Int96()
			return maphash.Bytes(hashSeed, binary.LittleEndian.AppendUint32(
				binary.LittleEndian.AppendUint64(nil, uint64(i[1])<<32|uint64(i[0])), i[2]))
		}
	default: // BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
		return func(v *parquet.Value) uint64 { return maphash.Bytes(hashSeed, v.ByteArray()) }
	}
}

// columnSalt makes the same value hash differently in different columns,
// so that swapping two columns' values changes the checksum.
func columnSalt(col int) uint64 { return mix64(uint64(col+1) * 0x9e3779b97f4a7c15) }

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
	for i := range vals {
		x := null
		if !vals[i].IsNull() {
			x = mix64(hv(&vals[i]) ^ salt)
		}
		rows[i] = mix64(rows[i]^x) + x
	}
}

// mixNulls folds n NULLs of column col into rows [off, off+n) of the batch.
func (h *rowHashes) mixNulls(col int, off, n int) {
	x := nullHash(col)
	rows := h.rows[off : off+n]
	for i := range rows {
		rows[i] = mix64(rows[i]^x) + x
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
