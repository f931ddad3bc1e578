package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/cloud"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/ingest"
)

// Ingest appends what landed (files, or a Kafka topic's records) to a
// table, exactly once.
type Ingest struct {
	Table          string
	From           string
	Format         string
	SchemaRegistry string
	MaxRecords     count
	Quarantine     string
	MinAge         time.Duration
	Until          string
	EpochUnit      string
	MaxRecordBytes size
	Memory         size
	OrderedNames   bool
	DedupKey       string
	DedupWindow    time.Duration
	OnGap          string
	Group          string
	InstanceID     string

	// How a Kafka source is connected to: TLS and SASL (see
	// ingest.KafkaSecurity). SASLPassword is the pipeline file's
	// sasl_password, meant to come from ${NAME}; its flag is hidden.
	TLS                   bool
	TLSCA                 string
	TLSCert               string
	TLSKey                string
	TLSServerName         string
	TLSInsecureSkipVerify bool
	SASL                  string
	SASLUsername          string
	SASLPassword          ingest.Secret
	SASLPasswordFile      string
	SASLTokenFile         string
	SASLTokenCommand      string

	// UntilTime, when Until is empty, stops the run there: a scheduled
	// ingest sets its interval's end.
	UntilTime time.Time

	o ingest.Options
}

// Kind is "ingest".
func (*Ingest) Kind() string { return "ingest" }

// Bind registers ingest's flags.
func (o *Ingest) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "landing prefix (path, file://, s3://, az://) or kafka://host:port[,host:port]/topic")
	fs.StringVar(&o.Format, "format", "", "jsonl, csv or parquet (default: by each file's extension); for Kafka records in the Confluent wire format, avro, protobuf or json-sr with --schema-registry (default: the registry's type of each schema)")
	fs.StringVar(&o.SchemaRegistry, "schema-registry", "", "Schema Registry URL for a Kafka topic's records in the Confluent wire format (credentials from SCHEMA_REGISTRY_USERNAME/SCHEMA_REGISTRY_PASSWORD or SCHEMA_REGISTRY_TOKEN)")
	fs.Var(&o.MaxRecords, "max-records", "stop once this many records were read (landing files are taken whole; Kafka stops exactly)")
	fs.StringVar(&o.Quarantine, "quarantine", "", "quarantine table for bad records (default: TABLE + \"_quarantine\")")
	fs.DurationVar(&o.MinAge, "min-age", 0, "leave files modified more recently than this for the next run")
	fs.StringVar(&o.Until, "until", "", "stop at this RFC 3339 time: later files and Kafka records wait for a later run")
	fs.StringVar(&o.EpochUnit, "epoch-unit", "s", "unit of numeric timestamps: s, ms or us")
	o.MaxRecordBytes.text = "1MiB"
	fs.Var(&o.MaxRecordBytes, "max-record-bytes",
		fmt.Sprintf("largest record accepted; larger ones are quarantined (at most a %dth of --memory)", ingest.RecordMemoryMultiple))
	o.Memory.text = sizeText(ingest.DefaultMemoryBudget)
	fs.Var(&o.Memory, "memory",
		"memory budget of the run: rows buffered, the largest record, fetched batches; the process aims to stay within it plus "+sizeText(GCHeadroom))
	fs.BoolVar(&o.OrderedNames, "ordered-names", false, "landing file names only increase: keep a high-water mark in the checkpoint instead of every name")
	fs.StringVar(&o.DedupKey, "dedup-key", "", "drop records whose value of this column the table's commits of the --dedup-window, or earlier records of the run, already wrote")
	fs.DurationVar(&o.DedupWindow, "dedup-window", 0, "how far back, by commit time, --dedup-key looks (default 24h)")
	fs.StringVar(&o.OnGap, "on-gap", "fail", "Kafka: when retention deleted records not yet read, fail, or skip them and record the gap")
	fs.StringVar(&o.Group, "group", "", "Kafka: consumer group sharing the topic's partitions between instances (default \"sluice:\" + the table's location)")
	fs.StringVar(&o.InstanceID, "instance-id", "", "Kafka: static group member ID; a restart with the same ID takes its partitions back at once (one running instance per ID)")
	o.bindKafkaSecurity(fs)
}

// bindKafkaSecurity registers the flags of a Kafka source's TLS and SASL.
func (o *Ingest) bindKafkaSecurity(fs *pflag.FlagSet) {
	fs.BoolVar(&o.TLS, "tls", false, "Kafka: connect with TLS, verifying the brokers' certificates against the system's roots")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "Kafka: PEM file of the CAs the brokers' certificates must chain to, instead of the system's (implies --tls)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "Kafka: PEM file of the client certificate, for brokers that authenticate clients by certificate (with --tls-key)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "Kafka: PEM file of the client certificate's private key (with --tls-cert)")
	fs.StringVar(&o.TLSServerName, "tls-server-name", "", "Kafka: name the brokers' certificates must hold (default: each broker's host)")
	fs.BoolVar(&o.TLSInsecureSkipVerify, "tls-insecure-skip-verify", false,
		"Kafka: DANGEROUS: accept any broker certificate, so anyone on the path can read and change the records; every run warns")
	fs.StringVar(&o.SASL, "sasl", "", "Kafka: SASL mechanism: plain, scram-sha-256, scram-sha-512 (user and password from "+
		ingest.EnvKafkaUsername+" and "+ingest.EnvKafkaPassword+"), oauthbearer or aws-msk-iam (the AWS default credential chain)")
	fs.StringVar(&o.SASLUsername, "sasl-username", "", "Kafka: SASL user for plain and scram (default $"+ingest.EnvKafkaUsername+")")
	fs.Var(secretValue{&o.SASLPassword}, "sasl-password", "Kafka: SASL password; for pipeline files, as sasl_password: ${NAME} (on the command line use $"+ingest.EnvKafkaPassword+")")
	_ = fs.MarkHidden("sasl-password")
	fs.StringVar(&o.SASLPasswordFile, "sasl-password-file", "", "Kafka: file holding the SASL password, read on each connection (default: $"+ingest.EnvKafkaPassword+")")
	fs.StringVar(&o.SASLTokenFile, "sasl-token-file", "", "Kafka: file holding the OAUTHBEARER token, read on each authentication (a refresher may replace it)")
	fs.StringVar(&o.SASLTokenCommand, "sasl-token-command", "", "Kafka: command printing an OAUTHBEARER token, run by /bin/sh -c on each authentication")
}

// secretValue is a flag holding a secret: it shows as empty, never the
// value.
type secretValue struct{ s *ingest.Secret }

func (v secretValue) String() string { return "" }
func (v secretValue) Type() string   { return "string" }
func (v secretValue) Set(s string) error {
	*v.s = ingest.Secret(s)
	return nil
}

// kafkaSecurity is the Kafka connection the options give.
func (o *Ingest) kafkaSecurity() ingest.KafkaSecurity {
	return ingest.KafkaSecurity{TLS: o.TLS, TLSCA: o.TLSCA, TLSCert: o.TLSCert, TLSKey: o.TLSKey,
		TLSServerName: o.TLSServerName, TLSInsecureSkipVerify: o.TLSInsecureSkipVerify,
		SASL: o.SASL, SASLUsername: o.SASLUsername, SASLPassword: o.SASLPassword,
		SASLPasswordFile: o.SASLPasswordFile, SASLTokenFile: o.SASLTokenFile, SASLTokenCommand: o.SASLTokenCommand}
}

// checkKafkaSecurity reports each TLS or SASL option that cannot be: one
// given for a source that is not Kafka, or that does not go with the
// others.
func (o *Ingest) checkKafkaSecurity() []error {
	var errs []error
	if !o.kafka() {
		given := []struct {
			flag string
			set  bool
		}{{"tls", o.TLS}, {"tls-ca", o.TLSCA != ""}, {"tls-cert", o.TLSCert != ""}, {"tls-key", o.TLSKey != ""},
			{"tls-server-name", o.TLSServerName != ""}, {"tls-insecure-skip-verify", o.TLSInsecureSkipVerify},
			{"sasl", o.SASL != ""}, {"sasl-username", o.SASLUsername != ""}, {"sasl-password", o.SASLPassword != ""},
			{"sasl-password-file", o.SASLPasswordFile != ""}, {"sasl-token-file", o.SASLTokenFile != ""},
			{"sasl-token-command", o.SASLTokenCommand != ""}}
		for _, g := range given {
			if g.set {
				errs = append(errs, bad(g.flag, "is for a kafka:// source; --from is not one"))
			}
		}
		return errs
	}
	for _, p := range o.kafkaSecurity().Problems() {
		errs = append(errs, bad(p.Option, "%s", p.Msg))
	}
	return errs
}

func (o *Ingest) kafka() bool { return strings.HasPrefix(strings.ToLower(o.From), "kafka://") }

// Validate checks every option and builds the ingest's options.
func (o *Ingest) Validate() error {
	var errs []error
	if o.From == "" {
		errs = append(errs, bad("from", "SOURCE is required"))
	} else if o.kafka() {
		if err := ingest.CheckKafkaURL(o.From); err != nil {
			errs = append(errs, bad("from", "%v", err))
		}
	}
	if err := o.MaxRecords.check("max-records"); err != nil {
		errs = append(errs, err)
	}
	switch f := ingest.Format(o.Format); f {
	case ingest.FormatAuto, ingest.FormatJSONL, ingest.FormatCSV, ingest.FormatParquet:
		if o.SchemaRegistry != "" && f != ingest.FormatAuto {
			errs = append(errs, bad("format", "%q with --schema-registry: want avro, protobuf or json-sr (or none: the registry says)", o.Format))
		}
	case ingest.FormatAvro, ingest.FormatProtobuf, ingest.FormatJSONSR:
		if o.SchemaRegistry == "" {
			errs = append(errs, bad("format", "%q needs --schema-registry URL: such records carry a schema id, not their schema", o.Format))
		}
	default:
		errs = append(errs, bad("format", "%q: want jsonl, csv, parquet, avro, protobuf or json-sr", o.Format))
	}
	if o.SchemaRegistry != "" && !o.kafka() {
		errs = append(errs, bad("schema-registry", "is for a kafka:// source; --from is not one"))
	}
	switch ingest.EpochUnit(o.EpochUnit) {
	case "", ingest.EpochSeconds, ingest.EpochMilliseconds, ingest.EpochMicroseconds:
	default:
		errs = append(errs, bad("epoch-unit", "%q: want s, ms or us", o.EpochUnit))
	}
	switch o.OnGap {
	case "fail", "skip":
	default:
		errs = append(errs, bad("on-gap", "%q: want fail or skip", o.OnGap))
	}
	if o.MinAge < 0 {
		errs = append(errs, bad("min-age", "%s: want a duration >= 0", o.MinAge))
	}
	if o.DedupWindow < 0 {
		errs = append(errs, bad("dedup-window", "%s: want a duration >= 0", o.DedupWindow))
	}
	if o.DedupWindow > 0 && o.DedupKey == "" {
		errs = append(errs, bad("dedup-window", "%s without --dedup-key", o.DedupWindow))
	}
	errs = append(errs, o.checkKafkaSecurity()...)
	until := o.UntilTime
	if o.Until != "" {
		t, err := time.Parse(time.RFC3339Nano, o.Until)
		if err != nil {
			errs = append(errs, bad("until", "%q: want an RFC 3339 time such as 2024-05-01T00:00:00Z", o.Until))
		}
		until = t
	}
	memory, err := o.Memory.bytes("memory", 1<<50)
	if err != nil {
		errs = append(errs, err)
	}
	var maxRecord int64
	if o.MaxRecordBytes.set { // unset, the record limit is 1 MiB or what --memory holds
		if maxRecord, err = o.MaxRecordBytes.bytes("max-record-bytes", 1<<40); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	io := ingest.Options{Format: ingest.Format(o.Format), SchemaRegistry: o.SchemaRegistry, MaxRecords: o.MaxRecords.n, MinAge: o.MinAge, Until: until,
		EpochUnit: ingest.EpochUnit(o.EpochUnit), Quarantine: o.Quarantine, OrderedNames: o.OrderedNames,
		OnGap: ingest.GapPolicy(o.OnGap), Group: o.Group, InstanceID: o.InstanceID,
		DedupKey: o.DedupKey, DedupWindow: o.DedupWindow, MemoryBudget: memory, MaxRecordBytes: int(maxRecord)}
	if o.kafka() {
		io.Kafka = o.kafkaSecurity()
	}
	if budget := o.memoryBudget(); io.MaxRecordBytes > ingest.MaxRecordBytesFor(budget) {
		return bad("max-record-bytes", "%s cannot fit in --memory %s: a record takes up to %d times its size in memory; "+
			"give --memory %s or more, or --max-record-bytes %s or less",
			sizeText(int64(io.MaxRecordBytes)), sizeText(budget), ingest.RecordMemoryMultiple,
			sizeText(int64(io.MaxRecordBytes)*ingest.RecordMemoryMultiple), sizeText(int64(ingest.MaxRecordBytesFor(budget))))
	}
	if err := io.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOption, err) // a rule of the package's beyond the flags'
	}
	o.o = io
	return nil
}

func (o *Ingest) memoryBudget() int64 {
	if n, err := o.Memory.bytes("memory", 1<<50); err == nil && n > 0 {
		return n
	}
	return ingest.DefaultMemoryBudget
}

// IngestResult is what an ingest did; it is the --json summary.
type IngestResult struct {
	Command             string   `json:"command"`
	Table               string   `json:"table"`
	Source              string   `json:"source"`
	RecordsIn           int64    `json:"records_in"`
	RowsWritten         int64    `json:"rows_written"`
	RecordsQuarantined  int64    `json:"records_quarantined"`
	RecordsDeduplicated int64    `json:"records_deduplicated"`
	FilesIn             int      `json:"files_in"`
	FilesFailed         int      `json:"files_failed"`
	FilesWaiting        int      `json:"files_waiting"`
	FilesOut            int      `json:"files_out"`
	BytesIn             int64    `json:"bytes_in"`
	Version             int64    `json:"version"`
	Partitions          []string `json:"partitions"`
	// RecordsSkipped, KafkaPartitions and KafkaLag are a Kafka run's
	// only (nil otherwise, and left out).
	RecordsSkipped  *int64 `json:"records_skipped,omitempty"`
	KafkaPartitions any    `json:"kafka_partitions,omitempty"`
	KafkaLag        any    `json:"kafka_lag,omitempty"`
	// SchemaWidened counts the table's schema changes for a topic's new
	// schema versions (a Schema Registry's records).
	SchemaWidened     int   `json:"schema_widened,omitempty"`
	QuarantineVersion int64 `json:"quarantine_version,omitempty"`
	smallFiles
	Warns   []string `json:"warnings,omitempty"`
	kafka   bool
	seconds float64
}

// Line says what was ingested.
func (r IngestResult) Line() string {
	var line string
	if r.kafka {
		line = fmt.Sprintf("ingested %s records into %s version %d (%s quarantined, %s skipped by retention); %.1f s",
			humanize.Comma(r.RecordsIn), r.Table, r.Version, humanize.Comma(r.RecordsQuarantined), humanize.Comma(*r.RecordsSkipped), r.seconds)
	} else {
		line = fmt.Sprintf("ingested %s records from %d files into %s version %d (%s quarantined, %d files failed, %d files waiting); %.1f s",
			humanize.Comma(r.RecordsIn), r.FilesIn, r.Table, r.Version, humanize.Comma(r.RecordsQuarantined), r.FilesFailed, r.FilesWaiting, r.seconds)
	}
	return withWarnings(line, r.Warns)
}

// Warnings are the run's warnings.
func (r IngestResult) Warnings() []string { return r.Warns }

// Run ingests.
func (o *Ingest) Run(ctx context.Context, env Env) (Result, error) {
	start := time.Now()
	res := IngestResult{Command: "ingest", Table: cloud.Redact(o.Table), Source: cloud.Redact(o.From), kafka: o.kafka(), Partitions: []string{}}
	t, err := env.begin(ctx, o, o.Table)
	if err != nil {
		return &res, err
	}
	defer t.Close()
	what := "ingesting files"
	if res.kafka {
		what = "ingesting records"
	}
	bar := env.progress(what)
	io := o.o
	io.RunID, io.Logger = env.RunID, env.logger()
	io.Progress = func(done, total int) { bar.Set(int64(done), int64(total)) }
	r, err := ingest.Run(ctx, t, o.From, io)
	bar.Done()
	res.fill(r)
	res.seconds = time.Since(start).Seconds()
	if res.kafka && io.Kafka.TLSInsecureSkipVerify {
		res.Warns = append(res.Warns, ingest.InsecureTLSWarning)
	}
	if err != nil && !errors.Is(err, ingest.ErrFilesFailed) {
		if errors.Is(err, catalog.ErrTableNotFound) {
			err = fmt.Errorf("%w (create it first with 'sluice init')", err)
		}
		return &res, classify(err)
	}
	if !res.kafka && r.FilesIn == 0 && r.FilesWaiting > 0 {
		res.Warns = append(res.Warns, fmt.Sprintf("no file taken, while %d wait: they are younger than --min-age or landed after --until (%s), for a later run",
			r.FilesWaiting, cmpOr(o.Until, io.Until)))
	}
	return &res, classify(err)
}

func cmpOr(s string, t time.Time) string {
	if s != "" {
		return s
	}
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339)
}

func (res *IngestResult) fill(r ingest.Result) {
	res.RecordsIn, res.RowsWritten, res.RecordsQuarantined = r.RecordsIn, r.RowsWritten, r.RecordsQuarantined
	res.RecordsDeduplicated, res.SchemaWidened = r.RecordsDeduplicated, r.TableSchemaWidened
	res.FilesIn, res.FilesFailed, res.FilesWaiting, res.FilesOut = r.FilesIn, r.FilesFailed, r.FilesWaiting, r.FilesOut
	res.BytesIn, res.Version, res.Partitions = r.BytesIn, r.Version, orEmpty(r.Partitions)
	res.QuarantineVersion = r.QuarantineVersion
	if res.kafka {
		skipped := r.RecordsSkipped
		res.RecordsSkipped = &skipped
		res.KafkaPartitions = orEmpty(r.KafkaPartitions)
		lag := map[string]int64{} // by partition: /metrics' sluice_kafka_lag_records
		for p, n := range r.KafkaLag {
			lag[strconv.Itoa(int(p))] = n
		}
		res.KafkaLag = lag
	}
}
