package compact_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
	"github.com/sluice-data/sluice/internal/testenv"
)

// A compaction whose commit may or may not have landed keeps its output
// files: here the version lands, its answer is lost and it cannot be read
// back. Had the outputs been deleted, the live version would name missing
// files and the next vacuum would take the inputs it replaced.
func TestCompactionOfUnknownOutcomeKeepsItsOutputs(t *testing.T) {
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			loc := testenv.Location(t, kind)
			clean := smallFileTable(t, loc, 2, 6, 50)
			defer clean.Close()
			before := tableRows(t, clean)
			v, err := clean.LatestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}

			faults := testenv.LandedUnread(fmt.Sprintf("_sluice/versions/%020d.json", v+1))
			st, err := cloud.OpenWithOptions(ctx, loc, cloud.Options{HTTPClient: faults.Client(), MaxAttempts: 2})
			if err != nil {
				t.Fatal(err)
			}
			flaky := catalog.NewTable(loc, st, catalog.Options{})
			defer flaky.Close()
			res, err := compact.Run(ctx, flaky, compact.Options{MaxCommits: 1, RunID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			err = res.Err()
			if !errors.Is(err, cloud.ErrOutcomeUnknown) || len(res.Failed) != 2 {
				t.Fatalf("Err: %v, %d partitions failed; want both failed with an unknown outcome", err, len(res.Failed))
			}
			if !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), "kept") {
				t.Errorf("Err: %q; want it to say the outcome is unknown and the files kept", err)
			}
			if faults.Puts() == 0 || faults.Gets() == 0 {
				t.Fatalf("the fault did not fire: %d puts, %d gets", faults.Puts(), faults.Gets())
			}

			// Read through a sound store: the compaction's version is
			// there, every file it names is there, the rows are the same.
			m, err := clean.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Version != v+1 || m.Operation != "compact" {
				t.Fatalf("latest is version %d (%s); want the compaction's, %d", m.Version, m.Operation, v+1)
			}
			files, err := clean.Files(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if _, err := clean.Store().Stat(ctx, f.Path); err != nil {
					t.Errorf("live file %s: %v", f.Path, err)
				}
			}
			if after := tableRows(t, clean); !slices.Equal(before, after) {
				t.Fatalf("rows changed: %d before, %d after", len(before), len(after))
			}
		})
	}
}
