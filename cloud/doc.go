// Package cloud owns sluice's object stores: one small Store interface and
// its three implementations — local disk (the embedded default), S3 and
// Azure Blob / ADLS Gen2 — plus the location URLs that name them, the
// retry policy of each cloud SDK, the mapping of every service's errors
// onto a handful of sentinels, and the two conditional writes the commit
// protocol is built on: create-only (PutOptions.IfAbsent) and
// compare-and-swap (PutOptions.IfMatch).
//
// Contracts every store keeps, checked by one conformance suite run against
// local disk, an in-process S3 server and Azurite alike:
//
//   - A Put is atomic: a reader sees the old object or the new one, never
//     part of one.
//   - Of several racing create-only Puts of one key exactly one wins; the
//     others fail with ErrPreconditionFailed.
//   - A conditional Put whose outcome is ambiguous (a timeout, or a retry
//     answered 412 because its first attempt already landed) is resolved
//     by reading the object back and comparing bytes, never guessed; what
//     reading back cannot settle fails with ErrOutcomeUnknown, which no
//     caller may take for "not written".
//   - Errors wrap the sentinels (ErrNotFound, ErrPreconditionFailed,
//     ErrOutcomeUnknown, ErrPermission, ErrUnsupportedURL, ErrInvalidKey,
//     and on local disk ErrOutsideRoot) and are one line
//     naming the object's URL and the cause. They never carry secrets.
//
// Retries of transient failures (throttling, 5xx, timeouts) are the SDKs'
// own capped exponential backoff with jitter, configured here; this
// package never hand-writes a retry loop on top of one.
//
// cloud imports nothing of ours: every other package may import it, and it
// must stay that way. It knows nothing of tables, manifests or jobs.
package cloud
