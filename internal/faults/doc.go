// Package faults injects the faults a long-running sluice meets into the
// real parts tests run against: a cloud.Store wrapper (Store), an
// http.RoundTripper wrapper for the S3 and Azure SDK clients (Transport),
// an HTTP reverse proxy in front of a real server for a child process
// (Proxy), and a TCP proxy that cuts every connection for a while, as a
// broker restart does (TCPProxy).
//
// Every fault is decided by an Injector from its seed and per-kind rates:
// the decision for the n-th call of one operation on one key is a hash of
// (seed, kind, operation, key, n), so a run with the same seed makes the
// same decisions for the same calls whatever order concurrent calls come
// in. Counts reports how many faults of each kind were injected.
//
// Nothing here fakes a store: what a fault lets through reaches the real
// store or server and is applied there, and the ambiguous faults
// (TimeoutAfter) apply the write first and lose its answer.
package faults
