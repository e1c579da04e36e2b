package whatif

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// PodReport is why one pod is where it is, or is not placed.
type PodReport struct {
	Pod   string          `json:"pod"`
	Phase corev1.PodPhase `json:"phase,omitempty"`
	// Bound is the node the pod is bound to, if it is.
	Bound *NodeFacts `json:"bound,omitempty"`
	// Provisionable says whether the provisioner plans the pod today;
	// NotProvisionable is why not. A pod that is not provisionable is
	// still explained, as if it were.
	Provisionable    bool   `json:"provisionable"`
	NotProvisionable string `json:"notProvisionable,omitempty"`
	// Unjudged: provisionable without kube-scheduler's verdict, because it
	// has not judged the pod within lifecycle.VerdictWait of its creation.
	Unjudged bool `json:"unjudged,omitempty"`
	// VolumesNotReady is why the provisioner holds the pod back for its
	// volumes (a missing claim, class or volume, an unbound Immediate
	// claim): nothing is planned for it until they are ready.
	VolumesNotReady string `json:"volumesNotReady,omitempty"`
	// VolumeZones are the zones the pod's volumes allow, and VolumeSource
	// the PersistentVolumes or StorageClasses that say so.
	VolumeZones  []string `json:"volumeZones,omitempty"`
	VolumeSource string   `json:"volumeSource,omitempty"`
	// The plan's outcome for the pod: a nomination to an existing node or
	// in-flight claim, a new claim, or the solver's reason.
	Nominated     string `json:"nominated,omitempty"`
	Claim         *Claim `json:"claim,omitempty"`
	Unschedulable string `json:"unschedulable,omitempty"`
	// Pools, Nodes and Notes are the solver's account (scheduling.ExplainPod).
	Pools   []PoolReport `json:"pools"`
	Nodes   []NodeFit    `json:"nodes,omitempty"`
	Notes   []string     `json:"notes,omitempty"`
	LeftOut []PoolNote   `json:"leftOut,omitempty"`
}

// PoolReport is how one pool sees the pod.
type PoolReport struct {
	NodePool      string       `json:"nodePool"`
	Weight        int32        `json:"weight"`
	Fits          bool         `json:"fits"`
	Reason        string       `json:"reason,omitempty"`
	Relaxed       string       `json:"relaxed,omitempty"`
	InstanceTypes []TypeOption `json:"instanceTypes,omitempty"`
	Blocked       []string     `json:"blocked,omitempty"`
}

// TypeOption is an instance type at its cheapest allowed offering.
type TypeOption struct {
	Name    string  `json:"name"`
	PerHour float64 `json:"dollarsPerHour"`
}

// NodeFit is whether an existing node or in-flight claim can take the pod.
type NodeFit struct {
	Node     string `json:"node"`
	InFlight bool   `json:"inFlight,omitempty"`
	Fits     bool   `json:"fits"`
	Reason   string `json:"reason,omitempty"`
}

// NodeFacts is what a node is: its claim, pool, type and price.
type NodeFacts struct {
	Node         string   `json:"node"`
	NodeClaim    string   `json:"nodeClaim,omitempty"`
	NodePool     string   `json:"nodePool,omitempty"`
	InstanceType string   `json:"instanceType,omitempty"`
	Zone         string   `json:"zone,omitempty"`
	CapacityType string   `json:"capacityType,omitempty"`
	PerHour      *float64 `json:"dollarsPerHour,omitempty"`
}

// ExplainPod explains pod namespace/name in the snapshot: for a pending
// pod, the plan the provisioner would make now and each pool's and node's
// account; for a bound pod, the node it is on.
func ExplainPod(snap *Snapshot, namespace, name string, opts Options) (*PodReport, error) {
	w, err := newWorld(snap, opts)
	if err != nil {
		return nil, err
	}
	var pod *corev1.Pod
	for _, p := range w.idx.Pods {
		if p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s is not in the snapshot", namespace, name)
	}
	r := &PodReport{Pod: namespace + "/" + name, Phase: pod.Status.Phase}
	if pod.Spec.NodeName != "" {
		f := w.nodeFacts(pod.Spec.NodeName)
		r.Bound = &f
		r.NotProvisionable = fmt.Sprintf("bound to node %s", pod.Spec.NodeName)
		return r, nil
	}
	r.Provisionable, r.NotProvisionable = lifecycle.IsProvisionable(pod, snap.TakenAt.Time)
	r.Unjudged = r.Provisionable && !lifecycle.MarkedUnschedulable(pod)
	// The provisioner's own rule for the pod's volumes: held back, or
	// planned as WithVolumeTopology made it.
	vt, err := provisioning.VolumeRequirements(w.idx.Storage, pod)
	if err != nil {
		r.VolumesNotReady = err.Error()
		return r, nil
	}
	r.VolumeZones, r.VolumeSource = provisioning.VolumeZones(vt)
	types, notes := w.poolTypes()
	r.LeftOut = notes
	pending := provisioning.PendingPods(w.idx, noNominations, snap.TakenAt.Time)
	planned := provisioning.WithVolumeTopology(pod, vt)
	if r.Provisionable {
		for _, p := range pending.Pods {
			if p.Namespace == namespace && p.Name == name {
				planned = p
			}
		}
	} else {
		pending.Pods = append(pending.Pods, planned)
	}
	in, _ := provisioning.BuildInput(w.idx, pending, types, w.opts.Solve)
	e, err := scheduling.ExplainPod(in, planned)
	if err != nil {
		return nil, err
	}
	r.Nominated, r.Unschedulable = e.Node, e.Unschedulable
	if c := e.Claim; c != nil && len(c.Options) > 0 {
		o := c.Options[0]
		r.Claim = &Claim{NodePool: c.NodePool, Pods: len(c.Pods), InstanceType: o.InstanceType.Name, Zone: o.Zone,
			CapacityType: o.CapacityType, PerHour: o.Price, Options: len(c.Options), PricedBy: pricedBy(o)}
	}
	for _, p := range e.Pools {
		pr := PoolReport{NodePool: p.NodePool, Weight: p.Weight, Fits: p.Fits, Reason: p.Reason, Relaxed: p.Relaxed, Blocked: p.Blocked}
		for _, t := range p.InstanceTypes {
			pr.InstanceTypes = append(pr.InstanceTypes, TypeOption{Name: t.Name, PerHour: t.Price})
		}
		r.Pools = append(r.Pools, pr)
	}
	for _, n := range e.Nodes {
		r.Nodes = append(r.Nodes, NodeFit{Node: n.Name, InFlight: n.InFlight, Fits: n.Fits, Reason: n.Reason})
	}
	r.Notes = e.Notes
	return r, nil
}

// nodeFacts describes a node (or an in-flight claim) by name.
func (w *world) nodeFacts(name string) NodeFacts {
	f := NodeFacts{Node: name}
	var claim *nsv1.NodeClaim
	if c := w.idx.ClaimByNode[name]; c != nil {
		claim = c
	}
	for _, c := range w.idx.NodeClaims {
		if claim == nil && c.Name == name {
			claim = c
		}
	}
	for _, n := range w.idx.Nodes {
		if n.Name == name {
			f.InstanceType = n.Labels[corev1.LabelInstanceTypeStable]
			f.Zone = n.Labels[corev1.LabelTopologyZone]
			f.CapacityType = n.Labels[nsv1.LabelCapacityType]
		}
	}
	if claim != nil {
		f.NodeClaim = claim.Name
		f.NodePool = claim.Labels[nsv1.LabelNodePool]
		if claim.Status.InstanceType != "" {
			f.InstanceType, f.Zone, f.CapacityType = claim.Status.InstanceType, claim.Status.Zone, claim.Status.CapacityType
		}
		if p, ok := claim.Status.PriceUSD(); ok {
			f.PerHour = &p
		}
	}
	return f
}
