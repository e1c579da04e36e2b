// Package interruption decides what the interruption handler does with a
// node whose instance AWS is about to take away, as pure functions over
// plain values and a time:
//
//   - mode.go: the rebalance setting (off, prespin, drain).
//   - mark.go: what a parsed notice (pkg/interruption/messages) means for
//     the instance's NodeClaim: the Disrupting reason it gets (the
//     strongest notice wins), the deadline (the earliest wins), or deletion
//     at once for an instance already stopped or terminated; MarkOf, the
//     one reader of the mark as kept on the claim.
//   - verdict.go: when a marked claim in a disruption command is deleted
//     — and so tainted and drained through the Eviction API by the
//     termination controller: as soon as the command's replacements have
//     initialized, or when the deadline minus the longest pod grace period
//     arrives, whichever is first; a rebalance recommendation in prespin
//     mode holds (Holds) until a notice with a deadline follows, in drain
//     mode it goes once the replacements are ready (its budget was taken
//     when the command started).
//
// The interruption controller (pkg/controllers/interruption) marks claims;
// the disruption planner (pkg/disruption) plans their commands and the
// executor (pkg/controllers/disruptor) carries them out, calling Decide;
// the simulator reads the same marks.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK.
package interruption
