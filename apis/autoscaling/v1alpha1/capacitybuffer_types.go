package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer asks for spare capacity: room for a number of copies
// ("chunks") of a pod that does not exist. Nodesmith plans these virtual
// pods like pending pods at the lowest priority: real pods take their room
// at once, the room is launched again behind them, and consolidation keeps
// it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=".status.provisioningStrategy",description="The strategy used."
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".status.replicas",description="The number of buffer chunks resolved."
// +kubebuilder:printcolumn:name="PodTemplate",type=string,JSONPath=".status.podTemplateRef.name",description="The PodTemplate used."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"ReadyForProvisioning\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ResourceName is a resource's name (cpu, memory, …).
type ResourceName string

// ScalableRef names a workload with a scale subresource in the buffer's
// namespace. Nodesmith reads Deployments, ReplicaSets and StatefulSets
// (apps) and Jobs (batch); other kinds are reported in the status.
type ScalableRef struct {
	// APIGroup of the workload; empty for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ResourceList is a set of resource quantities.
type ResourceList map[ResourceName]resource.Quantity

// ActiveCapacity is the one provisioning strategy: keep the room launched.
const ActiveCapacity = "buffer.x-k8s.io/active-capacity"

// CapacityBufferSpec is what room to keep. The rules are upstream's (a
// buffer with neither reference is accepted, as upstream accepts it, and
// keeps no room; its status says why).
//
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="a buffer with podTemplateRef needs replicas or limits: they say how many chunks to keep"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="set one of podTemplateRef and scalableRef, not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy is how the buffer is kept; Nodesmith does
	// buffer.x-k8s.io/active-capacity (the default) and reports any other
	// in the status without acting on it.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate in the buffer's namespace: the
	// shape of one chunk.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names a workload whose pod template is the chunk's shape
	// and whose replicas percentage counts from.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is how many chunks to keep. With percentage too, the larger
	// wins; with neither, as many as limits allow.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage is the number of chunks as a share of the scalableRef's
	// replicas, rounded up, at least 1. Without scalableRef it is ignored
	// (the status says so).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits cap the chunks' total requests.
	// +optional
	Limits *ResourceList `json:"limits,omitempty"`
}

// CapacityBufferStatus is what the buffer resolved to.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate the chunks were made from (unset
	// for a scalableRef, whose workload carries its own template).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of chunks resolved.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the generation of the template read.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions: ReadyForProvisioning (whether the buffer resolved to
	// chunks, with how many and why in its message).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningStrategy is the strategy in effect.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// Condition types and the Nodesmith annotations.
const (
	ConditionReadyForProvisioning = "ReadyForProvisioning"

	// AnnotationSizing "auto" (a Nodesmith extension) sizes the buffer
	// from the last hour's arrivals of the pods it is for (the
	// scalableRef's pods, or the pods matching the template's labels): the
	// 95th percentile of the arrivals in any AnnotationAutoWindow over the
	// hour, so that a burst that size lands on warm room rather than
	// waiting for a boot. replicas and percentage are then a floor and
	// limits a ceiling.
	AnnotationSizing = "nodesmith.sh/buffer-sizing"
	// AnnotationAutoWindow is the window auto sizing counts arrivals in
	// (a Go duration, default 60s: about an instance's boot).
	AnnotationAutoWindow = "nodesmith.sh/buffer-auto-window"
	// SizingAuto is AnnotationSizing's one value.
	SizingAuto = "auto"
)

// +kubebuilder:object:root=true

// CapacityBufferList is a list of CapacityBuffers.
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}
