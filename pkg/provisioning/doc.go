// Package provisioning holds the provisioner's gather and act rules as pure
// functions, so the controller (pkg/controllers/provisioner) and the
// simulator (pkg/simulator) run the same code: which pods a cycle plans
// (PendingPods, including when a nomination stops holding a pod back), the
// solver's input built from one cluster Snapshot (BuildInput: existing
// nodes, in-flight claims as nodes, pools with their usage), the NodeClaim a
// planned claim becomes (NewNodeClaim), and the provisioner's default
// timings (defaults.go). It also holds the rules of the other ways room is
// asked for: static pools (static.go), capacity buffers (buffer.go) and
// ProvisioningRequests (provreq.go: check-capacity, the all-or-nothing
// atomic plan, how its launch ends, the booking).
//
// The batching window lives in the subpackage batcher.
//
// This package must not import client-go clients, controller-runtime or the
// AWS SDK: callers fetch instance types and objects and pass them in.
package provisioning
