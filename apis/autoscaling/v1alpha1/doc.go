// Package v1alpha1 holds the CapacityBuffer API of SIG Autoscaling
// (autoscaling.x-k8s.io/v1alpha1), the one Cluster Autoscaler and Karpenter
// read: our own Go types with the upstream schema, group and version, so a
// CapacityBuffer written for Cluster Autoscaler applies unchanged.
//
// One Nodesmith extension rides on an annotation, so the schema stays the
// upstream one: nodesmith.sh/buffer-sizing: auto sizes the buffer from the
// last hour's pod arrivals (see AnnotationSizing).
//
// This package imports only k8s.io/api and k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1alpha1
