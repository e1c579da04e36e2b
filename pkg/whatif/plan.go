package whatif

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cost"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Mode says which pods a plan places.
type Mode string

const (
	// ModeRepack plans every workload pod of the cluster onto new nodes,
	// as if the cluster were empty: what Nodesmith would run it on today.
	ModeRepack Mode = "repack"
	// ModePending plans what the provisioner would do next: the pending
	// pods, onto existing nodes and in-flight claims first.
	ModePending Mode = "pending"
)

// PlanResult is what Nodesmith would launch and what runs today.
type PlanResult struct {
	Mode Mode `json:"mode"`
	// Pods is how many pods were planned.
	Pods int `json:"pods"`
	// Plan is the solver's plan.
	Plan *scheduling.Plan `json:"-"`
	// New is the plan's new NodeClaims at their cheapest option.
	New cost.Breakdown `json:"new"`
	// Claims are the new NodeClaims one by one.
	Claims []Claim `json:"claims,omitempty"`
	// Nominated is how many pods go to existing nodes or in-flight claims.
	Nominated int `json:"nominated"`
	// Unschedulable are the pods the plan cannot place, with the solver's reason.
	Unschedulable []PodReason `json:"unschedulable,omitempty"`
	// LowerBound is a lower bound on the $/h of any set of new nodes, of the
	// pools' instance types, that holds the pods the plan puts on new nodes
	// (scheduling.PackingLowerBound).
	LowerBound float64 `json:"lowerBoundDollarsPerHour"`
	// Nodesmith is the snapshot's NodeClaims at what they cost now
	// (cost.Prices: their offering in their pool's types with the
	// NodeOverlays applied, else status.price; covered on-demand at what the
	// commitments leave): the figure of the nodesmith_cost_dollars_per_hour
	// metric.
	Nodesmith cost.Breakdown `json:"nodesmith"`
	// Other is the snapshot's other nodes, priced from the catalog by their
	// instance type, zone and capacity type labels.
	Other cost.Breakdown `json:"other"`
	// Unpriced are nodes whose instance type the catalog does not know.
	Unpriced []string `json:"unpriced,omitempty"`
	// LeftOut are pools the plan could not use, with why.
	LeftOut []PoolNote `json:"leftOut,omitempty"`
	// BufferPods are the capacity buffers' virtual pods planned after the
	// pods (their room is in New and Claims); BufferNotes say which
	// buffers keep no room in the snapshot and why.
	BufferPods  int      `json:"bufferPods,omitempty"`
	BufferNotes []string `json:"bufferNotes,omitempty"`
	// Commitments, when the snapshot declares any, compares the plan's
	// cost under them with the plan solved as if there were none.
	Commitments *CommitmentCost `json:"commitments,omitempty"`
}

// Claim is one planned NodeClaim: its pods and its cheapest option.
type Claim struct {
	NodePool     string  `json:"nodePool"`
	Pods         int     `json:"pods"`
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PerHour      float64 `json:"dollarsPerHour"`
	// Options is how many (type, zone, capacity type) choices it may launch as.
	Options int `json:"options"`
	// PricedBy names the NodeOverlay that set PerHour; empty when it is
	// the cloud's price.
	PricedBy string `json:"pricedBy,omitempty"`
}

// pricedBy is the overlay that priced o (catalog.ApplyOverlays).
func pricedBy(o scheduling.LaunchOption) string {
	for _, of := range o.InstanceType.Offerings {
		if of.Zone == o.Zone && of.CapacityType == o.CapacityType && of.Price == o.Price {
			return of.PricedBy
		}
	}
	return ""
}

// PodReason is a pod and the solver's reason.
type PodReason struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// Current is the $/h of every node today.
func (r *PlanResult) Current() float64 { return r.Nodesmith.PerHour + r.Other.PerHour }

// Plan runs the controller's gather and solver over the snapshot.
func Plan(snap *Snapshot, mode Mode, opts Options) (*PlanResult, error) {
	w, err := newWorld(snap, opts)
	if err != nil {
		return nil, err
	}
	types, notes := w.poolTypes()
	out := &PlanResult{Mode: mode, LeftOut: notes}
	var in scheduling.Input
	var blocked []provisioning.Blocked
	switch mode {
	case ModePending:
		pending := provisioning.PendingPods(w.idx, noNominations, snap.TakenAt.Time)
		in, _ = provisioning.BuildInput(w.idx, pending, types, w.opts.Solve)
		blocked = pending.Blocked
	case ModeRepack:
		// A cluster without nodes or claims: pools start with no usage.
		empty := provisioning.NewSnapshot(nil, nil, nil, w.idx.NodePools, w.idx.DaemonSets, nil)
		empty.Commitments = w.idx.Commitments
		var pods []*corev1.Pod
		pods, blocked = workloadPods(w.idx.Pods, w.idx.Storage, snap.TakenAt.Time)
		in, _ = provisioning.BuildInput(empty, provisioning.Pending{Pods: pods}, types, w.opts.Solve)
	default:
		return nil, fmt.Errorf("unknown plan mode %q (repack or pending)", mode)
	}
	out.Pods = len(in.Pods)
	plan, err := scheduling.Solve(in)
	if err != nil {
		return nil, fmt.Errorf("solving %d pods: %w", len(in.Pods), err)
	}
	// Capacity buffers' room comes after the pods, as in the provisioner.
	buffered, bufferNotes := w.bufferPods()
	out.BufferNotes = bufferNotes
	newClaims := plan.NewClaims
	if len(buffered) > 0 {
		bp, err := scheduling.Solve(provisioning.BufferInput(in, plan, buffered))
		if err != nil {
			return nil, fmt.Errorf("solving %d capacity buffer pods: %w", len(buffered), err)
		}
		out.BufferPods = len(buffered)
		newClaims = append(append([]*scheduling.ClaimPlan(nil), newClaims...), bp.NewClaims...)
	}
	out.Plan = plan
	out.Nominated = len(plan.Nominations)
	var items []cost.Item
	var onNew []*corev1.Pod
	for _, c := range newClaims {
		if len(c.Options) == 0 {
			continue
		}
		o := c.Options[0]
		items = append(items, cost.Item{NodePool: c.NodePool, CapacityType: o.CapacityType, InstanceType: o.InstanceType.Name, PerHour: o.Price})
		out.Claims = append(out.Claims, Claim{NodePool: c.NodePool, Pods: len(c.Pods), InstanceType: o.InstanceType.Name,
			Zone: o.Zone, CapacityType: o.CapacityType, PerHour: o.Price, Options: len(c.Options), PricedBy: pricedBy(o)})
		onNew = append(onNew, c.Pods...)
	}
	out.New = cost.Sum(items)
	for _, u := range plan.Unschedulable {
		out.Unschedulable = append(out.Unschedulable, PodReason{Pod: u.Pod.Namespace + "/" + u.Pod.Name, Reason: u.Reason})
	}
	for _, b := range blocked {
		out.Unschedulable = append(out.Unschedulable, PodReason{Pod: b.Pod.Namespace + "/" + b.Pod.Name,
			Reason: "held back by its volumes: " + b.Reason})
	}
	if len(onNew) > 0 {
		out.LowerBound = scheduling.PackingLowerBound(boundTypes(in.NodePools), onNew)
	}
	if len(in.Commitments) > 0 {
		cc, err := commitmentCost(in, plan)
		if err != nil {
			return nil, err
		}
		out.Commitments = cc
	}
	out.Nodesmith, _ = cost.Fleet(w.idx, types)
	out.Other, out.Unpriced = w.otherNodes()
	return out, nil
}

// CommitmentCost is a plan's new claims priced with and without the
// commitments: list price, the part commitments cover (prepaid) and what
// the plan adds beyond them, for the plan the solver makes and for the plan
// it would make ignoring them (whose on-demand the commitments still cover).
type CommitmentCost struct {
	ListPerHour    float64 `json:"listDollarsPerHour"`
	CoveredPerHour float64 `json:"coveredDollarsPerHour"`
	// AddedPerHour is ListPerHour − CoveredPerHour.
	AddedPerHour float64 `json:"addedDollarsPerHour"`
	// Ignoring are the same figures for the plan solved without commitments.
	IgnoringListPerHour    float64 `json:"ignoringListDollarsPerHour"`
	IgnoringCoveredPerHour float64 `json:"ignoringCoveredDollarsPerHour"`
	IgnoringAddedPerHour   float64 `json:"ignoringAddedDollarsPerHour"`
}

// commitmentCost solves in again without its commitments and charges both
// plans' claims to the commitments as the solver does (scheduling.ChargeClaim).
func commitmentCost(in scheduling.Input, plan *scheduling.Plan) (*CommitmentCost, error) {
	blind := in
	blind.Commitments = nil
	other, err := scheduling.Solve(blind)
	if err != nil {
		return nil, fmt.Errorf("solving %d pods without commitments: %w", len(in.Pods), err)
	}
	figures := func(claims []*scheduling.ClaimPlan) (list, covered float64) {
		l := scheduling.CommitmentLedger(in)
		for _, c := range claims {
			if len(c.Options) > 0 {
				list += c.Options[0].Price
				covered += scheduling.ChargeClaim(l, c)
			}
		}
		return list, covered
	}
	cc := &CommitmentCost{}
	cc.ListPerHour, cc.CoveredPerHour = figures(plan.NewClaims)
	cc.IgnoringListPerHour, cc.IgnoringCoveredPerHour = figures(other.NewClaims)
	cc.AddedPerHour = cc.ListPerHour - cc.CoveredPerHour
	cc.IgnoringAddedPerHour = cc.IgnoringListPerHour - cc.IgnoringCoveredPerHour
	return cc, nil
}

// noNominations: the controller keeps nominations in memory; a snapshot has none.
func noNominations(types.UID) (string, time.Time, bool) { return "", time.Time{}, false }

// workloadPods are the pods a replacement fleet must run: bound or
// provisionable pods that are not finished, terminating, DaemonSet or
// static pods, unbound, each narrowed to where its volumes are (as the
// provisioner and disruption narrow them), or blocked when they are not
// ready.
func workloadPods(pods []*corev1.Pod, st *provisioning.Storage, now time.Time) ([]*corev1.Pod, []provisioning.Blocked) {
	var out []*corev1.Pod
	var blocked []provisioning.Blocked
	for _, p := range pods {
		if lifecycle.IsTerminal(p) || p.DeletionTimestamp != nil || lifecycle.IsDaemonSetPod(p) || lifecycle.IsOwnedByNode(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			if !lifecycle.Provisionable(p, now) {
				continue
			}
		}
		// Judged as the pod is (bound or not): a bound pod's ephemeral
		// volume is made anew with it.
		vt, err := provisioning.VolumeRequirements(st, p)
		if err != nil {
			blocked = append(blocked, provisioning.Blocked{Pod: p, Reason: err.Error()})
			continue
		}
		cp := provisioning.WithVolumeTopology(p, vt)
		if cp == p {
			cp = p.DeepCopy()
		}
		cp.Spec.NodeName = ""
		cp.Status.NominatedNodeName = ""
		out = append(out, cp)
	}
	return out, blocked
}

// boundTypes are the types any pool may launch, with only the offerings its
// requirements allow, merged by name: the lower bound's catalog.
func boundTypes(pools []*scheduling.NodePool) []*catalog.InstanceType {
	byName := map[string]catalog.Offerings{}
	proto := map[string]*catalog.InstanceType{}
	for _, p := range pools {
		zones, cts := p.Requirements.Get(corev1.LabelTopologyZone), p.Requirements.Get(nsv1.LabelCapacityType)
		for _, it := range p.InstanceTypes {
			if !typeAllowed(p.Requirements, it) {
				continue
			}
			for _, o := range it.Offerings {
				if zones != nil && !zones.Has(o.Zone) || cts != nil && !cts.Has(o.CapacityType) {
					continue
				}
				byName[it.Name] = append(byName[it.Name], o)
			}
			proto[it.Name] = it
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*catalog.InstanceType, 0, len(names))
	for _, n := range names {
		out = append(out, proto[n].WithOfferings(byName[n]))
	}
	return out
}

// typeAllowed checks the pool's requirements on the labels instance types
// carry (arch, family, size…); zone and capacity type are per offering.
func typeAllowed(reqs scheduling.Requirements, it *catalog.InstanceType) bool {
	for _, k := range reqs.Keys() {
		if k == corev1.LabelTopologyZone || k == nsv1.LabelCapacityType {
			continue
		}
		v, present := it.Labels[k]
		if !present && !isTypeKey(k) {
			continue // a pool label, not a type property
		}
		if !reqs.Get(k).Matches(v, present) {
			return false
		}
	}
	return true
}

func isTypeKey(k string) bool {
	switch k {
	case corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelInstanceTypeStable:
		return true
	}
	return len(k) > len("aws.nodesmith.sh/") && k[:len("aws.nodesmith.sh/")] == "aws.nodesmith.sh/"
}

// otherNodes prices the nodes no NodeClaim backs.
func (w *world) otherNodes() (cost.Breakdown, []string) {
	zones := map[string]bool{}
	for _, n := range w.idx.Nodes {
		if z := n.Labels[corev1.LabelTopologyZone]; z != "" {
			zones[z] = true
		}
	}
	zl := make([]string, 0, len(zones))
	for z := range zones {
		zl = append(zl, z)
	}
	sort.Strings(zl)
	cat := map[string]*catalog.InstanceType{}
	if len(zl) > 0 {
		opts := catalog.Options{Region: w.opts.Region, Zones: zl, IncludePreviousGeneration: true}
		for _, it := range catalog.FromSpecs(w.specs, opts).Types() {
			cat[it.Name] = it
		}
	}
	var items []cost.Item
	var unpriced []string
	for _, n := range w.idx.Nodes {
		if w.idx.ClaimByNode[n.Name] != nil {
			continue
		}
		pool, ct, it, price, ok := w.priceNode(n, cat)
		if !ok {
			unpriced = append(unpriced, n.Name)
			continue
		}
		items = append(items, cost.Item{NodePool: pool, CapacityType: ct, InstanceType: it, PerHour: price})
	}
	sort.Strings(unpriced)
	return cost.Sum(items), unpriced
}
