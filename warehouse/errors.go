package warehouse

import "errors"

// Errors a caller can switch on; each is wrapped with what failed.
var (
	// ErrInvalidName is a target name that is not NAME or SCHEMA.NAME of
	// plain identifiers.
	ErrInvalidName = errors.New("invalid target name")
	// ErrUnsupportedType is a column type with no SQL mapping; nothing is
	// created in the warehouse.
	ErrUnsupportedType = errors.New("column type has no SQL mapping")
	// ErrNotATable is a target name taken by something other than a
	// table (a view, say): sluice will not replace it.
	ErrNotATable = errors.New("target exists and is not a table")
	// ErrRowCount is a load whose row count differs from the table
	// version's: the swap is not made.
	ErrRowCount = errors.New("loaded row count differs from the table's")
	// ErrDependents is a dependent object the swap cannot carry (a
	// materialized view); the swap is not made.
	ErrDependents = errors.New("dependent objects cannot follow the table")
)
