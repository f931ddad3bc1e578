package icebergtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
)

// Scanned is what iceberg-go's own reader reads of one snapshot: its
// live rows (deletes applied) and an order-independent checksum of
// every column of every row.
type Scanned struct {
	// Rows is the number of live rows.
	Rows int64
	// Checksum is the sum of a 64-bit hash of each row's values: the
	// same rows give the same sum whatever files, order or deletes hold
	// them.
	Checksum uint64
	// DataFiles and DeleteFiles count the snapshot's live data files and
	// the delete files (position deletes or deletion vectors) that apply
	// to them.
	DataFiles, DeleteFiles int
}

// Scan reads the current snapshot of tbl (loaded by its catalog, on any
// store iceberg-go reaches) through iceberg-go's scan, the reader Iceberg
// tables on S3 are checked with here (the other two read local files
// only). It fails t on any error.
func Scan(t testing.TB, tbl *table.Table) Scanned {
	t.Helper()
	s, err := scanTable(context.Background(), tbl)
	if err != nil {
		t.Fatalf("icebergtest: scan %s: %v", tbl.Location(), err)
	}
	return s
}

func scanTable(ctx context.Context, tbl *table.Table) (Scanned, error) {
	var s Scanned
	if tbl.CurrentSnapshot() == nil {
		return s, nil
	}
	scan := tbl.Scan()
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return s, fmt.Errorf("plan scan: %w", err)
	}
	deletes := map[string]bool{}
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			deletes[d.FilePath()] = true
		}
		for _, d := range task.DeletionVectorFiles {
			deletes[d.FilePath()] = true
		}
	}
	s.DataFiles, s.DeleteFiles = len(tasks), len(deletes)
	_, recs, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return s, fmt.Errorf("read: %w", err)
	}
	for rec, err := range recs {
		if err != nil {
			return s, fmt.Errorf("read: %w", err)
		}
		cols := make([]arrow.Array, rec.NumCols())
		for j := range cols {
			cols[j] = rec.Column(j)
		}
		for i := range int(rec.NumRows()) {
			h := fnv.New64a()
			for j, c := range cols {
				fmt.Fprintf(h, "%d=%s\x00", j, c.ValueStr(i))
			}
			s.Checksum += h.Sum64()
		}
		s.Rows += rec.NumRows()
		rec.Release()
	}
	return s, nil
}
