// Package kubesnapshot reads a cluster into a whatif.Snapshot: pods, nodes,
// NodeClaims, NodePools, EC2NodeClasses, DaemonSets and
// PodDisruptionBudgets, the lists the controller's decisions read
// (pkg/controllers/state), listed once through a controller-runtime client.
// It is what `nodesmith snapshot`, `plan --from-cluster` and `explain`
// without --snapshot run.
//
// A cluster without Nodesmith's CRDs (one that runs Karpenter, say) is read
// all the same: the missing kinds are empty and reported.
//
// It imports controller-runtime and client-go (it is a shell, not a
// decision package); it must not import the AWS SDK.
package kubesnapshot
