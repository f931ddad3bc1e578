package delta

import (
	"fmt"
	"slices"
)

// readable are the reader features sluice reads a table with:
// timestampNtz (a column type it maps), v2Checkpoint (it reads them),
// vacuumProtocolCheck (it changes only how a vacuum must check the
// protocol, which sluice does). deletionVectors and columnMapping are
// checked on their own: a table may carry the feature and not use it.
var readable = []string{"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "deletionVectors", "columnMapping"}

// checkReadable refuses, naming the feature, a table sluice cannot read
// as Delta defines it.
func checkReadable(p *Protocol, m *Metadata) error {
	switch {
	case p.MinReaderVersion > 3:
		return fmt.Errorf("%w: reader version %d (sluice reads up to 3)", ErrUnsupportedFeature, p.MinReaderVersion)
	case p.MinReaderVersion == 3:
		for _, f := range p.ReaderFeatures {
			if !slices.Contains(readable, f) {
				return fmt.Errorf("%w: reader feature %q", ErrUnsupportedFeature, f)
			}
		}
	}
	if mode := m.Configuration["delta.columnMapping.mode"]; mode != "" && mode != "none" {
		return fmt.Errorf("%w: column mapping (delta.columnMapping.mode = %s): the files' column names are not the table's", ErrUnsupportedFeature, mode)
	}
	return nil
}
