package scheduler

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A job's summary that counts small files by table sets the table's
// sluice_table_small_files gauge (a later job that wrote the table
// replaces it); an ingest's Kafka lag by partition sets
// sluice_kafka_lag_records.
func TestMetricsSmallFilesAndKafkaLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	now := time.Now()
	for _, rec := range []Record{
		{Job: "ingest", Status: StatusSucceeded, Started: now, Ended: now, Summary: json.RawMessage(`{"small_files": {"events": 12}}`)},
		{Job: "rollup", Status: StatusSucceeded, Started: now, Ended: now, Summary: json.RawMessage(`{"small_files": {"daily": 1}}`)},
		{Job: "compact", Status: StatusSucceeded, Started: now, Ended: now, Summary: json.RawMessage(`{"small_files": {"events": 2}}`)},
		{Job: "ingest", Status: StatusSucceeded, Started: now, Ended: now, Summary: json.RawMessage(`{"kafka_lag": {"0": 5, "1": 0}}`)},
	} {
		m.Observe(rec)
	}
	want := `# HELP sluice_table_small_files Files under a quarter of the table's target file size in its current version, after the last job that wrote it.
# TYPE sluice_table_small_files gauge
sluice_table_small_files{table="daily"} 1
sluice_table_small_files{table="events"} 2
# HELP sluice_kafka_lag_records Records of a Kafka partition an ingest job left unread at its last run, against the end offset when it started.
# TYPE sluice_kafka_lag_records gauge
sluice_kafka_lag_records{job="ingest",partition="0"} 5
sluice_kafka_lag_records{job="ingest",partition="1"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_table_small_files", "sluice_kafka_lag_records"); err != nil {
		t.Error(err)
	}
}
