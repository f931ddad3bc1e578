package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/jobs"
)

func (a *app) ingestCommand() *cobra.Command {
	var o jobs.Ingest
	cmd := &cobra.Command{
		Use:   "ingest TABLE --from SOURCE [--format jsonl|csv|parquet] [--max-records N] [--quarantine TABLE2] [--min-age D] [--until TIME] [--on-gap fail|skip]",
		Short: "Ingest landing files or a Kafka topic into a table, exactly once",
		Long: `Append the landing files under SOURCE (a path, file://, s3:// or az:// prefix)
that TABLE has not taken yet, and record them in the same commit: a rerun
takes only new files; a crashed run leaves nothing half-done and is redone.

Formats by extension: .jsonl/.json/.ndjson (JSON lines), .csv (header row),
.parquet; .gz and .zst compressed. --format overrides the extension.
Records are validated against the table schema; a bad one goes to the
quarantine table (default: TABLE + "_quarantine", beside it) with the
reason and its file:line. A file that cannot be read as a whole (a truncated
gzip, a Parquet file of an incompatible schema) is reported, not recorded,
and retried by the next run; the others are committed and the exit code is 1.

Files younger than --min-age are left for the next run: a producer may
still be writing them. --until TIME (RFC 3339) stops at TIME: files
modified after it are left for a later run, and a Kafka run reads each
partition up to its first record timestamped at or after TIME. A scheduled
ingest job passes its interval's end, so a rerun of an interval takes the
same input.

A Kafka source, kafka://host:port[,host:port]/topic, is read per partition
from the offset TABLE records up to the end offset listed when the run is
given the partition, with read_committed isolation; each record's value is
one JSON object. The offsets are committed with the files. Records that
retention deleted before they were read fail the run, or with --on-gap
skip are recorded as a gap and skipped.

A Kafka source is read in plaintext without authentication unless told
otherwise. --tls verifies the brokers' certificates against the system's
roots, --tls-ca FILE against the CAs of a PEM file instead; --tls-cert and
--tls-key give a client certificate, --tls-server-name the name to verify.
Only --tls-insecure-skip-verify skips the verification, with a warning on
every run. --sasl plain, scram-sha-256 or scram-sha-512 authenticates as
$KAFKA_USERNAME with $KAFKA_PASSWORD (or --sasl-username, and
--sasl-password-file FILE, read on each connection); --sasl oauthbearer
sends the token of --sasl-token-file FILE or printed by --sasl-token-command
CMD, read again on each authentication; --sasl aws-msk-iam signs with the
AWS default credential chain. The kafka:// URL takes no credentials, and
none is ever printed. Credentials or a certificate refused fail the run at
once. A pipeline's ingest job takes the same options (tls_ca, sasl, ...),
and its password as sasl_password: ${NAME}. The checkpoint is the same
whatever the connection's security.

Instances ingesting one topic into one table share its partitions through
a consumer group (--group, default "sluice:" + the table's location), each
committing the offsets of its own partitions; the group's offsets are
written after each commit so that Kafka tools show the lag.

--dedup-key COL drops a valid record whose COL value the table's commits of
the last --dedup-window (24h by default) already wrote, or an earlier record
of the same run has: for producers that retry. The summary counts them in
records_deduplicated: records_in = rows_written + records_quarantined +
records_deduplicated.`,
		Example: `  sluice ingest ./lake/events --from s3://landing/events/ --json
  sluice ingest ./lake/events --from kafka://broker1:9092,broker2:9092/events --max-records 1000000
  sluice ingest ./lake/events --from ./incoming --format csv --min-age 2m
  KAFKA_USERNAME=sluice KAFKA_PASSWORD=... sluice ingest ./lake/events --from kafka://b1:9093/events --tls-ca ca.pem --sasl scram-sha-512`,
		Args: exactArgs(1, "TABLE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Table = args[0]
			if cmd.Flags().Changed("sasl-password") {
				return usageError{cmd: "ingest", err: errors.New("ingest: --sasl-password is for pipeline files (sasl_password: ${NAME}); on the command line set KAFKA_PASSWORD or give --sasl-password-file")}
			}
			if err := o.Validate(); err != nil {
				return usageError{cmd: "ingest", err: fmt.Errorf("ingest: %s", strings.ReplaceAll(err.Error(), "\n", "; "))}
			}
			return a.runJob(cmd, &o)
		},
	}
	o.Bind(cmd.Flags())
	return cmd
}
