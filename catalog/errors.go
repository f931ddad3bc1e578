package catalog

import "errors"

// Sentinel errors of the catalog; test with errors.Is.
var (
	// ErrTableNotFound: the location holds no sluice table (no version 1).
	ErrTableNotFound = errors.New("table not found")
	// ErrTableExists: creating a table where one already exists.
	ErrTableExists = errors.New("table already exists")
	// ErrVersionNotFound: the version asked for does not exist.
	ErrVersionNotFound = errors.New("version not found")
	// ErrConflict: a concurrent commit changed what this change depends on
	// (it removed a file this change removes, moved a checkpoint this
	// change advances, or changed the schema). The change was not applied;
	// nothing of it is visible.
	ErrConflict = errors.New("commit conflict")
	// ErrMissingFile: a version references a data file that no longer
	// exists (vacuumed or deleted by hand).
	ErrMissingFile = errors.New("data file missing")
)
