package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/jobs"
)

// openFormat gives the job's table as a Delta table when the folder t
// was opened on is one (jobs.Env.OpenFormat): one the user named with
// --format delta, or a folder with a Delta log and no sluice table. It
// returns nil, keeping t, for a folder with no Delta log. A job that
// deletes what its table does not reference (o.Deletes) is refused on a
// folder that holds both a sluice table and a Delta log.
func openFormat(ctx context.Context, t *catalog.Table, o jobs.FormatOptions) (catalog.Maintainable, error) {
	loc := cloud.Redact(t.Location())
	isDelta, err := delta.IsDelta(ctx, t.Store())
	if err != nil {
		return nil, err
	}
	both := false
	if isDelta && (o.Deletes || o.Format == "") {
		if both, err = holdsSluiceTable(ctx, t); err != nil {
			return nil, err
		}
	}
	switch {
	case both && o.Deletes:
		// What one log does not reference, the other may: a vacuum of
		// either would delete the other's files.
		return nil, fmt.Errorf("%s holds both a sluice table and a Delta log: vacuum refuses it, as a vacuum of either would delete files the other references", loc)
	case o.Format == "sluice":
		return nil, nil
	case !isDelta && o.Format == "delta":
		return nil, fmt.Errorf("%s: --format delta: %w (no commit in _delta_log/)", loc, delta.ErrNotDelta)
	case !isDelta:
		return nil, nil
	case both:
		// A sluice table imported in place from a Delta folder keeps
		// the Delta log beside its own. The user says which one is
		// meant.
		return nil, fmt.Errorf("%s holds both a sluice table and a Delta log: say --format sluice or --format delta", loc)
	}
	m, err := delta.New(t.Store()).Maintain(delta.MaintainOptions{S3ConditionalWriters: o.DeltaS3ConditionalWriters,
		DryRun: o.DryRun, EngineInfo: "sluice/" + readBuildVersion().Version})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// holdsSluiceTable reports whether the folder t was opened on holds a
// sluice table (beside a Delta log, as an import in place leaves it).
func holdsSluiceTable(ctx context.Context, t *catalog.Table) (bool, error) {
	_, err := t.LatestVersion(ctx)
	if errors.Is(err, catalog.ErrTableNotFound) {
		return false, nil
	}
	return err == nil, err
}

// openCatalogTable opens a table in an Iceberg catalog (an iceberg+
// location) for maintenance (jobs.Env.OpenCatalogTable).
func openCatalogTable(ctx context.Context, loc string, o jobs.FormatOptions) (catalog.Maintainable, error) {
	return iceberg.Open(ctx, loc, iceberg.MaintainOptions{DryRun: o.DryRun, Engine: "sluice/" + readBuildVersion().Version})
}
