package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool says what capacity Nodesmith may launch for pending pods, how much
// of it, and how it may be disrupted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=np,categories=nodesmith
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="NodeClass",type=string,JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=".status.nodes"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=".spec.weight"
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=".status.resources.cpu",description="CPU launched by this pool"
// +kubebuilder:printcolumn:name="CPU Limit",type=string,JSONPath=".spec.limits.cpu"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePoolSpec `json:"spec"`
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolSpec is the desired shape of a pool's nodes.
//
// A static pool (replicas set) keeps a fixed number of nodes; its only limit
// is nodes and it has no weight, as in Karpenter v1.8.
//
// +kubebuilder:validation:XValidation:message="replicas cannot be added to or removed from an existing NodePool: a pool is static (replicas set) or dynamic for its whole life; create a new NodePool instead",rule="has(self.replicas) == has(oldSelf.replicas)"
// +kubebuilder:validation:XValidation:message="a static NodePool (replicas set) may only limit nodes: remove cpu, memory and every other limit but nodes",rule="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')"
// +kubebuilder:validation:XValidation:message="a static NodePool (replicas set) has no weight: no pending pod chooses it, so remove weight",rule="!has(self.replicas) || !has(self.weight)"
type NodePoolSpec struct {
	// Replicas makes the pool static: it keeps exactly this many nodes,
	// whatever the pods, launched from its template. Pending pods never
	// launch nodes in a static pool (kube-scheduler still places pods on
	// its nodes), consolidation never removes them, drift and expiry
	// replace them (drift one node at a time, the replacement ready
	// before the old node drains), and lowering replicas removes the
	// least disruptive nodes first, whatever the disruption budgets say
	// (PodDisruptionBudgets still pace the drain). limits.nodes caps the
	// pool's nodes, replacements included: set it above replicas to leave
	// room for a replacement. Once set it cannot be removed, nor added to
	// a dynamic pool. kubectl scale nodepool works on it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`

	// Template is the shape of every NodeClaim the pool launches.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption says when and how fast the pool's nodes may be removed or replaced.
	// +kubebuilder:default={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption,omitempty"`
	// Limits cap what the pool may have in total: the capacity of its nodes
	// and in-flight NodeClaims in every resource named (cpu, memory, pods,
	// ephemeral-storage, extended resources such as nvidia.com/gpu, asked
	// for by a pending pod or not), and their number ("nodes"). A claim is
	// not launched when its instance type's capacity would take the pool
	// past any of them.
	// At most 20 resources: the bound keeps the rule below the API server's
	// CEL cost budget, which counts every value at the largest size a
	// request could carry.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:message="limits must not be negative",messageExpression="'limits must not be negative; got a negative ' + self.filter(k, string(self[k]).startsWith('-'))[0]",rule="self.all(k, !string(self[k]).startsWith('-'))"
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders pools: higher weights are tried first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// OptionPriceCeilingPercent bounds the launch options of every NodeClaim
	// the pool plans: offerings priced above this percentage of the claim's
	// cheapest option are left out (default 200, twice its price). EC2's
	// price-capacity-optimized strategy may launch any listed option, so this
	// bounds what a launch can cost. The list goes past the ceiling only as
	// far as the pool's spot-option floor (15 options) and its requirements'
	// minValues need. 100 keeps only the cheapest price.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=10000
	// +optional
	OptionPriceCeilingPercent *int32 `json:"optionPriceCeilingPercent,omitempty"`
}

// Limits is a resource list that may also cap the number of nodes.
type Limits corev1.ResourceList

// ResourceNodes is the limit key that counts nodes.
const ResourceNodes corev1.ResourceName = "nodes"

// NodeClaimTemplate is the template a pool's NodeClaims are made from.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta NodeClaimTemplateObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// NodeClaimTemplateObjectMeta carries the labels and annotations given to nodes.
type NodeClaimTemplateObjectMeta struct {
	// Labels put on every node of the pool. Keys in the kubernetes.io and
	// k8s.io domains are refused, as Karpenter refuses them, but for the
	// well-known labels and the node.kubernetes.io, kubelet.kubernetes.io,
	// node-restriction.kubernetes.io and kops.k8s.io domains.
	// +kubebuilder:validation:XValidation:message="labels may not use restricted keys: kubernetes.io/hostname and nodesmith.sh/nodepool, nodeclaim, registered, initialized are set by the system",rule="self.all(k, !(k in ['kubernetes.io/hostname','nodesmith.sh/nodepool','nodesmith.sh/nodeclaim','nodesmith.sh/registered','nodesmith.sh/initialized']))"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?(kubernetes|k8s)[.]io/') || k in ['kubernetes.io/arch','kubernetes.io/os','beta.kubernetes.io/arch','beta.kubernetes.io/os','beta.kubernetes.io/instance-type','topology.kubernetes.io/zone','topology.kubernetes.io/region','failure-domain.beta.kubernetes.io/zone','failure-domain.beta.kubernetes.io/region'] || k.matches('^([^/]*[.])?((node|kubelet|node-restriction)[.]kubernetes|kops[.]k8s)[.]io/'))",messageExpression="'label ' + self.filter(k, !(!k.matches('^([^/]*[.])?(kubernetes|k8s)[.]io/') || k in ['kubernetes.io/arch','kubernetes.io/os','beta.kubernetes.io/arch','beta.kubernetes.io/os','beta.kubernetes.io/instance-type','topology.kubernetes.io/zone','topology.kubernetes.io/region','failure-domain.beta.kubernetes.io/zone','failure-domain.beta.kubernetes.io/region'] || k.matches('^([^/]*[.])?((node|kubelet|node-restriction)[.]kubernetes|kops[.]k8s)[.]io/')))[0] + ' is in a domain Kubernetes reserves (kubernetes.io, k8s.io): only the well-known labels and the node.kubernetes.io, kubelet.kubernetes.io, node-restriction.kubernetes.io and kops.k8s.io domains may be set'"
	// +kubebuilder:validation:MaxProperties=100
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations put on every node of the pool.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is a NodeClaim spec without resource requests: those
// come from the pods each claim is made for.
type NodeClaimTemplateSpec struct {
	// Requirements narrow the instance types, zones and capacity types the pool may launch.
	// +kubebuilder:validation:MaxItems=100
	// The restricted keys are set per node by the system; a pool that asked
	// for them could never launch anything. (NodeClaims may carry them: the
	// provisioner writes its own claims.)
	// +kubebuilder:validation:XValidation:message="requirements may not use restricted label keys: kubernetes.io/hostname and nodesmith.sh/nodepool, nodeclaim, registered and initialized are set by the system",rule="self.all(r, !(r.key in ['kubernetes.io/hostname','nodesmith.sh/nodepool','nodesmith.sh/nodeclaim','nodesmith.sh/registered','nodesmith.sh/initialized']))"
	// +listType=atomic
	// +optional
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	// Taints put on every node of the pool.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are expected to be removed by another controller once the node is ready for work.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// NodeClassRef names the provider's node class (e.g. an EC2NodeClass).
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// ExpireAfter is the longest a node lives before it is replaced, or Never.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="expireAfter must be a duration in whole hours, minutes or seconds (720h, 90m, 1h30m) or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:Type=string
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
	// TerminationGracePeriod is the longest a draining node waits for its pods
	// (PDBs and do-not-disrupt included) before they are deleted.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="terminationGracePeriod must be a duration in whole hours, minutes or seconds (30s, 10m, 1h)",rule="self.matches('^([0-9]+(s|m|h))+$')"
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// MaxSpotInterruptionRisk caps the interruption risk of the spot
	// offerings the pool launches, in percent of instances interrupted per
	// month. An offering's risk is its instance type's Spot Instance Advisor
	// range, rated 2.5 (<5%), 7.5 (5-10%), 12.5 (10-15%), 17.5 (15-20%) or
	// 25 (>20%; 12.5 when the advisor has no entry), plus 10 for every spot
	// interruption of that type in that zone seen by the interruption handler,
	// halving every 2 hours. Offerings above the ceiling are not launched;
	// 10 keeps the two lowest ranges, 20 drops only >20%. Unset: no ceiling.
	// Either way spot offerings are ordered by price × (1 + risk/25).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxSpotInterruptionRisk *int32 `json:"maxSpotInterruptionRisk,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized
type ConsolidationPolicy string

const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
)

// Disruption configures consolidation and the budgets that pace every voluntary disruption.
type Disruption struct {
	// ConsolidationPolicy is WhenEmpty or WhenEmptyOrUnderutilized.
	// +kubebuilder:default=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long a node must see no pod arrive or leave
	// before it may be consolidated, or Never.
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="consolidateAfter must be a duration in whole hours, minutes or seconds (0s, 30s, 5m, 1h) or Never",rule="self.matches('^(([0-9]+(s|m|h))+|Never)$')"
	// +kubebuilder:validation:Type=string
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitzero"`
	// Budgets cap how many nodes may be disrupted at once; the most restrictive active budget wins.
	// +kubebuilder:default={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
	// ReturnToSpot says whether a node that launched on-demand only because
	// spot had no capacity (a spot fallback, recorded on its NodeClaim) is
	// replaced by spot once the spot offerings are back and cheaper by the
	// planner's minimum savings share. Enabled (the default) or Disabled.
	// Returns count against the budgets under the reason ReturnToSpot.
	// +kubebuilder:default=Enabled
	// +optional
	ReturnToSpot ReturnToSpotPolicy `json:"returnToSpot,omitempty"`
}

// ReturnToSpotPolicy is Enabled or Disabled.
// +kubebuilder:validation:Enum=Enabled;Disabled
type ReturnToSpotPolicy string

const (
	ReturnToSpotEnabled  ReturnToSpotPolicy = "Enabled"
	ReturnToSpotDisabled ReturnToSpotPolicy = "Disabled"
)

// ReturnsToSpot reports whether the pool's spot-fallback nodes go back to
// spot: Enabled, or unset (objects built without the API server's defaults).
func (d Disruption) ReturnsToSpot() bool { return d.ReturnToSpot != ReturnToSpotDisabled }

// DisruptionReason is why a node is disrupted.
// +kubebuilder:validation:Enum=Empty;Underutilized;Drifted;Expired;Rebalance;ReturnToSpot
type DisruptionReason string

const (
	// DisruptionReasonEmpty: the node runs no workload pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonUnderutilized: its pods fit elsewhere, or on a cheaper node.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonDrifted: it no longer matches its NodePool or node class.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
	// DisruptionReasonExpired: it has lived longer than its expireAfter.
	DisruptionReasonExpired DisruptionReason = "Expired"
	// DisruptionReasonRebalance: draining a spot node after a rebalance
	// recommendation (interruption handler in drain mode), once its
	// replacement is ready.
	DisruptionReasonRebalance DisruptionReason = "Rebalance"
	// DisruptionReasonReturnToSpot: it runs on-demand only because spot had
	// no capacity at launch, and spot is back and cheaper.
	DisruptionReasonReturnToSpot DisruptionReason = "ReturnToSpot"
)

// DisruptionReasonInterrupted is the reason of the disruption executor's
// commands for nodes an interruption notice marked (a spot interruption
// warning, a scheduled change, an instance stopping). It is no budget
// reason: an interruption is forceful, no budget holds it, and it still
// uses up the pool's allowance for the other reasons while it drains.
const DisruptionReasonInterrupted DisruptionReason = "Interrupted"

// DisruptionReasonUnhealthy is the reason of node repair (the NodeRepair
// feature gate): a node condition — Ready, or one a node monitoring agent
// sets — has been unhealthy for longer than its toleration. It is no
// budget reason: repair is forceful, as in Karpenter, and still uses up
// the pool's allowance for the other reasons while the node goes.
const DisruptionReasonUnhealthy DisruptionReason = "Unhealthy"

// DisruptionReasons are the reasons budgets hold, in the order disruption
// considers them. Expired is not one: expiry is forceful, as in Karpenter
// v1 (an expired node goes whatever the budgets say, and still uses up
// their allowance while it drains); Rebalance is held by budgets only in
// the interruption handler's drain mode.
var DisruptionReasons = []DisruptionReason{
	DisruptionReasonEmpty, DisruptionReasonDrifted, DisruptionReasonReturnToSpot, DisruptionReasonUnderutilized,
}

// Budget caps voluntary disruptions, optionally only during a cron window and only for some reasons.
//
// +kubebuilder:validation:XValidation:message="schedule and duration must be set together",rule="has(self.schedule) == has(self.duration)"
type Budget struct {
	// Nodes is a count ("5") or a percentage of the pool's nodes ("10%", rounded up). The pool's
	// nodes are its initialized ones (not replacements still launching); those being deleted or
	// marked for disruption, and those not Ready, use up the allowance.
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:message="nodes must be a whole number (\"5\") or a percentage from 0% to 100% (\"10%\")",rule="self.matches('^((100|[0-9]{1,2})%|[0-9]+)$')"
	// +optional
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC) for when the budget starts to apply; @daily and friends work too.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:message="schedule must be a cron expression of five fields, minute hour day-of-month month day-of-week (\"0 9 * * mon-fri\"), or one of @yearly, @monthly, @weekly, @daily, @hourly",rule="self.matches('^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|[^ ]+ [^ ]+ [^ ]+ [^ ]+ [^ ]+)$')"
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget applies after each scheduled start.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:message="duration must be whole hours and/or minutes (8h, 30m, 1h30m)",rule="self.matches('^([0-9]+h)?([0-9]+m)?(0s)?$') && self != '' && self != '0s'"
	// +kubebuilder:validation:Type=string
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Reasons the budget applies to; empty means every reason. Expired is refused: expiry is
	// forceful and no budget holds it.
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	// +kubebuilder:validation:XValidation:message="Expired is not a budget reason: expiry is forceful, as in Karpenter v1, and no budget holds it (an expired node still uses up the other reasons' allowance while it drains)",rule="!self.exists(r, r == 'Expired')"
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
}

// NodePoolStatus is what the pool has launched.
type NodePoolStatus struct {
	// Resources is the capacity of every node the pool has launched.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of the pool's nodes.
	// +optional
	Nodes int64 `json:"nodes"`
	// Conditions: Ready, ValidationSucceeded, NodeClassReady, and
	// ReplicasSatisfied on a static pool.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool condition types.
const (
	ConditionReady               = "Ready"
	ConditionValidationSucceeded = "ValidationSucceeded"
	ConditionNodeClassReady      = "NodeClassReady"
	// ConditionReplicasSatisfied, on a static pool: True when it has
	// spec.replicas nodes; False while it scales, or when limits.nodes
	// holds it below replicas (reason NodeLimitExceeded).
	ConditionReplicasSatisfied = "ReplicasSatisfied"
	// ConditionCloudAccountReady is False while one of the pool's claims
	// failed to launch for a one-time setup step the cloud account lacks
	// (ReasonSpotServiceLinkedRoleMissing); its message names the fix. It
	// does not take part in Ready: the pool's other launches may still work.
	ConditionCloudAccountReady = "CloudAccountReady"
)

// IsStatic reports whether the pool keeps a fixed number of nodes
// (spec.replicas set).
func (np *NodePool) IsStatic() bool { return np.Spec.Replicas != nil }

// ReasonSpotServiceLinkedRoleMissing is the reason of a NodeClaim's Launched
// condition, of its Warning event and of its pool's CloudAccountReady
// condition when EC2 refused a spot launch for want of the account's Spot
// service-linked role (AuthFailure.ServiceLinkedRoleCreationNotPermitted).
const ReasonSpotServiceLinkedRoleMissing = "SpotServiceLinkedRoleMissing"

// IsAccountSetupReason reports whether a Launched reason names a setup step
// the cloud account lacks.
func IsAccountSetupReason(reason string) bool { return reason == ReasonSpotServiceLinkedRoleMissing }

// +kubebuilder:object:root=true

// NodePoolList is a list of NodePools.
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
