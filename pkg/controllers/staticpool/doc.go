// Package staticpool keeps each static NodePool (spec.replicas set) at its
// replica count: it gathers the pool's NodeClaims and the pods on their
// nodes, asks provisioning.StaticPlan what to do, and carries it out —
// NodeClaims made from provisioning.StaticClaim (the nodeclaim controller
// launches them), or the least disruptive claims deleted (the termination
// controller drains them, honouring PodDisruptionBudgets) — and writes the
// pool's ReplicasSatisfied condition, with a Warning Event when limits.nodes
// holds the pool below its replicas.
//
// Drift, expiry and interruptions of static nodes are not here: the
// disruption executor replaces them like any node, with a static claim.
//
// It imports controller-runtime; the rules are pkg/provisioning's.
package staticpool
