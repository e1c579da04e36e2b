// Package v1alpha1 holds the nodesmith.sh/v1alpha1 API: NodeOverlay (a
// price adjustment and capacity additions for the instance types a
// selector matches) and Commitment (a Savings Plan or Reserved Instance
// declared as an hourly amount already paid for).
//
// Both are cluster-scoped and alpha. Their rules live in pkg/catalog
// (ApplyOverlays, Commitments); this package imports only k8s.io/api,
// k8s.io/apimachinery and apis/v1.
//
// +kubebuilder:object:generate=true
// +groupName=nodesmith.sh
package v1alpha1
