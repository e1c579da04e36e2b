// Package termination takes a deleted NodeClaim (or a deleted Node, whose
// claim it deletes) down safely: it taints the node nodesmith.sh/disrupted,
// evicts its pods through the Eviction API in drain tiers (PDBs respected;
// do-not-disrupt pods wait), deletes whatever is left once the
// terminationGracePeriod runs out, terminates the instance, waits until the
// cloud says it is gone, and only then removes the finalizers of the Node and
// the claim.
//
// The rules (tiers, do-not-disrupt, deadlines) are pkg/lifecycle's. This
// package imports controller-runtime and the cloudprovider contract.
package termination
