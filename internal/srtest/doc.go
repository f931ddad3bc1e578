// Package srtest runs an in-process Confluent Schema Registry for tests.
//
// Start serves a new, empty registry over HTTP (or HTTPS with Options.TLS)
// on 127.0.0.1 until the test ends. It speaks the documented Schema
// Registry REST API that franz-go's sr client uses: registering schemas
// under subjects (Avro, Protobuf and JSON Schema, with references), reading
// them back by global id or by subject and version, looking a schema up in
// a subject, soft and hard subject deletion, compatibility configuration
// and compatibility checks. The registry assigns its own ids: they start at
// 1, grow globally, and the same schema registered again, under the same or
// another subject, keeps its id.
//
// Compatibility is checked honestly for Avro (record fields, defaults,
// type promotions, unions, enums, arrays, maps and fixed types, at every
// BACKWARD, FORWARD and FULL level, transitive or not); Protobuf and JSON
// Schema changes are always accepted. Registering an Avro schema that breaks
// the subject's compatibility level fails with 409, as the real registry
// does. A schema is answered with the text it was first registered with
// (the real registry answers Avro in its canonical form), and the Avro
// checks do not follow aliases.
//
// Requests counts the requests each URL path got, so a test can assert how
// often a client reached the registry.
//
// Options can require HTTP basic auth, a bearer token, or both (either is
// then accepted); requests without valid credentials get 401. Errors are
// always JSON of the form {"error_code": N, "message": "..."}, which the sr
// client decodes into *sr.ResponseError.
//
// The package is test support: import it only from _test.go files.
package srtest
