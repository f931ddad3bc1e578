package catalog

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/cloud"
)

// Create commits version 1 of a new, empty table. It fails with
// ErrTableExists if the location already holds one, and refuses a schema
// whose column names clash (see Schema.Validate).
func (t *Table) Create(ctx context.Context, schema Schema, spec PartitionSpec, props map[string]string, runID string) (*Manifest, error) {
	if err := schema.Validate(); err != nil {
		return nil, fmt.Errorf("create %s: schema: %w", t.loc, err)
	}
	return t.Commit(ctx, Change{Operation: "create", RunID: runID, Create: true,
		Schema: &schema, Spec: &spec, Properties: props, DataChange: true})
}

// Rollback commits a new version whose content is version to's. It first
// checks that every file of that version still exists, so a rollback never
// points the table at files a vacuum already deleted.
func (t *Table) Rollback(ctx context.Context, to int64, runID string) (*Manifest, error) {
	target, err := t.Manifest(ctx, to)
	if err != nil {
		return nil, err
	}
	files, err := t.Files(ctx, target)
	if err != nil {
		return nil, err
	}
	if err := t.checkFilesExist(ctx, files); err != nil {
		return nil, fmt.Errorf("rollback to version %d: %w", to, err)
	}
	return t.Commit(ctx, Change{Operation: "rollback", RunID: runID, RestoreFrom: target})
}

func (t *Table) checkFilesExist(ctx context.Context, files []DataFile) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for _, f := range files {
		if isAbsoluteLocation(f.Path) {
			continue // adopted from outside the table root: not ours to check cheaply
		}
		g.Go(func() error {
			_, err := t.store.Stat(gctx, f.Path)
			if errors.Is(err, cloud.ErrNotFound) {
				return fmt.Errorf("%s: %w", t.store.URL(f.Path), ErrMissingFile)
			}
			return err
		})
	}
	return g.Wait()
}
