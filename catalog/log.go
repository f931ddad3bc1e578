package catalog

import (
	"log/slog"
	"time"
)

func slogAttrs(loc string, c Change, m *Manifest, attempts int, took time.Duration) []slog.Attr {
	return []slog.Attr{
		slog.String("table", loc),
		slog.String("operation", c.Operation),
		slog.String("run", c.RunID),
		slog.Int64("version", m.Version),
		slog.Int64("files_added", m.Summary.FilesAdded),
		slog.Int64("files_removed", m.Summary.FilesRemoved),
		slog.Int("attempts", attempts),
		slog.Duration("took", took),
	}
}
