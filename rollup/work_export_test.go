package rollup

// RowsChecksum is the checksum CommitResult.Checksum gives of rows, for
// the tests to compute it of a table a one-process run wrote.
func RowsChecksum(rows [][]any) uint64 {
	var sum uint64
	for _, r := range rows {
		sum += rowHash(r)
	}
	return sum
}
