package ingest

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SetKafkaReadGate holds every Kafka run, before it reads or finishes,
// until gate returns true for the partitions then assigned to it; it
// lets tests make group members join before any of them reads. The
// returned function removes the gate.
func SetKafkaReadGate(gate func(partitions []int32) bool) (restore func()) {
	old := kafkaReadGate
	kafkaReadGate = gate
	return func() { kafkaReadGate = old }
}

// SetKafkaIdleTimeout shortens how long a Kafka run waits for records it
// knows exist; the returned function restores it.
func SetKafkaIdleTimeout(d time.Duration) (restore func()) {
	old := kafkaIdleTimeout
	kafkaIdleTimeout = d
	return func() { kafkaIdleTimeout = old }
}

// KafkaFetchLimits are the client options that bound a run's fetched
// batches, for its Options with their defaults.
func KafkaFetchLimits(o Options) []kgo.Opt { return fetchLimits(o.withDefaults()) }
