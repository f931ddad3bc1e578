package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/iceberg"
)

// icebergVacuum returns the catalog.VacuumOptions.Keep of a vacuum of t
// (nil when t is not mirrored) and the map the vacuum's --json summary
// gives as "iceberg", filled in when Keep runs. A table whose folder
// holds a mirror but that has no iceberg.catalog property is refused:
// vacuum could not tell which files the mirror's snapshots reference.
func (a *app) icebergVacuum(cmd *cobra.Command, t *catalog.Table, table string, dryRun bool) (func(context.Context, time.Time) (map[string]bool, error), map[string]any, error) {
	set, ok, err := iceberg.ReadSettings(cmd.Context(), t)
	if err != nil {
		return nil, nil, fmt.Errorf("vacuum %s: %w", table, err)
	}
	if !ok {
		has, err := iceberg.HasMirror(cmd.Context(), t)
		if err != nil {
			return nil, nil, fmt.Errorf("vacuum %s: look for an Iceberg mirror: %w", table, err)
		}
		if has {
			return nil, nil, fmt.Errorf("vacuum %s: %s holds an Iceberg mirror but the table has no %s property, so vacuum cannot tell which files the mirror's snapshots reference: run 'sluice iceberg enable %s --catalog URL' first (or drop the mirror and remove that folder)",
				table, t.Store().URL(iceberg.MetadataFolder), iceberg.PropCatalog, table)
		}
		return nil, nil, nil
	}
	report := map[string]any{"catalog": set.Catalog, "identifier": set.Namespace + "." + set.Name}
	keep := func(ctx context.Context, cutoff time.Time) (map[string]bool, error) {
		cat, err := iceberg.OpenCatalog(ctx, set.Catalog)
		if err != nil {
			return nil, fmt.Errorf("the Iceberg mirror: %w", err)
		}
		defer cat.Close()
		var rr iceberg.RetainResult
		files, err := iceberg.VacuumKeep(cat, set.Options(), dryRun, &rr)(ctx, cutoff)
		report["snapshots_expired"] = rr.Expired
		report["snapshots_retained"] = rr.Retained
		report["files_kept"] = len(rr.Keep)
		report["metadata_location"] = rr.MetadataLocation
		return files, err
	}
	return keep, report, nil
}
