// Package scheduling is Nodesmith's solver: pending pods, existing nodes,
// NodePools, DaemonSets and the instance catalog in; a Plan out — pod →
// existing node nominations, new NodeClaims with their pods and a
// price-ordered list of launch options, and a reason for every pod that
// cannot be placed.
//
// It owns the requirements algebra (Requirement, Requirements: In, NotIn,
// Exists, DoesNotExist, Gt, Lt, Gte, Lte, minValues; intersection and
// compatibility) that the controller, the AWS provider and the consolidator
// reuse, and the bin-packing solver (Solve).
//
// It must not import client-go clients, controller-runtime or the AWS SDK:
// it is pure. k8s.io/api, k8s.io/apimachinery and k8s.io/component-helpers
// (node affinity and taint/toleration matching) are its only Kubernetes
// dependencies.
//
// The algorithm is described in detail below the package clause in
// algorithm.go's comment.
package scheduling
