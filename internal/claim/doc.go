// Package claim owns the store-side coordination that work spread over
// many processes needs, with nothing but an object store between them:
//
//   - create-only writes whose unknown outcome is settled by reading the
//     object back (PutOnce, PutSettled): each writer's bytes hold
//     something only it writes, so equal bytes mean its write is the one
//     that exists;
//   - whole reads with the object's ETag (Read), and of many objects a
//     bounded few at a time, in order (ReadMany);
//   - a claim of a unit of work (Claimer, Claim): an object taken
//     create-only, taken over once its holder stopped renewing it for a
//     lease (as internal/lease judges, on this process's clock), renewed
//     every third of the lease by compare-and-swap while the work runs,
//     the work cancelled as soon as a renewal finds the claim taken over.
//
// A claim only keeps two workers from doing one unit at once most of the
// time: a slow holder may still finish after a take-over, so what the
// work produces must be recorded create-only (PutOnce), the loser cleaning
// up after itself. Nothing here deletes a claim or knows what a unit is.
//
// It imports cloud and internal/lease, nothing else of sluice (and
// golang.org/x/sync/errgroup).
package claim
