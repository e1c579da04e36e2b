package scheduling

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// DefaultMaxOptionsPerClaim bounds a claim's launch options; CreateFleet
// accepts at most this many overrides worth ordering by price.
const DefaultMaxOptionsPerClaim = 60

// DefaultOptionPriceCeiling bounds a claim's launch options to twice the
// price of its cheapest one: price-capacity-optimized may launch any
// option, so a list reaching far beyond the cheapest is a promise of a
// price the plan did not reckon with.
const DefaultOptionPriceCeiling = 2.0

// DefaultMinSpotOptions is how many spot (type, zone) options a claim keeps
// when its pool offers that many: a launch with fewer is one capacity-pool
// shortage away from falling back or failing (Karpenter uses the same
// figure as its spot-to-spot minimum).
const DefaultMinSpotOptions = 15

// PreferencePolicy says whether soft constraints (preferred node affinity,
// preferred pod (anti-)affinity, ScheduleAnyway spreads) shape the plan.
type PreferencePolicy string

const (
	// PreferenceRespect treats preferences as requirements first and relaxes
	// them one at a time for pods that cannot be placed otherwise.
	PreferenceRespect PreferencePolicy = "Respect"
	// PreferenceIgnore plans with required constraints only.
	PreferenceIgnore PreferencePolicy = "Ignore"
)

// Options tune a solve. The zero value is the default.
type Options struct {
	// MaxOptionsPerClaim caps each claim's launch options (default 60).
	MaxOptionsPerClaim int
	// MinSpotOptions is the fewest spot options a claim is sized to keep
	// (default 15; never more than MaxOptionsPerClaim). Claims are capped
	// below the size that would leave fewer, unless the pool offers fewer
	// for even one of its pods.
	MinSpotOptions int
	// PreferencePolicy defaults to Respect.
	PreferencePolicy PreferencePolicy
	// OptionPriceCeiling bounds each claim's options to this multiple of
	// its cheapest option's price (default 2, at least 1), widened only as
	// far as the spot-option floor and the pool's minValues need. A
	// NodePool's own ceiling takes precedence.
	OptionPriceCeiling float64
	// ChargeExpectedLaunch charges a claim, against its pool's limits, the
	// capacity of its expected launch (ClaimCharge) instead of its largest
	// option, and gives it the options that fit the limit left at its turn
	// in plan order, minValues met among them (charge.go). Only a caller
	// whose launches keep to TrimToLimit, one claim of a limited pool at a
	// time, may set it: a claim launched larger than its charge would
	// otherwise take a later claim's room past the limit.
	ChargeExpectedLaunch bool
}

func (o Options) withDefaults() Options {
	if o.MaxOptionsPerClaim <= 0 {
		o.MaxOptionsPerClaim = DefaultMaxOptionsPerClaim
	}
	if o.MinSpotOptions <= 0 {
		o.MinSpotOptions = DefaultMinSpotOptions
	}
	o.MinSpotOptions = min(o.MinSpotOptions, o.MaxOptionsPerClaim)
	if o.PreferencePolicy == "" {
		o.PreferencePolicy = PreferenceRespect
	}
	if o.OptionPriceCeiling <= 0 {
		o.OptionPriceCeiling = DefaultOptionPriceCeiling
	}
	o.OptionPriceCeiling = max(o.OptionPriceCeiling, 1)
	return o
}

// Input is everything a solve needs, gathered by the caller beforehand: the
// solver never fetches.
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Nodes are existing nodes and in-flight NodeClaims with what runs on them.
	Nodes []*ExistingNode
	// NodePools the solver may launch from, with their instance types.
	NodePools []*NodePool
	// DaemonSets whose pods will land on every new node they tolerate and select.
	DaemonSets []*appsv1.DaemonSet
	// Commitments are the Savings Plans and Reserved Instances on-demand
	// usage is charged to (commitment.go).
	Commitments []catalog.Commitment
	Options     Options
}

// ExistingNode is a Node, or a NodeClaim that has not registered yet, with
// the pods bound or nominated to it.
type ExistingNode struct {
	Name   string
	Labels map[string]string
	// Taints that keep pods off the node. Startup taints and the
	// nodesmith.sh/unregistered taint of an in-flight claim are ignored:
	// they are removed before pods are expected to run.
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
	// Pods on the node (daemon pods included); they count for topology,
	// anti-affinity, host ports and used resources.
	Pods []*corev1.Pod
	// InFlight marks a NodeClaim that is launching or not yet registered.
	InFlight bool
	// MarkedForDeletion keeps new pods off the node while it still counts for topology.
	MarkedForDeletion bool
}

// NodePool is the solver's plain view of an apis/v1 NodePool.
type NodePool struct {
	Name   string
	Weight int32
	// Requirements narrow instance types, zones, capacity types and custom labels.
	Requirements Requirements
	// Labels go on every node of the pool.
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Limits cap the pool's total capacity (cpu, memory, nodes, …); nil means none.
	Limits corev1.ResourceList
	// Usage is the capacity the pool has already launched ("nodes" counts nodes).
	Usage corev1.ResourceList
	// OptionPriceCeiling, when positive, replaces Options.OptionPriceCeiling
	// for the pool's claims (a multiple of the cheapest option's price).
	OptionPriceCeiling float64
	// InstanceTypes the pool's node class can launch, with current
	// availability already applied to their offerings.
	InstanceTypes []*catalog.InstanceType
}

// NodePoolFromAPI builds the solver's view of a NodePool. Usage comes from
// the pool's status (launched resources plus the node count).
func NodePoolFromAPI(np *nsv1.NodePool, types []*catalog.InstanceType) *NodePool {
	out := &NodePool{
		Name:          np.Name,
		Weight:        1,
		Requirements:  FromAPI(np.Spec.Template.Spec.Requirements),
		Labels:        map[string]string{},
		Taints:        append([]corev1.Taint(nil), np.Spec.Template.Spec.Taints...),
		StartupTaints: append([]corev1.Taint(nil), np.Spec.Template.Spec.StartupTaints...),
		InstanceTypes: types,
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	if c := np.Spec.OptionPriceCeilingPercent; c != nil {
		out.OptionPriceCeiling = float64(*c) / 100
	}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		out.Labels[k] = v
	}
	if len(np.Spec.Limits) > 0 {
		out.Limits = corev1.ResourceList(np.Spec.Limits).DeepCopy()
	}
	out.Usage = np.Status.Resources.DeepCopy()
	if out.Usage == nil {
		out.Usage = corev1.ResourceList{}
	}
	out.Usage[nsv1.ResourceNodes] = *resourceQuantity(np.Status.Nodes)
	return out
}

// Plan is the result of a solve: bindings to existing capacity, claims to
// launch, and the pods that cannot be placed with why.
type Plan struct {
	Nominations   []Nomination
	NewClaims     []*ClaimPlan
	Unschedulable []PodError
}

// Nomination binds a pod to an existing node or in-flight claim.
type Nomination struct {
	Pod  *corev1.Pod
	Node string
}

// ClaimPlan is one NodeClaim to launch and the pods it is for.
type ClaimPlan struct {
	// Name is a deterministic placeholder ("claim-0001"); the controller
	// names the real NodeClaim.
	Name     string
	NodePool string
	Pods     []*corev1.Pod
	// Requirements are the pool's and pods' requirements narrowed to the
	// options: instance type, zone and capacity type In the option values.
	Requirements Requirements
	// Requests sum the pods' requests and the DaemonSet overhead of the
	// cheapest option.
	Requests corev1.ResourceList
	// Options are the launchable (type, zone, capacity type) choices that
	// fit the claim's pods, cheapest first, at most MaxOptionsPerClaim.
	Options []LaunchOption
	// Committed is the part of the cheapest option's price a commitment
	// covers (commitment.go): prepaid, so not an added cost.
	Committed     float64
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
}

// LaunchOption is one way to launch a claim.
type LaunchOption struct {
	InstanceType *catalog.InstanceType
	Zone         string
	CapacityType string
	Price        float64
	// Reservation is the capacity reservation a reserved option launches
	// into; nil for spot and on-demand.
	Reservation *catalog.ReservationRef
}

// Price is the claim's expected $/h: its cheapest option.
func (c *ClaimPlan) Price() float64 {
	if len(c.Options) == 0 {
		return 0
	}
	return c.Options[0].Price
}

// PodError says why a pod cannot be placed.
type PodError struct {
	Pod    *corev1.Pod
	Reason string
}

// Cost is the plan's expected $/h for new capacity (cheapest option per claim).
func (p *Plan) Cost() float64 {
	total := 0.0
	for _, c := range p.NewClaims {
		total += c.Price()
	}
	return total
}

// PodCount is how many pods the plan places (nominations plus claims).
func (p *Plan) PodCount() int {
	n := len(p.Nominations)
	for _, c := range p.NewClaims {
		n += len(c.Pods)
	}
	return n
}

func sortPodErrors(errs []PodError) {
	sort.SliceStable(errs, func(i, j int) bool { return podKey(errs[i].Pod) < podKey(errs[j].Pod) })
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// sortedByKey is a copy of pods in podKey order (stable), each key built
// once rather than twice per comparison: the disruption planner solves
// thousands of pods dozens of times per plan.
func sortedByKey(pods []*corev1.Pod) []*corev1.Pod {
	s := keyedPods{pods: append([]*corev1.Pod(nil), pods...), keys: make([]string, len(pods))}
	for i, p := range s.pods {
		s.keys[i] = podKey(p)
	}
	sort.Stable(s)
	return s.pods
}

type keyedPods struct {
	pods []*corev1.Pod
	keys []string
}

func (k keyedPods) Len() int           { return len(k.pods) }
func (k keyedPods) Less(i, j int) bool { return k.keys[i] < k.keys[j] }
func (k keyedPods) Swap(i, j int) {
	k.pods[i], k.pods[j] = k.pods[j], k.pods[i]
	k.keys[i], k.keys[j] = k.keys[j], k.keys[i]
}
