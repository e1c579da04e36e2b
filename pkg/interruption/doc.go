// Package interruption decides what the interruption handler does with a
// node whose instance AWS is about to take away, as pure functions over
// plain values and a time:
//
//   - mode.go: the rebalance setting (off, prespin, drain).
//   - mark.go: what a parsed notice (pkg/interruption/messages) means for
//     the instance's NodeClaim: the Disrupting reason it gets (the
//     strongest notice wins), the deadline (the earliest wins), or deletion
//     at once for an instance already stopped or terminated.
//   - verdict.go: when a Disrupting claim is deleted — and so tainted and
//     drained through the Eviction API by the termination controller: as
//     soon as every pod the drain will move has a ready place to go (the
//     replacement the provisioner planned, or room elsewhere), or when the
//     deadline minus the longest pod grace period arrives, whichever is
//     first; for a rebalance recommendation only in drain mode, only with a
//     ready replacement and only when the NodePool's budget allows.
//
// The controller in pkg/controllers/interruption gathers the inputs (the
// claim, its pods, the provisioner's nominations) and carries the verdict
// out; the simulator can call the same functions.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK.
package interruption
