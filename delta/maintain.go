package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/pqio"
)

// MaintainOptions say how a Delta table is opened for maintenance.
type MaintainOptions struct {
	// S3ConditionalWriters is the user's word that every writer of a
	// table on S3 commits with a conditional put, as sluice does. Spark's
	// own S3 log store does not (delta-io/delta#3596): a conditional put
	// then does not keep a Spark commit from overwriting sluice's, or
	// sluice's from overwriting Spark's. Without it, a table on S3 is
	// opened for a dry run only.
	S3ConditionalWriters bool
	// DryRun opens the table to plan only: Commit is refused.
	DryRun bool
	// EngineInfo names the writer in commitInfo ("sluice/v1.2.0").
	EngineInfo string
}

// Maintained is a Delta table opened for maintenance: what compaction
// needs of a table (catalog.Maintainable), its compactions committed as
// Delta OPTIMIZE commits that every Delta reader understands.
type Maintained struct {
	t    *Table
	o    MaintainOptions
	snap *Snapshot
	// schema is the data files' schema: the table's less its partition
	// columns.
	schema pqio.Schema
	adds   map[string]*Add // the snapshot's live files, by decoded path
	// last is the newest version Commit landed, -1 before one; cpErr
	// the error of a checkpoint Commit wrote on the way.
	last  int64
	cpErr error
}

// ErrS3Writers refuses a commit to a Delta table on S3 without the
// user's word that its writers all put conditionally.
var ErrS3Writers = errors.New("a Delta table on S3 is committed to only when every writer uses conditional puts")

// Maintain opens the table for maintenance. It reads nothing until
// Latest.
func (t *Table) Maintain(o MaintainOptions) (*Maintained, error) {
	if strings.HasPrefix(t.st.URL(""), "s3://") && !o.S3ConditionalWriters && !o.DryRun {
		return nil, fmt.Errorf("%s: %w: Spark's S3 log store does not (delta-io/delta#3596), so a Spark commit could overwrite sluice's; say --delta-s3-conditional-writers if every writer of this table does (delta-rs with conditional puts, a LogStore using If-None-Match)", cloud.Redact(t.st.URL("")), ErrS3Writers)
	}
	return &Maintained{t: t, o: o, last: -1}, nil
}

// writable are the writer features of the tables sluice compacts: a
// rewrite keeping every row keeps every invariant, constraint and
// generated value, and writes no change data.
var writable = []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
	"identityColumns", "columnMapping", "deletionVectors", "domainMetadata", "timestampNtz", "vacuumProtocolCheck",
	"v2Checkpoint"} // sluice then writes no checkpoint (see WriteCheckpoint)

// checkWritable refuses, naming the feature, a table whose protocol asks
// a compaction's writer for what sluice does not do: row tracking (row
// ids carried through a rewrite), in-commit timestamps, clustering, and
// any feature it does not know.
func checkWritable(p *Protocol) error {
	switch {
	case p.MinWriterVersion > 7:
		return fmt.Errorf("%w: writer version %d (sluice writes up to 7)", ErrUnsupportedFeature, p.MinWriterVersion)
	case p.MinWriterVersion == 7:
		for _, f := range p.WriterFeatures {
			if !slices.Contains(writable, f) {
				return fmt.Errorf("%w: writer feature %q (sluice does not commit to such a table)", ErrUnsupportedFeature, f)
			}
		}
	}
	return nil
}

// Latest reads the newest version and gives it as a manifest: the
// version, the data files' schema, and the table's target file size
// (delta.targetFileSize, when set).
func (m *Maintained) Latest(ctx context.Context) (*catalog.Manifest, error) {
	snap, err := m.t.Snapshot(ctx, Latest)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s at version %d", cloud.Redact(m.t.st.URL("")), snap.Version)
	if err := checkWritable(&snap.Protocol); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	schema, err := snap.Metadata.DataSchema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	m.snap, m.schema = snap, schema
	m.adds = make(map[string]*Add, len(snap.Files))
	for _, f := range snap.Files {
		m.adds[f.Path] = f.Add
	}
	man := &catalog.Manifest{Version: snap.Version, TableID: snap.Metadata.ID, Schema: schema, Properties: map[string]string{}}
	if n, err := strconv.ParseInt(snap.Metadata.Configuration["delta.targetFileSize"], 10, 64); err == nil && n > 0 {
		man.Properties[catalog.PropTargetFileSize] = strconv.FormatInt(n, 10)
	}
	return man, nil
}

// Files are the live data files of the version Latest read, as the
// planner sees them: each in the Hive folder of its partition values
// (whatever folder it is in), with its size, the rows its statistics
// count and, for --min-file-age, its modification time. A file the log
// names by an absolute path, outside the table's folder, is left alone.
func (m *Maintained) Files(_ context.Context, man *catalog.Manifest) ([]catalog.DataFile, error) {
	if m.snap == nil || man.Version != m.snap.Version {
		return nil, fmt.Errorf("delta: Files of version %d before Latest read it", man.Version)
	}
	cols := m.snap.Metadata.PartitionColumns
	out := make([]catalog.DataFile, 0, len(m.snap.Files))
	for _, f := range m.snap.Files {
		if f.outsideRoot() {
			continue
		}
		vals := make(map[string]*string, len(cols))
		for _, c := range cols {
			vals[c] = f.Add.PartitionValues[c]
		}
		rows, _ := f.NumRecords()
		out = append(out, catalog.DataFile{Path: f.Path, Partition: catalog.HiveDir(cols, vals), PartitionValues: vals,
			Bytes: f.Add.Size, FileStats: pqio.FileStats{Rows: rows}, AddedAt: time.UnixMilli(f.Add.ModificationTime)})
	}
	return out, nil
}

// DataFileStore is where a data file is: the table's folder.
func (m *Maintained) DataFileStore(_ context.Context, f catalog.DataFile) (cloud.Store, string, error) {
	return m.t.st, f.Path, nil
}

// Store is the table's folder, where compaction writes its files.
func (m *Maintained) Store() cloud.Store { return m.t.st }

// Close closes the table's store.
func (m *Maintained) Close() error { return m.t.st.Close() }

// NewDataFilePath names a data file as Delta's writers name theirs, in
// the partition's folder: part-00000-<uuid>-c000.zstd.parquet.
func (m *Maintained) NewDataFilePath(partition string) string {
	name := "part-00000-" + uuid.NewString() + "-c000.zstd.parquet"
	if partition == "" {
		return name
	}
	return partition + "/" + name
}

// Commit commits a compaction (c.DataChange false, files removed and
// added) as a Delta OPTIMIZE commit over the version Latest read, rebased
// over the commits that landed since as Spark's OPTIMIZE rebases: it
// fails with an error matching catalog.ErrConflict (and ErrConflict)
// when one of them removed an input or changed the protocol or the
// metadata. Only the version of the returned manifest is set.
func (m *Maintained) Commit(ctx context.Context, c catalog.Change) (*catalog.Manifest, error) {
	switch {
	case m.o.DryRun:
		return nil, errors.New("delta: a table opened for a dry run commits nothing")
	case m.snap == nil:
		return nil, errors.New("delta: Commit before Latest")
	case c.DataChange || c.Create || c.Schema != nil || len(c.Properties) > 0 || len(c.Checkpoints) > 0 || len(c.CheckpointMerge) > 0:
		return nil, fmt.Errorf("delta: sluice commits only compactions to a Delta table, not a %q", c.Operation)
	}
	actions, removes, err := m.optimizeActions(c)
	if err != nil {
		return nil, err
	}
	v, err := m.t.CommitRebased(ctx, Rebase{Read: m.snap.Version, Removes: removes}, actions)
	if errors.Is(err, ErrConflict) {
		return nil, fmt.Errorf("%w: %w", catalog.ErrConflict, err)
	}
	if err != nil {
		return nil, err
	}
	m.last = v
	if v%checkpointInterval(m.snap.Metadata.Configuration) == 0 {
		// A checkpoint is due at this version, as Spark writes one. Its
		// failure undoes nothing: Settle reports it.
		if _, err := m.t.WriteCheckpoint(ctx, v, time.Now()); err != nil && !errors.Is(err, ErrV2Checkpoints) {
			m.cpErr = err
		}
	}
	return &catalog.Manifest{Version: v}, nil
}

// Settle writes a checkpoint of the newest version the run committed
// (delta.checkpointInterval counts commits, and a compaction's commits
// come together): readers then replay none of the compaction's commits.
// It says what it wrote. A table that asks for V2 checkpoints gets none,
// and the line says so; a failed checkpoint is an error that undoes no
// commit.
func (m *Maintained) Settle(ctx context.Context) (string, error) {
	if m.last < 0 {
		return "", m.cpErr
	}
	res, err := m.t.WriteCheckpoint(ctx, m.last, time.Now())
	switch {
	case errors.Is(err, ErrV2Checkpoints):
		return "no checkpoint: " + ErrV2Checkpoints.Error(), m.cpErr
	case err != nil:
		return "", errors.Join(m.cpErr, err)
	case res.Existed:
		return fmt.Sprintf("checkpoint of version %d already there", res.Version), m.cpErr
	}
	return fmt.Sprintf("checkpoint of version %d (%d live files)", res.Version, res.Adds), m.cpErr
}
