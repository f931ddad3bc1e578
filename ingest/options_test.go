package ingest_test

import (
	"strings"
	"testing"

	"github.com/sluice-data/sluice/ingest"
)

// A record limit that the budget cannot hold RecordMemoryMultiple times is
// refused, naming both fields; unset, the limit follows a small budget.
func TestOptionsRefuseARecordLimitTheBudgetCannotHold(t *testing.T) {
	err := ingest.Options{MaxRecordBytes: 2 << 30}.Validate()
	if err == nil || !strings.Contains(err.Error(), "MaxRecordBytes") || !strings.Contains(err.Error(), "MemoryBudget") {
		t.Errorf("MaxRecordBytes 2 GiB beside the default budget: %v, want an error naming both", err)
	}
	if err := (ingest.Options{MemoryBudget: 64 << 20, MaxRecordBytes: ingest.MaxRecordBytesFor(64 << 20)}).Validate(); err != nil {
		t.Errorf("the largest limit that fits: %v", err)
	}
	if err := (ingest.Options{MemoryBudget: 1 << 20}).Validate(); err != nil {
		t.Errorf("a small budget and no record limit: %v", err)
	}
}
