// Package v1 holds the ProvisioningRequest API of SIG Autoscaling
// (autoscaling.x-k8s.io/v1), the one Cluster Autoscaler serves and Kueue
// writes: our own Go types with the upstream schema, group and version, so
// a ProvisioningRequest written for Cluster Autoscaler applies unchanged.
//
// Nodesmith answers two classes: check-capacity.autoscaling.x-k8s.io
// (would the pods fit on the room there is now) and
// best-effort-atomic-scale-up.autoscaling.x-k8s.io (launch room for all
// the pods or for none). A request of any other class is left alone, as
// Cluster Autoscaler leaves it, for whoever serves that class.
//
// This package imports only k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1
