// Package wire decodes records in the Confluent wire format — a magic
// byte 0, a four-byte big-endian schema id, for Protobuf the message
// indexes, then the payload — whose schemas a Schema Registry holds:
// Avro (avro.go), Protobuf (protobuf.go) and JSON Schema (jsonschema.go).
//
// It owns two mappings and nothing else: a registered schema to the
// columns of a sluice table (Schema.Columns), and one payload to a row's
// values in the Go representation internal/pqio documents (Schema.Decode).
// Fetching schemas (the registry client, its cache), checking a new
// schema against a table's, and quarantining what does not decode are the
// ingest package's. It imports internal/pqio only.
package wire
