package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sluice-data/sluice/catalog"
	"github.com/sluice-data/sluice/cloud"
)

// errGrow stops a Kafka run before a record whose schema the table must
// widen to take.
var errGrow = errors.New("the table's schema must widen")

// maxWidenings bounds the schema changes of one ingest: each is a new
// schema version met in the topic.
const maxWidenings = 64

// runKafka reads a topic into t (see runKafkaOnce). With a Schema
// Registry, a record of a schema that adds columns or widens types ends a
// run before it: what was read is committed, the table's schema is
// widened in a commit of its own (Operation "evolve", as import would
// widen it: new columns nullable, wider types), and a new run reads on
// from that record. The results add up.
func runKafka(ctx context.Context, t *catalog.Table, source string, o Options) (Result, error) {
	var total Result
	for widened := 0; ; widened++ {
		res, err := runKafkaOnce(ctx, t, source, o)
		total.add(res)
		if err != nil || res.grow == nil {
			return total, err
		}
		if widened == maxWidenings {
			return total, fmt.Errorf("ingest into %s: more than %d schema changes in one run", cloud.Redact(t.Location()), maxWidenings)
		}
		m, err := t.Commit(ctx, catalog.Change{Operation: "evolve", RunID: o.RunID, Schema: res.grow})
		if err != nil && !errors.Is(err, catalog.ErrConflict) {
			return total, fmt.Errorf("ingest into %s: widen its schema for the topic's new schema version: %w", cloud.Redact(t.Location()), err)
		}
		if err == nil {
			total.Version, total.TableSchemaWidened = m.Version, total.TableSchemaWidened+1
			o.withDefaults().Logger.LogAttrs(ctx, slog.LevelInfo, "schema widened", slog.String("table", t.Location()),
				slog.String("schema", res.grow.String()), slog.Int64("version", m.Version))
		}
		if o.MaxRecords > 0 {
			if o.MaxRecords -= res.RecordsIn; o.MaxRecords <= 0 {
				return total, nil
			}
		}
	}
}

// add adds the counts of a later run of the same ingest to r; the
// versions and lag are the later run's.
func (r *Result) add(o Result) {
	r.RecordsIn += o.RecordsIn
	r.RowsWritten += o.RowsWritten
	r.RecordsQuarantined += o.RecordsQuarantined
	r.RecordsDeduplicated += o.RecordsDeduplicated
	r.RecordsSkipped += o.RecordsSkipped
	r.BytesIn += o.BytesIn
	r.FilesOut += o.FilesOut
	r.Version = max(r.Version, o.Version)
	r.QuarantineVersion = max(r.QuarantineVersion, o.QuarantineVersion)
	r.Partitions = union(r.Partitions, o.Partitions)
	r.KafkaPartitions = union(r.KafkaPartitions, o.KafkaPartitions)
	if o.KafkaLag != nil {
		r.KafkaLag = o.KafkaLag
	}
}

// union is the sorted union of two sorted lists.
func union[T ~string | ~int32](a, b []T) []T {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
