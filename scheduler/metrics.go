package scheduler

import (
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the scheduler's Prometheus metrics, fed by the runner's
// final records.
type Metrics struct {
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rows, bytes *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	smallFiles  *prometheus.GaugeVec
	kafkaLag    *prometheus.GaugeVec
}

// NewMetrics registers the metrics on reg (none when reg is nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_scheduler_runs_total",
			Help: "Runs finished, by job and final status."}, []string{"job", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sluice_scheduler_run_duration_seconds",
			Help: "How long runs took, first attempt to final status.", Buckets: prometheus.ExponentialBuckets(0.05, 4, 10)}, []string{"job"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_scheduler_rows_written_total",
			Help: "Rows written by succeeded runs, from the job's summary."}, []string{"job"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_scheduler_bytes_written_total",
			Help: "Bytes written by succeeded runs, from the job's summary."}, []string{"job"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_scheduler_last_success_timestamp_seconds",
			Help: "When each job's last run succeeded (Unix seconds)."}, []string{"job"}),
		smallFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_table_small_files",
			Help: "Files under a quarter of the table's target file size in its current version, after the last job that wrote it."}, []string{"table"}),
	}
	m.kafkaLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_kafka_lag_records",
		Help: "Records of a Kafka partition an ingest job left unread at its last run, against the end offset when it started."}, []string{"job", "partition"})
	if reg != nil {
		reg.MustRegister(m.runs, m.duration, m.rows, m.bytes, m.lastSuccess, m.smallFiles, m.kafkaLag)
	}
	return m
}

// Observe counts one final run record.
func (m *Metrics) Observe(rec Record) {
	m.runs.WithLabelValues(rec.Job, string(rec.Status)).Inc()
	if rec.Status == StatusSkipped || rec.Status == StatusUpstreamFailed {
		return
	}
	m.duration.WithLabelValues(rec.Job).Observe(rec.Ended.Sub(rec.Started).Seconds())
	if rec.Status != StatusSucceeded {
		return
	}
	m.lastSuccess.WithLabelValues(rec.Job).Set(float64(rec.Ended.UnixNano()) / 1e9)
	var s summaryMetrics
	if len(rec.Summary) == 0 || json.Unmarshal(rec.Summary, &s) != nil {
		return
	}
	if s.RowsWritten != nil {
		m.rows.WithLabelValues(rec.Job).Add(*s.RowsWritten)
	}
	if s.BytesOut != nil {
		m.bytes.WithLabelValues(rec.Job).Add(*s.BytesOut)
	}
	for p, n := range s.KafkaLag {
		m.kafkaLag.WithLabelValues(rec.Job, p).Set(n)
	}
	for table, n := range s.SmallFiles {
		m.smallFiles.WithLabelValues(table).Set(n)
	}
}

// summaryMetrics are the keys of a job's summary the metrics read:
// rows_written and bytes_out (counted per job), kafka_lag (an ingest's
// unread records by partition: sluice_kafka_lag_records) and small_files
// (by table, the files of its current version under a quarter of its
// target size: sluice_table_small_files).
type summaryMetrics struct {
	RowsWritten *float64           `json:"rows_written"`
	BytesOut    *float64           `json:"bytes_out"`
	KafkaLag    map[string]float64 `json:"kafka_lag"`
	SmallFiles  map[string]float64 `json:"small_files"`
}
