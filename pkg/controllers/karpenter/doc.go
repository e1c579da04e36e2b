// Package karpenter watches for Karpenter in the same cluster. Two
// provisioners that both see the same pending pods both launch nodes for
// them; a cut-over from Karpenter is safe once every Karpenter NodePool is
// out of room (limits cpu: 0, docs/migrate-from-karpenter.md). The
// Coexistence singleton lists Karpenter's NodePools (karpenter.sh, read
// only, through the API server, not a cache) at start and every few
// minutes after, decides with the pure convert.KarpenterPoolRoom which
// still have room, and for each one logs at error level, publishes a
// Warning Event on it and counts it in nodesmith_karpenter_nodepools_with_room.
// No Karpenter CRD: nothing to say, the gauge is 0.
//
// It does not stop Nodesmith: a team may run both on purpose, with
// NodePools that select disjoint pods (taints and tolerations).
package karpenter
