package catalog

import "context"

// CommitObserver is told of each version a table commits, so that what
// follows a table (the Iceberg mirror) follows every commit, whichever
// job made it: a job cannot forget it, as the observer comes with the
// table's Options.
type CommitObserver interface {
	// Committed is called once t has committed m, on the committing
	// goroutine, before Commit returns. It cannot fail the commit, which
	// stands: what it could not do it must report its own way (a
	// warning), and a later commit or an explicit sync catches up.
	Committed(ctx context.Context, t *Table, m *Manifest)
}

// notify tells t's observers of m.
func (t *Table) notify(ctx context.Context, m *Manifest) {
	for _, o := range t.opts.Observers {
		o.Committed(ctx, t, m)
	}
}
