package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is one node Nodesmith has decided to launch: what it must satisfy
// (spec, immutable once created) and the instance and Node that back it (status).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nc,categories=nodesmith
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=".status.instanceType"
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=".status.capacityType"
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=".status.zone"
// +kubebuilder:printcolumn:name="Price",type=string,JSONPath=".status.price",description="USD per hour at launch"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type=string,JSONPath=".metadata.labels.nodesmith\\.sh/nodepool",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: delete the NodeClaim and let Nodesmith launch a new one"
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimSpec is what the launched node must satisfy.
type NodeClaimSpec struct {
	// Requirements the instance type, zone and capacity type must meet; the
	// provisioner narrows them to the options it planned.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +optional
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	// Resources the node must offer at least.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// Taints put on the node.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are expected to be removed by another controller once the node is ready for work.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// NodeClassRef names the provider's node class.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// ExpireAfter is the longest the node lives, or Never.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="expireAfter must be a duration in whole hours, minutes or seconds (720h, 90m, 1h30m) or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:Type=string
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
	// TerminationGracePeriod bounds how long a drain may wait.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="terminationGracePeriod must be a duration in whole hours, minutes or seconds (30s, 10m, 1h)",rule="self.matches('^([0-9]+(s|m|h))+$')"
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// MaxSpotInterruptionRisk is the pool's ceiling on the interruption risk
	// of the spot offerings this claim may launch, copied from the template.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxSpotInterruptionRisk *int32 `json:"maxSpotInterruptionRisk,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim asks for.
type ResourceRequirements struct {
	// Requests is the sum of the planned pods' requests and DaemonSet overhead.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is the instance and Node behind a claim.
type NodeClaimStatus struct {
	// ProviderID of the instance, e.g. aws:///us-east-1a/i-0123456789abcdef0.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// NodeName is the Node that registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ImageID is the machine image the instance booted.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// InstanceType launched.
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// Zone the instance runs in.
	// +optional
	Zone string `json:"zone,omitempty"`
	// CapacityType is spot or on-demand.
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
	// Price is what the instance cost in USD per hour at launch, as a
	// decimal string ("0.0342"), so kubectl shows it as written.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Price string `json:"price,omitempty"`
	// Capacity of the instance.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is what pods may use.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// LastPodEventTime is when a pod last arrived on or left the node; consolidateAfter counts from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
	// Conditions: Launched, Registered, Initialized, Ready. (A disruption in
	// progress is recorded in the nodesmith.sh/disruption-* annotations.)
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeClaim condition types.
const (
	ConditionLaunched       = "Launched"
	ConditionRegistered     = "Registered"
	ConditionInitialized    = "Initialized"
	ConditionDrifted        = "Drifted"
	ConditionConsolidatable = "Consolidatable"
	ConditionDisrupting     = "Disrupting"
)

// Reasons of the Disrupting condition. While a claim is Disrupting its node
// takes no new pods and the provisioner plans the node's pods elsewhere at
// once (pkg/provisioning.Disrupted), so their replacement capacity is
// launched before the node is drained.
const (
	// DisruptingReasonSpotInterruption: EC2 sent the two-minute spot
	// interruption warning for the instance.
	DisruptingReasonSpotInterruption = "SpotInterruption"
	// DisruptingReasonScheduledChange: AWS Health scheduled maintenance or
	// retirement of the instance.
	DisruptingReasonScheduledChange = "ScheduledChange"
	// DisruptingReasonInstanceStopping: the instance is stopping.
	DisruptingReasonInstanceStopping = "InstanceStopping"
	// DisruptingReasonRebalanceRecommendation: EC2 recommends moving off a
	// spot instance at elevated risk of interruption.
	DisruptingReasonRebalanceRecommendation = "RebalanceRecommendation"
	// DisruptingReasonCapacityBlockExpiring: the node runs in a Capacity
	// Block whose end is near; EC2 reclaims its instances 30 minutes
	// before the end, and the node is drained from 40 minutes before.
	DisruptingReasonCapacityBlockExpiring = "CapacityBlockExpiring"
	// DisruptingReasonCapacityReservationInterruption: the instance runs
	// in an interruptible capacity reservation whose owner reclaims the
	// capacity; EC2 terminates it at the warning's termination time (two
	// minutes after the warning).
	DisruptingReasonCapacityReservationInterruption = "CapacityReservationInterruption"
)

// +kubebuilder:object:root=true

// NodeClaimList is a list of NodeClaims.
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}
