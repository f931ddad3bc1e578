package catalog

import (
	"context"

	"github.com/sluice-data/sluice/cloud"
)

// Maintainable is what the maintenance jobs need of a table, whatever its
// format: its newest version and live files, where a data file lives, the
// name of a data file written for it, a commit of files removed and
// added, what follows a run's last commit, a vacuum, and its release.
// *Table implements
// it for sluice tables; a format package implements it for its own
// (delta.Maintained for a Delta table), so that compaction's planner,
// rewrite and verification are the same for every format.
type Maintainable interface {
	Latest(ctx context.Context) (*Manifest, error)
	Files(ctx context.Context, m *Manifest) ([]DataFile, error)
	DataFileStore(ctx context.Context, f DataFile) (cloud.Store, string, error)
	NewDataFilePath(partition string) string
	Store() cloud.Store
	Commit(ctx context.Context, c Change) (*Manifest, error)
	// Settle is called once after a run's commits: a format whose log
	// keeps a summary of itself (Delta's checkpoint) writes it. It says
	// what it did ("" for nothing); its error undoes no commit.
	Settle(ctx context.Context) (string, error)
	// Vacuum deletes the files no retained version references.
	Vacuum(ctx context.Context, o VacuumOptions) (VacuumResult, error)
	Close() error
}

var _ Maintainable = (*Table)(nil)

// Settle does nothing: a sluice table's manifest is its own summary.
func (t *Table) Settle(context.Context) (string, error) { return "", nil }
