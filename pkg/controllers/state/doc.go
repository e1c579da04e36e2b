// Package state is the controller's one view of the cluster: nodes, pods,
// NodeClaims, NodePools, DaemonSets and PodDisruptionBudgets read from the
// manager's informer cache, gathered into a Snapshot (the type is
// pkg/provisioning's, so the simulator builds the same value) that the pure
// solver and planners take as input (they never read the API server themselves).
//
// It also remembers what the API does not show yet: which pods were
// nominated onto in-flight capacity (so a second batch does not launch for
// them again before kube-scheduler binds them), and which claims are being
// launched right now by the provisioner.
//
// It imports controller-runtime's client and cache; it holds no policy.
package state
