package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/delta"
	"github.com/sluice-data/sluice/jobs"
)

// openFormat opens the table at loc for a job if it is a Delta table
// (jobs.Env.OpenFormat): one the user named with --format delta, or a
// folder with a Delta log and no sluice table. A sluice table, or a
// location holding neither, gives nil: the job opens it as sluice's.
func openFormat(ctx context.Context, loc string, o jobs.FormatOptions) (catalog.Maintainable, error) {
	st, err := cloud.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	isDelta, err := delta.IsDelta(ctx, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	if o.Format == "" && isDelta {
		// Both logs in one folder: a sluice table imported in place
		// from a Delta folder keeps the Delta log beside its own. The
		// user says which one is meant.
		if _, err := catalog.NewTable(loc, st, catalog.Options{}).LatestVersion(ctx); !errors.Is(err, catalog.ErrTableNotFound) {
			st.Close()
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s holds both a sluice table and a Delta log: say --format sluice or --format delta", cloud.Redact(loc))
		}
	}
	if !isDelta {
		st.Close()
		if o.Format == "delta" {
			return nil, fmt.Errorf("%s: --format delta: %w (no commit in _delta_log/)", cloud.Redact(loc), delta.ErrNotDelta)
		}
		return nil, nil
	}
	t, err := delta.New(st).Maintain(delta.MaintainOptions{S3ConditionalWriters: o.DeltaS3ConditionalWriters,
		DryRun: o.DryRun, EngineInfo: "sluice/" + readBuildVersion().Version})
	if err != nil {
		st.Close()
		return nil, err
	}
	return t, nil
}
