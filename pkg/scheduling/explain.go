package scheduling

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// PodExplanation is the solver's account of one pod: what the plan does
// with it, how each NodePool sees it and how each existing node does, in
// the words the solver uses for unschedulable pods.
type PodExplanation struct {
	// The outcome: at most one of Node and Claim is set; Unschedulable
	// holds the solver's reason when neither is.
	Node          string
	Claim         *ClaimPlan
	Unschedulable string
	// Pools in the order the solver tries them (weight, then name).
	Pools []PoolExplanation
	// Nodes are the existing nodes and in-flight claims, in the order the
	// solver fills them (registered first, then by name).
	Nodes []NodeExplanation
	// Notes are what the solver noted while placing the pod's shape that
	// names no pool (zone spread, affinity).
	Notes []string
}

// PoolExplanation is how one NodePool sees the pod.
type PoolExplanation struct {
	NodePool string
	Weight   int32
	// Fits says a new node of the pool can hold one such pod: taints
	// tolerated, requirements compatible, an instance type large enough
	// with an available offering in a zone and capacity type it allows.
	Fits bool
	// Reason is the solver's first failing check when it does not fit.
	Reason string
	// Relaxed names the preference the pod had to give up to fit, if any.
	Relaxed string
	// InstanceTypes are the pool's types that fit, cheapest first, each at
	// its cheapest offering the pod allows.
	InstanceTypes []TypeOption
	// Blocked are the reasons the solver noted for this pool while packing
	// (limits, node limits, topology).
	Blocked []string
}

// TypeOption is an instance type at the cheapest offering the pod allows.
type TypeOption struct {
	Name  string
	Price float64
}

// NodeExplanation is how one existing node or in-flight claim sees the pod
// before any other pending pod is placed.
type NodeExplanation struct {
	Name     string
	InFlight bool
	Fits     bool
	// Reason is why it cannot take the pod, when it cannot.
	Reason string
}

// ExplainPod solves in and explains what happens to pod, which must be one
// of in.Pods. The outcome is Solve's; the per-pool and per-node accounts
// come from the same checks the solver runs.
func ExplainPod(in Input, pod *corev1.Pod) (*PodExplanation, error) {
	plan, err := Solve(in)
	if err != nil {
		return nil, err
	}
	out := &PodExplanation{}
	for _, n := range plan.Nominations {
		if n.Pod == pod {
			out.Node = n.Node
		}
	}
	for _, c := range plan.NewClaims {
		for _, p := range c.Pods {
			if p == pod {
				out.Claim = c
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if u.Pod == pod {
			out.Unschedulable = u.Reason
		}
	}

	// The nodes as they are before the solve places anything.
	before := &solver{in: in, opts: in.Options.withDefaults(), state: map[*podClass]*classState{}}
	if err := before.prepare(); err != nil {
		return nil, err
	}
	c := before.classOf[pod]
	if c == nil {
		return nil, fmt.Errorf("pod %s is not among the pods to solve", podKey(pod))
	}
	for _, n := range before.nodes {
		out.Nodes = append(out.Nodes, before.explainNode(c, n))
	}

	// The same solve again, to read what it noted for the pod's class.
	s := &solver{in: in, opts: in.Options.withDefaults(), state: map[*podClass]*classState{}}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	rounds := 0
	for _, cl := range s.classes {
		rounds = max(rounds, len(cl.variants))
	}
	for r := 0; r < rounds; r++ {
		s.round(r)
	}
	s.reconcileSpread()
	c = s.classOf[pod]
	why := s.state[c].why
	for _, p := range s.pools {
		pe := s.explainPool(c, p)
		prefix := fmt.Sprintf("pool %q", p.np.Name)
		for _, w := range why {
			if strings.HasPrefix(w, prefix) {
				pe.Blocked = append(pe.Blocked, w)
			}
		}
		out.Pools = append(out.Pools, pe)
	}
	for _, w := range why {
		if !strings.HasPrefix(w, "pool \"") {
			out.Notes = append(out.Notes, w)
		}
	}
	return out, nil
}

// explainPool is fitPool over the class's relaxation ladder: the first rung
// that fits, else the last rung's reason (the one the solver reports).
func (s *solver) explainPool(c *podClass, p *pool) PoolExplanation {
	pe := PoolExplanation{NodePool: p.np.Name, Weight: p.np.Weight}
	var f *poolFit
	var v *variant
	for _, v = range c.variants {
		if v.fits != nil {
			f = v.fits[p.idx]
		} else {
			f = s.fitPool(c, v, p)
		}
		if f.ok {
			break
		}
	}
	if f == nil {
		pe.Reason = "the pod has no variant to place"
		return pe
	}
	pe.Fits, pe.Reason = f.ok, f.reason
	if p.dropped != "" {
		pe.Reason = s.droppedReason(p)
	}
	if f.ok {
		pe.Relaxed = v.relaxed
	}
	if f.types == nil {
		return pe
	}
	for ti, pt := range p.types {
		if !f.types.has(ti) {
			continue
		}
		price := math.Inf(1)
		for si := range pt.price {
			if pt.slots&f.slots&(1<<si) != 0 {
				price = math.Min(price, pt.price[si])
			}
		}
		pe.InstanceTypes = append(pe.InstanceTypes, TypeOption{Name: pt.it.Name, Price: price})
	}
	return pe
}

// droppedReason says why a pool has no instance type at all. When some
// types pass the pool's requirements but none has an available offering
// (all out of capacity), it says so; buildPoolTypes then reports only the
// requirements that rejected the other types.
func (s *solver) droppedReason(p *pool) string {
	allowed := 0
	for _, it := range p.np.InstanceTypes {
		ok := true
		for _, k := range p.reqs.Keys() {
			if _, typed := s.typeKeys[k]; !typed {
				continue
			}
			v, present := it.Labels[k]
			if !p.reqs[k].Matches(v, present) {
				ok = false
				break
			}
		}
		if ok {
			allowed++
		}
	}
	if allowed == 0 {
		return fmt.Sprintf("pool %q %s", p.np.Name, p.dropped)
	}
	return fmt.Sprintf("pool %q: none of the %d instance types its requirements allow has an available offering in %s",
		p.np.Name, allowed, zoneCTText(p.reqs.Get(corev1.LabelTopologyZone), p.reqs.Get(nsv1.LabelCapacityType)))
}

// explainNode says whether n can take one pod of c on its strictest rung
// that n matches, and if not, the first check that fails.
func (s *solver) explainNode(c *podClass, n *nodeState) NodeExplanation {
	ne := NodeExplanation{Name: n.n.Name, InFlight: n.n.InFlight}
	if n.n.MarkedForDeletion {
		ne.Reason = "marked for deletion"
		return ne
	}
	if t, bad := findUntolerated(n.node.Spec.Taints, c.rep.Spec.Tolerations); bad {
		ne.Reason = fmt.Sprintf("taint %s not tolerated", taintText(t))
		return ne
	}
	var v *variant
	for _, cand := range c.variants {
		if s.nodeAffinityOnly(c, cand, n) {
			v = cand
			break
		}
	}
	if v == nil {
		last := c.variants[len(c.variants)-1]
		if last.unsupported != "" {
			ne.Reason = last.unsupported
		} else {
			ne.Reason = "its labels do not match the pod's node selector, node affinity or requirements"
		}
		return ne
	}
	if !c.req.fits(n.free) {
		var parts []string
		for d := range c.req {
			if c.req[d] > n.free[d] {
				parts = append(parts, fmt.Sprintf("needs %s but %s is free", s.d.format(d, c.req[d]), s.d.format(d, max(0, n.free[d]))))
			}
		}
		ne.Reason = strings.Join(parts, ", ")
		return ne
	}
	if !s.canHost(c, v, &n.host, n.zone) {
		ne.Reason = "its pods' topology (spread, anti-affinity, affinity) or host ports leave no room for it"
		return ne
	}
	ne.Fits = true
	if v.relaxed != "" {
		ne.Reason = v.relaxed
	}
	return ne
}
