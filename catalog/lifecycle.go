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
// checks that every file of that version still exists, under the table's
// root or wherever an import adopted it in place, so a rollback never
// points the table at files a vacuum, or anyone, deleted.
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

// checkFilesExist stats every file, ReadConcurrency at a time, and fails
// with ErrMissingFile naming the first found missing. A file adopted from
// outside the table's root is asked of its own store: it is as much the
// version's as the others, and its folder is not the table's to keep.
func (t *Table) checkFilesExist(ctx context.Context, files []DataFile) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.ReadConcurrency)
	for _, f := range files {
		g.Go(func() error {
			st, key, err := t.DataFileStore(gctx, f)
			if err != nil {
				return fmt.Errorf("%s: %w", t.FileURL(f), err)
			}
			_, err = st.Stat(gctx, key)
			if errors.Is(err, cloud.ErrNotFound) {
				return fmt.Errorf("%s: %w", t.FileURL(f), ErrMissingFile)
			}
			return err
		})
	}
	return g.Wait()
}
