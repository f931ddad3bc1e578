package ingest

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// Format names a landing file's encoding.
type Format string

// The formats a landing file may have. FormatAuto picks one by extension.
const (
	FormatAuto    Format = ""
	FormatJSONL   Format = "jsonl"
	FormatCSV     Format = "csv"
	FormatParquet Format = "parquet"
	// The formats of Kafka records in the Confluent wire format, whose
	// schemas a Schema Registry holds (Options.SchemaRegistry).
	FormatAvro     Format = "avro"
	FormatProtobuf Format = "protobuf"
	FormatJSONSR   Format = "json-sr"
)

// registryFormat reports whether f is a Schema Registry's format.
func registryFormat(f Format) bool {
	return f == FormatAvro || f == FormatProtobuf || f == FormatJSONSR
}

// EpochUnit is the unit of a number given for a timestamp column.
type EpochUnit string

// Epoch units: seconds, milliseconds, microseconds since 1970-01-01 UTC.
const (
	EpochSeconds      EpochUnit = "s"
	EpochMilliseconds EpochUnit = "ms"
	EpochMicroseconds EpochUnit = "us"
)

// Options tune one ingest run. The zero value of each field means its
// default (see DefaultOptions); Validate names every bad field.
type Options struct {
	// Format forces the landing files' format; FormatAuto (zero) picks it
	// from each file's extension: .jsonl, .json, .ndjson, .csv, .parquet,
	// each optionally followed by .gz or .zst.
	Format Format
	// SchemaRegistry is the URL of the Schema Registry (Confluent's REST
	// API) holding the schemas of a Kafka topic's records, which are in
	// the Confluent wire format: each record's schema is fetched by its
	// id, once. Format, when FormatAvro, FormatProtobuf or FormatJSONSR,
	// is the only format records may have; FormatAuto takes each schema's
	// type from the registry. Its credentials come from
	// SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD, or
	// SCHEMA_REGISTRY_TOKEN. Empty: records are JSON lines.
	SchemaRegistry string
	// MaxRecords stops taking files once this many records were read; the
	// file that crosses it is read whole, because a landing file is taken
	// whole or not at all. A Kafka run stops at exactly this many records
	// and checkpoints what it read. Zero: no limit.
	MaxRecords int64
	// MinAge skips files modified less than this long ago: a producer may
	// still be writing them (local disk shows a file as it grows; an
	// object store shows a multipart upload only when complete, but its
	// time is the upload's start). They wait for the next run. Zero: take
	// every file. Compared with the store's modification time, so allow
	// for clock skew between this machine and the store.
	MinAge time.Duration
	// Until, when set, is where the run stops: landing files modified
	// after it are left for a later run, and a Kafka run reads each
	// partition only up to the first record timestamped at or after it
	// (Kafka's ListOffsets by time). A scheduled ingest passes its
	// interval's end, so a rerun of an interval takes the same input.
	// Compared with the store's modification time and the records'
	// timestamps, so allow for clock skew. Zero: no bound.
	Until time.Time
	// MaxRecordBytes is the largest record accepted, in bytes of its raw
	// encoding (a JSON or CSV line); a larger one is quarantined with its
	// first MaxRecordBytes bytes. A record costs up to RecordMemoryMultiple
	// times its size in memory, so MaxRecordBytes must fit MemoryBudget
	// that many times (see MaxRecordBytesFor). Zero: 1 MiB, or
	// MaxRecordBytesFor(MemoryBudget) if that is less.
	MaxRecordBytes int
	// EpochUnit is the unit of numbers given for timestamp columns. Zero:
	// seconds.
	EpochUnit EpochUnit
	// MemoryBudget bounds, in bytes, the memory of a run: the decoded rows
	// held before they are handed to the Parquet writers, the row groups
	// those hold, the largest record on its way (see MaxRecordBytes),
	// fetched Kafka batches and a zstd file's window. Zero: 256 MiB.
	MemoryBudget int64
	// TargetFileSize is the size, in bytes, at which a partition's output
	// file is finished and a new one started. Zero: the table's
	// target_file_size property, else 256 MiB.
	TargetFileSize int64
	// Quarantine is the location of the quarantine table. Empty: the
	// table's location + "_quarantine", beside it.
	Quarantine string
	// Group is the Kafka consumer group through which instances ingesting
	// the same topic share its partitions; Kafka tools show its lag.
	// Empty: DefaultGroup of the table's location ("sluice:" and the
	// location), so every instance writing the table shares by default.
	Group string
	// InstanceID makes this run a static member of Group: a run started
	// again with the same ID after a crash takes back its partitions at
	// once, instead of waiting for the group to expire the crashed member
	// (Kafka's KIP-345). A static member does not leave the group when it
	// ends, so other members wait for its session to expire before they
	// get its partitions: give each instance its own ID (a pod name), and
	// never two running at once the same one. Empty: a dynamic member.
	InstanceID string
	// Kafka says how a Kafka run connects to its brokers: TLS and SASL.
	// It is no part of the source's identity: the checkpoint is the
	// same with or without it. A landing run does not look at it.
	Kafka KafkaSecurity
	// OrderedNames declares that landing file names only ever increase
	// (date- or time-prefixed names, as Firehose, Kafka Connect and Spark
	// write them), which lets the checkpoint keep a high-water mark instead
	// of every name. Leave it false when a file may land with a name below
	// one already taken: under a mark it would be skipped.
	OrderedNames bool
	// OnGap says what a Kafka run does when retention deleted records not
	// yet read: GapFail (zero) fails with ErrKafkaGap, GapSkip records the
	// gap in the checkpoint and reads on.
	OnGap GapPolicy
	// DedupKey names a column whose value identifies a record: a valid
	// record whose key the table's commits of the last DedupWindow
	// already wrote, or that an earlier record of the same run has, is
	// dropped and counted in Result.RecordsDeduplicated (see the package
	// documentation for the window's exact meaning). Empty: no
	// deduplication. Run fails if the table has no such column.
	DedupKey string
	// DedupWindow is how far back, by commit time, DedupKey looks for
	// keys already written. Zero: 24h when DedupKey is set.
	DedupWindow time.Duration
	// RunID identifies the run in the manifests it commits.
	RunID string
	// Logger receives one line per phase; nil: no logging.
	Logger *slog.Logger
	// Progress, when set, is called after each file with the files done
	// and the files to take.
	Progress func(done, total int)
}

// Defaults of Options.
const (
	DefaultMaxRecordBytes = 1 << 20
	DefaultMemoryBudget   = 256 << 20
	DefaultTargetFileSize = catalog.DefaultTargetFileSize
	DefaultDedupWindow    = 24 * time.Hour
)

// RecordMemoryMultiple is how many times its size a record may take in
// memory on its way from a landing file to a Parquet file. One record
// costs up to about 14 times: the line read (kept in pieces, then joined:
// twice), the decoded string, and in parquet-go the dictionary's copy of
// the value and its values buffer, the PLAIN page it falls back to, the
// compressed page (compressed twice while a column's zstd level is being
// learnt), the chunk's min and max and the page index's (cut to 64 bytes
// only when the file is finished), plus what the collector has not yet
// freed of them. A quarantined record is kept whole as bytes and costs
// about as much, and the table's and the quarantine's writers run at once,
// so a valid record and a quarantined one may both be on their way: twice
// that. The peak RSS of "sluice ingest" over its footprint at rest, for
// one line of several MiB to over a hundred, stays below this multiple
// for a valid line, a quarantined one, and both in one file.
const RecordMemoryMultiple = 32

// MaxRecordBytesFor is the largest MaxRecordBytes that fits a memory
// budget: a RecordMemoryMultiple-th of it.
func MaxRecordBytesFor(budget int64) int {
	return int(min(budget/RecordMemoryMultiple, 1<<40))
}

// DefaultOptions returns the defaults spelled out.
func DefaultOptions() Options {
	return Options{MaxRecordBytes: DefaultMaxRecordBytes, EpochUnit: EpochSeconds,
		MemoryBudget: DefaultMemoryBudget}
}

// Validate names every bad field.
func (o Options) Validate() error {
	var bad []string
	switch o.Format {
	case FormatAuto, FormatJSONL, FormatCSV, FormatParquet, FormatAvro, FormatProtobuf, FormatJSONSR:
	default:
		bad = append(bad, fmt.Sprintf("Format %q: want jsonl, csv, parquet, avro, protobuf or json-sr", o.Format))
	}
	switch {
	case registryFormat(o.Format) && o.SchemaRegistry == "":
		bad = append(bad, fmt.Sprintf("Format %q needs a SchemaRegistry: records of that format carry a schema id, not their schema", o.Format))
	case o.SchemaRegistry != "" && o.Format != FormatAuto && !registryFormat(o.Format):
		bad = append(bad, fmt.Sprintf("Format %q with a SchemaRegistry: want avro, protobuf, json-sr or none (the registry says)", o.Format))
	}
	if o.SchemaRegistry != "" {
		if err := checkRegistryURL(o.SchemaRegistry); err != nil {
			bad = append(bad, err.Error())
		}
	}
	switch o.EpochUnit {
	case "", EpochSeconds, EpochMilliseconds, EpochMicroseconds:
	default:
		bad = append(bad, fmt.Sprintf("EpochUnit %q: want s, ms or us", o.EpochUnit))
	}
	switch o.OnGap {
	case GapFail, GapSkip, "fail":
	default:
		bad = append(bad, fmt.Sprintf("OnGap %q: want fail or skip", o.OnGap))
	}
	if o.MaxRecords < 0 {
		bad = append(bad, fmt.Sprintf("MaxRecords %d < 0", o.MaxRecords))
	}
	if o.MinAge < 0 {
		bad = append(bad, fmt.Sprintf("MinAge %s < 0", o.MinAge))
	}
	if o.MaxRecordBytes < 0 {
		bad = append(bad, fmt.Sprintf("MaxRecordBytes %d < 0", o.MaxRecordBytes))
	}
	if o.MemoryBudget < 0 {
		bad = append(bad, fmt.Sprintf("MemoryBudget %d < 0", o.MemoryBudget))
	}
	if budget := cmp.Or(o.MemoryBudget, DefaultMemoryBudget); o.MaxRecordBytes > MaxRecordBytesFor(budget) && o.MemoryBudget >= 0 {
		bad = append(bad, fmt.Sprintf("MaxRecordBytes %d does not fit MemoryBudget %d: a record takes up to %d times its size in memory, so at most %d",
			o.MaxRecordBytes, budget, RecordMemoryMultiple, MaxRecordBytesFor(budget)))
	}
	if o.TargetFileSize < 0 {
		bad = append(bad, fmt.Sprintf("TargetFileSize %d < 0", o.TargetFileSize))
	}
	if o.DedupWindow < 0 {
		bad = append(bad, fmt.Sprintf("DedupWindow %s < 0", o.DedupWindow))
	}
	if o.DedupWindow > 0 && o.DedupKey == "" {
		bad = append(bad, fmt.Sprintf("DedupWindow %s without a DedupKey", o.DedupWindow))
	}
	for _, p := range o.Kafka.Problems() {
		bad = append(bad, "Kafka: "+p.Error())
	}
	if len(bad) > 0 {
		return fmt.Errorf("ingest options: %s", strings.Join(bad, "; "))
	}
	return nil
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.EpochUnit == "" {
		o.EpochUnit = d.EpochUnit
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = d.MemoryBudget
	}
	if o.MaxRecordBytes == 0 {
		o.MaxRecordBytes = max(1, min(d.MaxRecordBytes, MaxRecordBytesFor(o.MemoryBudget)))
	}
	if o.DedupKey != "" && o.DedupWindow == 0 {
		o.DedupWindow = DefaultDedupWindow
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// targetFileSize is the file size the run aims for: TargetFileSize, else
// the table's own target.
func (o Options) targetFileSize(m *catalog.Manifest) int64 {
	if o.TargetFileSize > 0 {
		return o.TargetFileSize
	}
	return m.TargetFileSize()
}
