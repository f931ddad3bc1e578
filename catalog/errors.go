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
	// ErrTableLog: import refused a folder that is, or holds, a table of
	// another format whose log says which of its files are live (Delta
	// Lake's _delta_log/, an Iceberg table's metadata/, a Spark Structured
	// Streaming sink's _spark_metadata/). Adopting every Parquet file
	// found would bring back rows that log deleted or adopt a failed
	// write's output; nothing is committed. A caller that reads the log
	// passes the files it names live as ImportOptions.Listed instead, as
	// sluice import does for a Delta table and a Spark sink's output.
	ErrTableLog = errors.New("sluice cannot read this log yet")
)
