package main

import (
	"context"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/delta"
)

// openRead gives a table a job only reads (rollup's source, publish's
// table) as a view of the Delta table's newest version when the folder t
// was opened on holds a Delta log and no sluice table (jobs.Env.OpenRead).
// It returns nil, keeping t, for a folder with no Delta log, and for one
// holding a sluice table too (a sluice table imported in place keeps the
// Delta log beside its own): such a folder reads as the sluice table, as
// it did before Delta tables could be read.
func openRead(ctx context.Context, t *catalog.Table) (catalog.Readable, error) {
	isDelta, err := delta.IsDelta(ctx, t.Store())
	if err != nil || !isDelta {
		return nil, err
	}
	if both, err := holdsSluiceTable(ctx, t); both || err != nil {
		return nil, err
	}
	snap, err := delta.New(t.Store()).Snapshot(ctx, delta.Latest)
	if err != nil {
		return nil, err
	}
	v, err := snap.View(ctx, t.Location(), t.Store())
	if err != nil {
		return nil, err
	}
	return v, nil
}
