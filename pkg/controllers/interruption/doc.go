// Package interruption is the interruption handler: it reads the SQS queue
// that EventBridge fills with EC2 spot interruption warnings, interruptible
// capacity reservation interruption warnings, rebalance recommendations,
// instance state changes and AWS Health scheduled changes, and turns each
// notice into a mark on the node's NodeClaim that the one
// disruption executor carries out as a calm move of its pods.
//
//   - queue.go, controller.go: Queue, an operator.Singleton. One step long
//     polls the queue (20 s by default, 0 for a stepped clock), takes up to
//     10 messages, parses them (pkg/interruption/messages), handles the
//     instances they name with bounded parallelism (one worker per
//     instance, so notices about one instance apply in order) and deletes
//     each message once its action is written to the API server. A message
//     whose action failed stays on the queue and comes back after the
//     visibility timeout (at-least-once; every action is idempotent).
//     Malformed and irrelevant messages are counted and deleted. A missing
//     queue or denied access is reported (health.go) and retried with
//     backoff; it never stops the controller.
//   - notice.go: what one notice does to a NodeClaim (pkg/interruption
//     decides): mark it Disrupting with the reason, deadline and time of
//     receipt (annotations), taint its node, ICE-mark and remember the spot
//     pool of an interruption, and wake the disruption executor
//     (pkg/controllers/disruptor), which plans the node's command at once
//     — replacements launched, the claim deleted once they have initialized
//     or when the deadline minus the pods' grace periods arrives
//     (interruption.Decide); or, for an instance already stopped or
//     terminated, delete the claim and Node.
//   - disrupted.go: Disrupted, an operator.Controller over marked claims
//     that only observes: it keeps their nodes tainted (a node may register
//     after the notice), wakes the executor again once the cache shows a
//     mark, and measures the notice-to-replacement (the executor's command
//     started) and notice-to-drained latencies. It deletes nothing.
//
// Everything a later step needs is kept on the objects (condition,
// annotations), so a restart loses nothing. Time comes from the injected
// clock; no step sleeps.
package interruption
