// Package simulator replays a scenario in virtual time through Nodesmith's
// own decision code.
//
// A discrete-event loop advances a fake clock from event to event (ordered
// by time, then by insertion, so a run is deterministic). At each step the
// simulated AWS (pkg/fakeaws) is ticked, then the event runs. The simulator
// plays the parts of the cluster that are not Nodesmith: kube-scheduler and
// the kubelet (binding pods to Ready nodes, starting them), the ReplicaSet,
// Job and KEDA controllers, and the SQS consumers. Everything Nodesmith
// decides comes from the product's packages: the batching window
// (pkg/provisioning/batcher), the provisioner's gather, NodeClaim
// construction and timings (pkg/provisioning: PendingPods, BuildInput over a
// Snapshot of the simulated cluster, NewNodeClaim), the solver
// (pkg/scheduling), launches through
// the AWS CloudProvider (pkg/providers/aws) talking to the simulated AWS over
// HTTP with the real SDK, and the NodeClaim lifecycle, emptiness and budget
// rules (pkg/lifecycle, the emptiness decision whole in EmptinessVerdict).
// If the simulator and the controller would decide
// differently, the seam between them is wrong, not the simulator.
//
// Subpackages: scenario (the file format), keda (the KEDA scaling model) and
// output (CSV, chart, report).
package simulator
