package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// NodeOverlay changes what the solver assumes of the instance types its
// requirements select: their offerings' price (set outright with price, or
// adjusted with priceAdjustment) and extra capacity they advertise
// (extended resources such as hugepages or fractional GPUs). Per instance
// type and offering the matching overlay with the highest weight decides
// the price; see catalog.ApplyOverlays for ties and capacity merging.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// +optional
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlaySpec is what an overlay selects and changes.
//
// +kubebuilder:validation:XValidation:message="price and priceAdjustment are exclusive: set one",rule="!(has(self.price) && has(self.priceAdjustment))"
// +kubebuilder:validation:XValidation:message="an overlay must change something: set price, priceAdjustment or capacity",rule="has(self.price) || has(self.priceAdjustment) || has(self.capacity)"
type NodeOverlaySpec struct {
	// Requirements select the instance types and offerings the overlay
	// applies to, by the labels a node of them would carry (instance type,
	// family, zone, capacity type …). Empty selects every offering.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Requirements []nsv1.NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	// Price replaces the offering's price, in USD per hour ("0.125").
	// +kubebuilder:validation:XValidation:message="price must be a non-negative decimal number of dollars per hour",messageExpression="'price must be a non-negative decimal number of dollars per hour such as 0.125; got ' + self",rule="self.matches('^[0-9]+(\\\\.[0-9]+)?$')"
	// +optional
	Price *string `json:"price,omitempty"`
	// PriceAdjustment changes the offering's price: by an absolute amount
	// in USD per hour ("+0.1", "-0.05") or by a percentage ("-10%",
	// "+5%"). The result never goes below zero.
	// +kubebuilder:validation:XValidation:message="priceAdjustment must be a signed amount or percentage",messageExpression="'priceAdjustment must be a signed amount such as +0.1 or -0.05, or a percentage such as -10%; got ' + self",rule="self.matches('^[+-][0-9]+(\\\\.[0-9]+)?%?$')"
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Capacity adds extended resources to the selected types (merged with
	// what other matching overlays add; the heavier overlay wins a
	// resource both set). cpu, memory, pods and ephemeral-storage are not
	// overlayable: they come from the type itself.
	// +kubebuilder:validation:XValidation:message="capacity may only add extended resources, not cpu, memory, pods or ephemeral-storage",rule="self.all(k, !(k in ['cpu','memory','pods','ephemeral-storage']))"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that select the same offering: the highest
	// wins. Equal weights are broken by name (the alphabetically first
	// wins) and both overlays report Conflicting.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeOverlayStatus reports whether the overlay is in effect.
type NodeOverlayStatus struct {
	// Conditions: Ready (the overlay parses and is applied) and
	// Conflicting (another overlay of the same weight selects an offering
	// it selects and sets its price or a capacity it sets).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types and reasons of a NodeOverlay.
const (
	ConditionReady       = "Ready"
	ConditionConflicting = "Conflicting"
)

// +kubebuilder:object:root=true

// NodeOverlayList is a list of NodeOverlays.
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}
