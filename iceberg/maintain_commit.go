package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// commitAttempts bounds the tries of one commit that loses races to
// other writers' commits (a streaming appender commits every few
// seconds); each try re-reads the table and checks the rewrite still
// holds.
const commitAttempts = 12

// deletedRows records, per input key, how many rows DeletedRows said
// are deleted: Commit checks that every input with deletes had them
// applied.
type deletedRows struct {
	mu sync.Mutex
	n  map[string]int64
}

// DeletedRows are the positions of f's rows that its position deletes
// and deletion vectors delete, for the rewrite to leave out; nil for a
// file without deletes. The rewrites call it at once, beside Commit:
// it reads only what Latest set.
func (m *Maintained) DeletedRows(ctx context.Context, f catalog.DataFile) ([]int64, error) {
	lf := m.live[f.Path]
	if lf == nil || len(lf.deletes) == 0 {
		return nil, nil
	}
	pos, err := m.deleteFiles.positions(ctx, m.fs, lf.df, lf.deletes)
	if err != nil {
		return nil, fmt.Errorf("%s: deletes of %s: %w", m.Address(), lf.df.FilePath(), err)
	}
	m.deleted.mu.Lock()
	if m.deleted.n == nil {
		m.deleted.n = map[string]int64{}
	}
	m.deleted.n[f.Path] = int64(len(pos))
	m.deleted.mu.Unlock()
	return pos, nil
}

// Commit commits a compaction (files removed and added, no data change)
// as an Iceberg "replace" snapshot through iceberg-go's rewrite: the
// outputs carry the partition of their inputs and Iceberg's column
// metrics (truncated as write.metadata.metrics.* ask), and the position
// deletes and deletion vectors that applied only to the inputs go with
// them. A commit that loses a race to another writer re-reads the
// table and tries again while every input is still live with the same
// deletes; otherwise it fails with catalog.ErrConflict, and nothing of
// it is committed. An error after the catalog was asked wraps
// cloud.ErrOutcomeUnknown: the snapshot may have landed. Only the
// version (the new snapshot's sequence number) of the returned manifest
// is set.
func (m *Maintained) Commit(ctx context.Context, c catalog.Change) (*catalog.Manifest, error) {
	switch {
	case m.o.DryRun:
		return nil, errors.New("iceberg: a table opened for a dry run commits nothing")
	case m.live == nil:
		return nil, errors.New("iceberg: Commit before Latest")
	case c.DataChange || c.Create || c.Schema != nil || len(c.Properties) > 0 || len(c.Checkpoints) > 0 || len(c.CheckpointMerge) > 0:
		return nil, fmt.Errorf("iceberg: sluice commits only compactions to an Iceberg table, not a %q", c.Operation)
	}
	if err := m.checkRows(c); err != nil {
		return nil, err
	}
	adds, err := m.outputs(ctx, c.Add)
	if err != nil {
		return nil, err
	}
	props := ice.Properties{"sluice.operation": "compact"}
	if c.RunID != "" {
		props["sluice.run-id"] = c.RunID
	}
	if m.o.Engine != "" {
		props["engine-name"] = m.o.Engine
	}
	removes := m.removable(c.Remove)
	tbl := m.tbl
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
			if tbl, err = m.cat.load(ctx); err != nil {
				return nil, err
			}
		}
		if err := m.checkConcurrent(ctx, tbl, c.Remove); err != nil {
			return nil, err
		}
		tx := tbl.NewTransaction()
		rw := tx.NewRewrite(props)
		for _, df := range removes {
			rw.DeleteFile(df)
		}
		for _, df := range adds {
			rw.AddDataFile(df)
		}
		if err := rw.Commit(ctx); err != nil {
			return nil, fmt.Errorf("%s: rewrite: %w", m.Address(), err)
		}
		nt, err := tx.Commit(ctx)
		lost := lostRace(err)
		if lost && attempt+1 < commitAttempts {
			continue
		}
		if lost {
			return nil, fmt.Errorf("%s: %w: lost the race to other writers' commits %d times: %w", m.Address(), catalog.ErrConflict, commitAttempts, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: commit: %w: %w", m.Address(), cloud.ErrOutcomeUnknown, err)
		}
		seq := nt.CurrentSnapshot().SequenceNumber
		m.last, m.tbl = seq, nt
		for _, f := range c.Remove {
			m.removed[f.Path] = true
		}
		return &catalog.Manifest{Version: seq}, nil
	}
}

// lostRace reports whether a commit failed because another commit
// landed first, and nothing of it landed: iceberg-go's ErrCommitFailed
// (the catalog's compare-and-swap of the metadata location lost), or a
// requirement the catalog checked against its current metadata before
// writing anything (the SQL catalog's "requirement failed: branch
// "main" has changed", or "Requirement failed: ..." for the table's
// uuid, schema or spec, which wrap no sentinel).
func lostRace(err error) bool {
	return err != nil && (errors.Is(err, table.ErrCommitFailed) || strings.HasPrefix(strings.ToLower(err.Error()), "requirement failed"))
}

// checkRows refuses a compaction whose outputs do not hold the inputs'
// rows less their deleted ones; an input with deletes that the rewrite
// did not ask DeletedRows about would bring its deleted rows back.
func (m *Maintained) checkRows(c catalog.Change) error {
	m.deleted.mu.Lock()
	defer m.deleted.mu.Unlock()
	var in, out int64
	for _, f := range c.Remove {
		lf := m.live[f.Path]
		if lf == nil {
			return fmt.Errorf("iceberg: %s is not a live file of the snapshot read", f.Path)
		}
		n, asked := m.deleted.n[f.Path]
		if len(lf.deletes) > 0 && !asked {
			return fmt.Errorf("%s: %s has deletes the rewrite did not apply: nothing committed", m.Address(), lf.df.FilePath())
		}
		in += lf.df.Count() - n
	}
	for _, f := range c.Add {
		out += f.Rows
	}
	if in != out {
		return fmt.Errorf("%s: the outputs hold %d rows, the inputs %d less their deletes: nothing committed", m.Address(), out, in)
	}
	return nil
}

// outputs are the Iceberg entries of the files a compaction wrote: the
// partition of their inputs (all of one partition of one spec), the
// metrics iceberg-go computes from their footers.
func (m *Maintained) outputs(ctx context.Context, files []catalog.DataFile) ([]ice.DataFile, error) {
	out := make([]ice.DataFile, 0, len(files))
	for _, f := range files {
		p, ok := m.parts[f.Partition]
		if !ok {
			return nil, fmt.Errorf("iceberg: output %s is in partition %q, which no input is in", f.Path, f.Partition)
		}
		df, err := m.outputEntry(ctx, f, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", m.Address(), f.Path, err)
		}
		out = append(out, df)
	}
	return out, nil
}

// outputEntry reads one output's footer and makes its entry.
func (m *Maintained) outputEntry(ctx context.Context, f catalog.DataFile, p part) (ice.DataFile, error) {
	ra := pqio.NewReaderAt(ctx, m.st, f.Path, f.Bytes)
	rdr, err := file.NewParquetReader(io.NewSectionReader(ra, 0, f.Bytes))
	if err != nil {
		return nil, fmt.Errorf("read its footer: %w", err)
	}
	defer rdr.Close()
	var values map[int]any
	if !p.spec.IsUnpartitioned() {
		values = p.values
	}
	return table.DataFileFromMetadata(table.DataFileArgs{
		Schema: m.tbl.Schema(), Spec: p.spec, Metadata: rdr.MetaData(), Format: ice.ParquetFile,
		FilePath: m.FullPath(f.Path), FileSize: f.Bytes, Content: ice.EntryContentData,
		PartitionValues: values, Properties: m.tbl.Properties(), FormatVersion: m.tbl.Metadata().Version(),
	})
}

// backoff waits before commit attempt n (from 1): 50 ms doubling to 2 s,
// with jitter so that racing writers spread out.
func backoff(ctx context.Context, n int) error {
	d := 50 * time.Millisecond << min(n-1, 6)
	d = min(d, 2*time.Second)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
