package ingest

import "time"

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
