// Package emptiness removes nodes that run no workload: once a pool's node
// has had only DaemonSet pods for consolidateAfter, and the pool's
// disruption budgets allow it, its NodeClaim is deleted and the termination
// controller drains and terminates it. Nodes with a do-not-disrupt
// annotation, or with pods nominated onto them, are kept. (Moving pods to
// pack nodes tighter is consolidation, a later controller.)
//
// It imports controller-runtime and only gathers and acts: the decision is
// pkg/lifecycle.EmptinessVerdict, which the simulator runs too.
package emptiness
