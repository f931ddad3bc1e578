package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the manifest format this code writes; see
// docs/format/manifest.md. Readers refuse a newer format.
const FormatVersion = 1

const (
	metaDir     = "_sluice/"
	versionsDir = metaDir + "versions/"
	piecesDir   = metaDir + "pieces/"
	pagesDir    = metaDir + "pages/"
	latestKey   = metaDir + "latest"
)

// versionKey is the key of manifest version v. Zero-padded so that a
// lexical listing is a numeric one.
func versionKey(v int64) string { return fmt.Sprintf("%s%020d.json", versionsDir, v) }

// parseVersionKey returns the version number of a versions/ key.
func parseVersionKey(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, versionsDir)
	if !ok {
		return 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	if !ok || len(name) != 20 {
		return 0, false
	}
	var v int64
	if _, err := fmt.Sscanf(name, "%d", &v); err != nil || v < 1 {
		return 0, false
	}
	return v, true
}

// PartitionField is one field of a partition spec: a Hive folder level.
type PartitionField struct {
	// Name is the folder key: "date" in date=2024-01-31/.
	Name string `json:"name"`
	// Transform is "day" (the UTC day of Source, a date or timestamp
	// column) or "identity" (a value found only in the folder name, as
	// Spark writes partition columns).
	Transform string `json:"transform"`
	// Source is the data column the value is derived from; empty for
	// identity fields.
	Source string `json:"source,omitempty"`
	// Type is the value's type; identity fields adopted from folders are
	// strings.
	Type Type `json:"type"`
}

// PartitionSpec is the ordered list of partition fields; empty means the
// table is unpartitioned.
type PartitionSpec struct {
	Fields []PartitionField `json:"fields,omitempty"`
}

// String renders the spec as users write it: "day(event_time)", or the
// identity field names joined by '/'.
func (p PartitionSpec) String() string {
	parts := make([]string, len(p.Fields))
	for i, f := range p.Fields {
		if f.Transform == "day" {
			parts[i] = "day(" + f.Source + ")"
		} else {
			parts[i] = f.Name
		}
	}
	return strings.Join(parts, ",")
}

// ParsePartitionSpec parses the --partition-by flag: "day(col)", where col
// must be a date or timestamp column of schema. An empty string is an
// unpartitioned table.
func ParsePartitionSpec(s string, schema Schema) (PartitionSpec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PartitionSpec{}, nil
	}
	inner, ok := strings.CutPrefix(s, "day(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return PartitionSpec{}, fmt.Errorf("partition spec %q: want day(col)", s)
	}
	col := strings.TrimSpace(strings.TrimSuffix(inner, ")"))
	c, ok := schema.Column(col)
	if !ok {
		return PartitionSpec{}, fmt.Errorf("partition spec %q: no column %q in the schema", s, col)
	}
	if c.Type.Kind != KindDate && c.Type.Kind != KindTimestamp {
		return PartitionSpec{}, fmt.Errorf("partition spec %q: column %q is %s, want date or timestamp", s, col, c.Type)
	}
	if c, clash := schema.ColumnFold("date"); clash {
		return PartitionSpec{}, fmt.Errorf("partition spec %q: the partition folder key \"date\" clashes with the data column %q (Spark, Hive and most warehouses fold case)", s, c.Name)
	}
	return PartitionSpec{Fields: []PartitionField{{Name: "date", Transform: "day", Source: col, Type: Type{Kind: KindDate}}}}, nil
}

// PartitionRef is a manifest's entry for one partition: the pieces that
// together list its live files, and their totals.
type PartitionRef struct {
	// Partition is the Hive folder ("date=2024-01-31"), "" when
	// unpartitioned.
	Partition string `json:"p"`
	// Pieces are keys (relative to the table root) of immutable piece
	// objects; the partition's files are the union of theirs.
	Pieces []PieceRef `json:"pieces"`
	Files  int64      `json:"files"`
	Rows   int64      `json:"rows"`
	Bytes  int64      `json:"bytes"`
}

// PieceRef points at one piece object and says how many files it lists,
// which the merge policy uses without reading the piece.
type PieceRef struct {
	Key   string `json:"key"`
	Files int64  `json:"files"`
}

// Piece is the content of one piece object: some of one partition's live
// files.
type Piece struct {
	Partition string     `json:"p"`
	Files     []DataFile `json:"files"`
}

// PageRef is a manifest's entry for one page: a run of consecutive
// partitions, First to Last in sort order.
type PageRef struct {
	Key        string `json:"key"`
	First      string `json:"first"`
	Last       string `json:"last"`
	Partitions int    `json:"partitions"`
}

// Page is the content of one page object: the refs of some consecutive
// partitions, sorted. Pages keep the manifest small however many
// partitions a table has: a commit rewrites only the pages of the
// partitions it touches.
type Page struct {
	Partitions []PartitionRef `json:"partitions"`
}

// Summary says what one commit changed, for history and for incremental
// readers.
type Summary struct {
	FilesAdded   int64 `json:"files_added"`
	FilesRemoved int64 `json:"files_removed"`
	RowsAdded    int64 `json:"rows_added"`
	RowsRemoved  int64 `json:"rows_removed"`
	BytesAdded   int64 `json:"bytes_added"`
	BytesRemoved int64 `json:"bytes_removed"`
	// DataChange is false for rewrites that keep the same rows
	// (compaction), so rollups and other incremental readers skip them.
	DataChange bool `json:"data_change"`
	// Partitions lists the partitions this commit touched, sorted.
	Partitions []string `json:"partitions,omitempty"`
}

// Manifest is one immutable table version.
type Manifest struct {
	Format      int       `json:"format"`
	Version     int64     `json:"version"`
	CommittedAt time.Time `json:"committed_at"`
	// CommitID is unique per commit attempt; it tells our own write from a
	// rival's when an outcome was ambiguous.
	CommitID string `json:"commit_id"`
	// TableID names the table, whatever its location is spelled as: a
	// random UUID written by the version that created the table and
	// carried by every later one (a rollback included). A table created
	// before ids existed gets one at its next commit; until then it is
	// empty (see Manifest.Identity).
	TableID   string `json:"table_id,omitempty"`
	Operation string `json:"operation"`
	RunID     string `json:"run_id,omitempty"`
	// RolledBackTo is set by a rollback: the version whose content this one
	// restores.
	RolledBackTo int64             `json:"rolled_back_to,omitempty"`
	Schema       Schema            `json:"schema"`
	Spec         PartitionSpec     `json:"partition_spec"`
	Properties   map[string]string `json:"properties,omitempty"`
	// Checkpoints are source positions committed with the data they
	// produced (Kafka offsets, landing files taken, rollup watermarks),
	// keyed by source id; their content belongs to the writer.
	Checkpoints map[string]json.RawMessage `json:"checkpoints,omitempty"`
	// Pages list the table's partitions in sorted runs.
	Pages []PageRef `json:"pages"`
	// Files, Rows and Bytes are the live totals at this version.
	Files   int64   `json:"files"`
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	Summary Summary `json:"summary"`
}

// PropTargetFileSize is the table property holding the size, in bytes (a
// decimal integer), that jobs writing the table's data files aim for.
const PropTargetFileSize = "target_file_size"

// DefaultTargetFileSize is the target size of a table without the
// property: 256 MiB, Delta's and Iceberg's default too.
const DefaultTargetFileSize = 256 << 20

// TargetFileSize is the table's target_file_size property, or
// DefaultTargetFileSize when it is unset or not a positive number.
func (m *Manifest) TargetFileSize() int64 {
	if n, err := strconv.ParseInt(m.Properties[PropTargetFileSize], 10, 64); err == nil && n > 0 {
		return n
	}
	return DefaultTargetFileSize
}

// Identity returns what names the table of m wherever it is read from:
// its TableID, or, for a table that has not committed since ids existed,
// "location:" and loc, the table's absolute URL (Table.Identity passes
// it), so that records keyed by table (the warehouse's sluice_published,
// an Iceberg mirror) never take one table for another.
func (m *Manifest) Identity(loc string) string {
	if m.TableID != "" {
		return m.TableID
	}
	return "location:" + loc
}

// Totals returns the table's live files, rows and bytes at this version.
func (m *Manifest) Totals() (files, rows, bytes int64) {
	return m.Files, m.Rows, m.Bytes
}

// pageFor returns the index of the page that holds, or would hold,
// partition p: the last page whose First is <= p, else the first page; -1
// if there are no pages.
func (m *Manifest) pageFor(p string) int {
	if len(m.Pages) == 0 {
		return -1
	}
	i := sort.Search(len(m.Pages), func(i int) bool { return m.Pages[i].First > p })
	if i == 0 {
		return 0
	}
	return i - 1
}

// refIndex returns the index of partition p in refs (sorted) and whether
// it is present.
func refIndex(refs []PartitionRef, p string) (int, bool) {
	i := sort.Search(len(refs), func(i int) bool { return refs[i].Partition >= p })
	return i, i < len(refs) && refs[i].Partition == p
}

func decodeManifest(key string, b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: corrupt manifest: %w", key, err)
	}
	if m.Format > FormatVersion {
		return nil, fmt.Errorf("%s: manifest format %d is newer than this sluice understands (%d): upgrade sluice", key, m.Format, FormatVersion)
	}
	// A type absent from the JSON is never parsed, so it must be caught
	// here: a column or a partition field without a name or a type cannot
	// be read or written.
	for i, c := range m.Schema.Columns {
		if c.Name == "" || c.Type.Kind == "" {
			return nil, fmt.Errorf("%s: corrupt manifest: schema column %d has no name or no type", key, i+1)
		}
	}
	for i, f := range m.Spec.Fields {
		if f.Name == "" || f.Type.Kind == "" || (f.Transform != "day" && f.Transform != "identity") {
			return nil, fmt.Errorf("%s: corrupt manifest: partition field %d has no name, no type or an unknown transform %q", key, i+1, f.Transform)
		}
	}
	return &m, nil
}
