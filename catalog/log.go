package catalog

import (
	"log/slog"
	"time"
)

// slogAttrs are a commit's log line. The run is not among them: the
// caller's logger carries it (sluice's always does, as "run"), and a
// second "run" key would make the JSON line ambiguous; the manifest
// records it as run_id.
func slogAttrs(loc string, c Change, m *Manifest, attempts int, took time.Duration) []slog.Attr {
	return []slog.Attr{
		slog.String("table", loc),
		slog.String("operation", c.Operation),
		slog.Int64("version", m.Version),
		slog.Int64("files_added", m.Summary.FilesAdded),
		slog.Int64("files_removed", m.Summary.FilesRemoved),
		slog.Int("attempts", attempts),
		slog.Duration("took", took),
	}
}
