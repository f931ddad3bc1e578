package catalog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// A zero retention is zero, not the default: under MinRetention it needs
// Force, and with Force it keeps only the latest version. A negative one is
// refused whatever Force says.
func TestVacuumRetentionZeroAndNegative(t *testing.T) {
	ctx := context.Background()
	tbl := importedTable(t, t.TempDir())
	old := compactAll(t, tbl)
	if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: 0}); !errors.Is(err, catalog.ErrRetentionTooShort) {
		t.Fatalf("retain 0 without force: %v, want ErrRetentionTooShort", err)
	}
	for _, force := range []bool{false, true} {
		if _, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: -time.Hour, Force: force}); !errors.Is(err, catalog.ErrNegativeRetention) {
			t.Fatalf("retain -1h, force %v: %v, want ErrNegativeRetention", force, err)
		}
	}
	res, err := tbl.Vacuum(ctx, catalog.VacuumOptions{Retain: 0, Force: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != len(old) || res.RetainedVersions != 1 {
		t.Fatalf("retain 0 with force would delete %v and retain %d versions; want the %d replaced files and 1 version",
			res.Deleted, res.RetainedVersions, len(old))
	}
}
