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
	// ErrDependents is what the target carries that the swap cannot
	// carry to the new table (a trigger, a rule, a foreign key of another
	// table, an index on a column the new table lacks...): the publish
	// stops before the load unless Options.DropDependents lets it leave
	// the droppable ones behind.
	ErrDependents = errors.New("dependent objects cannot follow the table")
)

// ErrTaken is a NAME_new or NAME_old that a publish of NAME did not make
// (someone's table, or one published as NAME_new): sluice will not drop
// it.
var ErrTaken = errors.New("a table by the name a publish uses is someone else's")
