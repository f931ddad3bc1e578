package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/compact"
)

// Options say what Describe reports.
type Options struct {
	// Version is the version described; zero: the newest.
	Version int64
	// Mirror, when set, says how far the mirrors of a sluice table's
	// version m are (the command line reads its Iceberg mirror); nil:
	// no mirror is reported.
	Mirror func(ctx context.Context, m *catalog.Manifest) []Mirror
}

// Detail is the report of one version of a table.
type Detail struct {
	// Table is the location, its secrets redacted (cloud.Redact).
	Table       string    `json:"table"`
	Format      string    `json:"format"`
	Version     int64     `json:"version"`
	CommittedAt time.Time `json:"committed_at"`
	Schema      []Column  `json:"schema"`
	// Partitioning is the partition spec as --partition-by spells it,
	// "" for an unpartitioned table.
	Partitioning string `json:"partitioning"`
	Rows         int64  `json:"rows"`
	Files        int64  `json:"files"`
	Bytes        int64  `json:"bytes"`
	// TargetFileSize is the size, in bytes, compaction aims for.
	TargetFileSize int64 `json:"target_file_size"`
	// SmallFiles and SmallBytes are the files and bytes a compaction
	// would rewrite now (the sum over Partitions).
	SmallFiles int64    `json:"small_files"`
	SmallBytes int64    `json:"small_bytes"`
	Histogram  []Bucket `json:"histogram"`
	// Partitions are sorted by partition.
	Partitions []Partition `json:"partitions"`
	// OldestVersion is the oldest version still readable (its files not
	// vacuumed); 0 when the format's log does not say.
	OldestVersion int64 `json:"oldest_version"`
	// Versions are the newest versions, newest first (at most
	// MaxVersions); empty when the format's log is not read.
	Versions    []Version    `json:"versions"`
	Checkpoints []Checkpoint `json:"checkpoints"`
	LastPublish *Publish     `json:"last_publish,omitempty"`
	Mirrors     []Mirror     `json:"mirrors"`
	// Quarantine is the table's quarantine (its location + "_quarantine")
	// when it exists.
	Quarantine *Quarantine `json:"quarantine,omitempty"`
}

// MaxVersions is how many versions Describe lists.
const MaxVersions = 20

// Column is one column of the schema.
type Column struct {
	Name string `json:"name"`
	// Type is spelled as --schema spells it, nested types included
	// ("struct<a:int64,b:string?>").
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// Bucket is one bar of the file-size histogram: files of Min bytes or
// more and less than Max (Max 0: no upper bound).
type Bucket struct {
	Label string `json:"label"`
	Min   int64  `json:"min"`
	Max   int64  `json:"max"`
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Partition is one partition's totals and small-file debt.
type Partition struct {
	// Partition is the Hive folder, "" for an unpartitioned table.
	Partition  string `json:"partition"`
	Files      int64  `json:"files"`
	Bytes      int64  `json:"bytes"`
	Rows       int64  `json:"rows"`
	SmallFiles int64  `json:"small_files"`
	SmallBytes int64  `json:"small_bytes"`
}

// Version is one version of the table's history.
type Version struct {
	Version      int64     `json:"version"`
	CommittedAt  time.Time `json:"committed_at"`
	Operation    string    `json:"operation"`
	Run          string    `json:"run"`
	FilesAdded   int64     `json:"files_added"`
	FilesRemoved int64     `json:"files_removed"`
	RowsAdded    int64     `json:"rows_added"`
	RowsRemoved  int64     `json:"rows_removed"`
}

// Mirror is how far one mirror of the table is.
type Mirror struct {
	// Kind is "iceberg".
	Kind       string `json:"kind"`
	Catalog    string `json:"catalog"`
	Identifier string `json:"identifier"`
	// Version is the table version mirrored; Behind the versions not yet
	// mirrored.
	Version int64 `json:"version"`
	Behind  int64 `json:"behind"`
	// Error says why the mirror could not be read, "" when it was.
	Error string `json:"error,omitempty"`
}

// Quarantine is what a table's quarantine holds.
type Quarantine struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	// Reasons count the rows by reason (cut to its first
	// MaxReasonBytes), most frequent first.
	Reasons []ReasonCount `json:"reasons"`
}

// ReasonCount is how many quarantined rows give one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Describe reports version o.Version (zero: the newest) of t. Reading a
// table's rows is no part of it but for its quarantine's reasons; a
// sluice table's older manifests and pieces are read for its versions
// and the oldest version still readable.
func Describe(ctx context.Context, t *Table, o Options) (*Detail, error) {
	where := cloud.Redact(t.loc)
	m, err := t.at(ctx, o.Version)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", where, err)
	}
	files, err := t.Files(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", where, err)
	}
	d := &Detail{Table: where, Format: t.format, Version: m.Version, CommittedAt: m.CommittedAt,
		Partitioning: m.Spec.String(), TargetFileSize: m.TargetFileSize(),
		Versions: []Version{}, Checkpoints: []Checkpoint{}, Mirrors: []Mirror{}}
	for _, c := range catalog.ReadSchema(m).Columns {
		d.Schema = append(d.Schema, Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable})
	}
	if err := d.addFiles(files); err != nil {
		return nil, fmt.Errorf("describe %s: %w", where, err)
	}
	if err := d.addHistory(ctx, t, m); err != nil {
		return nil, fmt.Errorf("describe %s: %w", where, err)
	}
	d.Checkpoints = checkpoints(m.Checkpoints)
	if st := t.Store(); st != nil {
		if d.LastPublish, err = lastPublish(ctx, st); err != nil {
			return nil, fmt.Errorf("describe %s: %w", where, err)
		}
	}
	if o.Mirror != nil && t.format == FormatSluice {
		d.Mirrors = append(d.Mirrors, o.Mirror(ctx, m)...)
	}
	if t.format != FormatIceberg {
		if d.Quarantine, err = quarantine(ctx, t); err != nil {
			return nil, fmt.Errorf("describe %s: %w", where, err)
		}
	}
	return d, nil
}

// addFiles sets the totals, the partitions, the histogram and the
// small-file debt from the live files: the debt is what the compaction
// planner would rewrite, bins' inputs counted per partition.
func (d *Detail) addFiles(files []catalog.DataFile) error {
	parts := map[string]*Partition{}
	for _, f := range files {
		p := parts[f.Partition]
		if p == nil {
			p = &Partition{Partition: f.Partition}
			parts[f.Partition] = p
		}
		p.Files++
		p.Bytes += f.Bytes
		p.Rows += f.Rows
		d.Files++
		d.Bytes += f.Bytes
		d.Rows += f.Rows
	}
	plan, err := compact.PlanCompaction(files, compact.PlanOptions{TargetFileSize: d.TargetFileSize, IncludeCurrent: true})
	if err != nil {
		return err
	}
	for _, b := range plan.Bins() {
		p := parts[b.Partition]
		if p == nil {
			continue
		}
		p.SmallFiles += int64(len(b.Inputs))
		for _, f := range b.Inputs {
			p.SmallBytes += f.Bytes
		}
	}
	d.Partitions = make([]Partition, 0, len(parts))
	for _, p := range parts {
		d.Partitions = append(d.Partitions, *p)
		d.SmallFiles += p.SmallFiles
		d.SmallBytes += p.SmallBytes
	}
	sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
	d.Histogram = histogram(files, d.TargetFileSize)
	return nil
}

// Checkpoint is one source position the version records.
type Checkpoint struct {
	// Key is the source's id ("kafka:<brokers>/<topic>",
	// "landing:<URL>", "rollup").
	Key string `json:"key"`
	// Kind is "kafka", "files" (landing files taken), "rollup" or
	// "other".
	Kind  string          `json:"kind"`
	Value json.RawMessage `json:"value"`
	// Topics are a Kafka checkpoint's next offsets by partition (its
	// lag needs the broker, and is not read).
	Topics []TopicOffsets `json:"topics,omitempty"`
}

// TopicOffsets are the next offsets to read of one topic, by partition.
type TopicOffsets struct {
	Topic      string          `json:"topic"`
	Partitions map[int32]int64 `json:"partitions"`
}
