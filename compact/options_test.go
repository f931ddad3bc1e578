package compact

import "testing"

func TestRewriteOptionsValidate(t *testing.T) {
	if err := (RewriteOptions{}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, o := range []RewriteOptions{{TargetFileSize: -1}, {RowGroupBytes: -1}, {MemoryBudget: -1}, {ReadConcurrency: -1}, {MemoryBudget: 1024}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if d := DefaultRewriteOptions(); d.TargetFileSize != 256<<20 || d.RowGroupBytes != 128<<20 || d.MemoryBudget != 256<<20 || d.ReadConcurrency != 8 {
		t.Fatalf("defaults %+v", d)
	}
}
