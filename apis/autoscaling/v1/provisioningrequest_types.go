package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisioningRequest asks for room for a set of pods that do not exist
// yet: whether it is there now (check-capacity), or to launch it for all of
// them or none (best-effort-atomic-scale-up). The pods themselves are
// created by whoever wrote the request (Kueue, a user) once it is
// Provisioned, and carry the annotation AnnotationConsumeRequest naming it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=provisioningrequests,scope=Namespaced,shortName={provreq,provreqs}
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=".spec.provisioningClassName"
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=".status.conditions[?(@.type==\"Accepted\")].status"
// +kubebuilder:printcolumn:name="Provisioned",type=string,JSONPath=".status.conditions[?(@.type==\"Provisioned\")].status"
// +kubebuilder:printcolumn:name="Failed",type=string,JSONPath=".status.conditions[?(@.type==\"Failed\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type ProvisioningRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ProvisioningRequestSpec `json:"spec"`
	// +optional
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestList is a list of ProvisioningRequests.
//
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProvisioningRequest `json:"items"`
}

// ProvisioningRequestSpec is what is asked; all of it is immutable.
type ProvisioningRequestSpec struct {
	// PodSets are the pods asked for: each a PodTemplate in the request's
	// namespace and how many pods of it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +required
	PodSets []PodSet `json:"podSets"`

	// ProvisioningClassName says how the request is served:
	// check-capacity.autoscaling.x-k8s.io or
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io for Nodesmith.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +required
	ProvisioningClassName string `json:"provisioningClassName"`

	// Parameters are the class's settings. Nodesmith reads none and says
	// so in the Accepted condition's message when there are some.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +optional
	Parameters map[string]Parameter `json:"parameters"`
}

// Parameter is one class setting.
// +kubebuilder:validation:MaxLength=255
type Parameter string

// PodSet is Count pods of one PodTemplate.
type PodSet struct {
	// PodTemplateRef names a PodTemplate in the request's namespace.
	// +required
	PodTemplateRef Reference `json:"podTemplateRef"`
	// Count is how many pods of the template.
	// +kubebuilder:validation:Minimum=1
	// +required
	Count int32 `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	// Name of the object.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name,omitempty"`
}

// ProvisioningRequestStatus is how the request went.
type ProvisioningRequestStatus struct {
	// Conditions: Accepted, Provisioned, Failed, BookingExpired,
	// CapacityRevoked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ProvisioningClassDetails are the class's outputs. Nodesmith writes
	// the names of the NodeClaims it launched for an atomic request under
	// DetailNodeClaims.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails,omitempty"`
}

// Detail is one class output.
// +kubebuilder:validation:MaxLength=32768
type Detail string

// The classes Nodesmith serves.
const (
	// ClassCheckCapacity asks whether the pods fit on the room there is
	// now, launching nothing.
	ClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ClassAtomicScaleUp asks for room for all the pods or none.
	ClassAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
)

// The condition types, as upstream names them.
const (
	// ConditionAccepted: the request is one a provisioner serves.
	ConditionAccepted = "Accepted"
	// ConditionProvisioned: the room is there (and booked) for the pods.
	ConditionProvisioned = "Provisioned"
	// ConditionFailed: the request could not be served; final.
	ConditionFailed = "Failed"
	// ConditionBookingExpired: the booking window passed; the room is no
	// longer kept for the pods.
	ConditionBookingExpired = "BookingExpired"
	// ConditionCapacityRevoked: room that was provisioned went away before
	// the pods used it.
	ConditionCapacityRevoked = "CapacityRevoked"
)

const (
	// AnnotationConsumeRequest on a pod names the ProvisioningRequest (in
	// the pod's namespace) whose room it is to take, as Cluster
	// Autoscaler reads it.
	AnnotationConsumeRequest = "autoscaling.x-k8s.io/consume-provisioning-request"
	// DetailNodeClaims is the status detail listing the NodeClaims of an
	// atomic request (comma-separated), so the set can be found and rolled
	// back.
	DetailNodeClaims = "nodesmith.sh/nodeclaims"
)
