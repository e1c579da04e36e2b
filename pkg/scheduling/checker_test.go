package scheduling

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// The checker re-evaluates a finished plan from the Kubernetes objects
// alone, through component-helpers and apimachinery selectors, without any
// of the solver's code paths: resources, node affinity, taints, spread
// skew, pod (anti-)affinity, host ports, pool limits and option lists.

type checkNode struct {
	name   string
	node   *corev1.Node
	pods   []*corev1.Pod // everything running there at the end
	newPod map[*corev1.Pod]bool
	pool   string
	// zones a claim may launch in (every zone of its options); nil for
	// existing nodes, whose zone label is fixed.
	zones []string
	// alts are the values of every label over a claim's options (a claim
	// whose options span several instance types may get any of their
	// labels); nil for existing nodes.
	alts map[string][]string
	// nOpts is the claim's option count; hasKey counts the options with
	// each label.
	nOpts  int
	hasKey map[string]int
}

func untolerated(taints []corev1.Taint, tol []corev1.Toleration) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tol, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
}

func dsPod(ds *appsv1.DaemonSet) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name + "-ds", Labels: ds.Spec.Template.Labels}, Spec: ds.Spec.Template.Spec}
}

// checkPlan fails t for every constraint the plan breaks.
func checkPlan(t *testing.T, in Input, plan *Plan) {
	t.Helper()
	errs := planViolations(in, plan)
	for i, e := range errs {
		if i == 10 {
			t.Errorf("... and %d more", len(errs)-10)
			break
		}
		t.Error(e)
	}
}

func planViolations(in Input, plan *Plan) []string {
	var errs []string
	fail := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	seen := map[*corev1.Pod]int{}
	for _, n := range plan.Nominations {
		seen[n.Pod]++
	}
	for _, c := range plan.NewClaims {
		for _, p := range c.Pods {
			seen[p]++
		}
	}
	for _, u := range plan.Unschedulable {
		seen[u.Pod]++
		if u.Reason == "" {
			fail("pod %s unschedulable without a reason", u.Pod.Name)
		}
	}
	for _, p := range in.Pods {
		if seen[p] != 1 {
			fail("pod %s appears %d times in the plan", p.Name, seen[p])
		}
	}
	pools := map[string]*NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
	}
	nodes := map[string]*checkNode{}
	var order []*checkNode
	for _, n := range in.Nodes {
		lbls := map[string]string{corev1.LabelHostname: n.Name}
		for k, v := range n.Labels {
			lbls[k] = v
		}
		cn := &checkNode{name: n.Name, node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: lbls}, Spec: corev1.NodeSpec{Taints: n.Taints}, Status: corev1.NodeStatus{Allocatable: n.Allocatable}}, pods: append([]*corev1.Pod(nil), n.Pods...), newPod: map[*corev1.Pod]bool{}}
		nodes[n.Name] = cn
		order = append(order, cn)
	}
	for _, nom := range plan.Nominations {
		cn, ok := nodes[nom.Node]
		if !ok {
			fail("pod %s nominated to unknown node %s", nom.Pod.Name, nom.Node)
			continue
		}
		for _, n := range in.Nodes {
			if n.Name == nom.Node && n.MarkedForDeletion {
				fail("pod %s nominated to node %s marked for deletion", nom.Pod.Name, nom.Node)
			}
		}
		cn.pods = append(cn.pods, nom.Pod)
		cn.newPod[nom.Pod] = true
	}
	maxOpts := in.Options.MaxOptionsPerClaim
	if maxOpts == 0 {
		maxOpts = 60
	}
	launchedCap := map[string]corev1.ResourceList{}
	launchedNodes := map[string]int64{}
	for _, c := range plan.NewClaims {
		np := pools[c.NodePool]
		if np == nil {
			fail("claim %s names unknown pool %s", c.Name, c.NodePool)
			continue
		}
		if len(c.Options) == 0 || len(c.Options) > maxOpts {
			fail("claim %s has %d options", c.Name, len(c.Options))
			continue
		}
		launchedNodes[c.NodePool]++
		maxCap := corev1.ResourceList{}
		alts := map[string][]string{}
		hasKey := map[string]int{}
		for i, o := range c.Options {
			if i > 0 && o.Price < c.Options[i-1].Price {
				fail("claim %s options not price-ordered", c.Name)
			}
			if o.CapacityType != c.Options[0].CapacityType {
				fail("claim %s mixes capacity types", c.Name)
			}
			var off *catalog.Offering
			for j := range o.InstanceType.Offerings {
				of := &o.InstanceType.Offerings[j]
				if of.Zone == o.Zone && of.CapacityType == o.CapacityType {
					off = of
				}
			}
			if off == nil || !off.Available || off.Price != o.Price {
				fail("claim %s option %s/%s/%s is not an available offering at that price", c.Name, o.InstanceType.Name, o.Zone, o.CapacityType)
			}
			inPool := false
			for _, it := range np.InstanceTypes {
				if it == o.InstanceType {
					inPool = true
				}
			}
			if !inPool {
				fail("claim %s option %s is not an instance type of pool %s", c.Name, o.InstanceType.Name, np.Name)
			}
			lbls := map[string]string{corev1.LabelHostname: c.Name, corev1.LabelTopologyZone: o.Zone, nsv1.LabelCapacityType: o.CapacityType, nsv1.LabelNodePool: np.Name}
			for k, v := range o.InstanceType.Labels {
				lbls[k] = v
			}
			for k, v := range np.Labels {
				lbls[k] = v
			}
			for k, v := range c.Labels {
				lbls[k] = v
			}
			for k, v := range lbls {
				hasKey[k]++
				if !containsString(alts[k], v) {
					alts[k] = append(alts[k], v)
				}
			}
			if !np.Requirements.Matches(lbls) {
				// Requirements.Matches is the algebra under test elsewhere; here
				// the pool requirement is rechecked through a node selector.
			}
			if sel := poolSelector(np); sel != nil {
				if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: lbls}}); !ok {
					fail("claim %s option %s/%s/%s violates pool %s requirements", c.Name, o.InstanceType.Name, o.Zone, o.CapacityType, np.Name)
				}
			}
			alloc := o.InstanceType.Allocatable()
			cn := &checkNode{name: c.Name, pool: np.Name, newPod: map[*corev1.Pod]bool{},
				node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: lbls}, Spec: corev1.NodeSpec{Taints: c.Taints}, Status: corev1.NodeStatus{Allocatable: alloc}}}
			for _, p := range c.Pods {
				cn.pods = append(cn.pods, p)
				cn.newPod[p] = true
			}
			for _, ds := range in.DaemonSets {
				dp := dsPod(ds)
				if _, bad := untolerated(append(append([]corev1.Taint(nil), c.Taints...), c.StartupTaints...), dp.Spec.Tolerations); bad {
					continue
				}
				if ok, _ := nodeaffinity.GetRequiredNodeAffinity(dp).Match(cn.node); ok {
					cn.pods = append(cn.pods, dp)
				}
			}
			if i == 0 {
				for _, o := range c.Options {
					if !containsString(cn.zones, o.Zone) {
						cn.zones = append(cn.zones, o.Zone)
					}
				}
				nodes[c.Name] = cn
				order = append(order, cn)
			} else {
				// Every option must host the claim's pods as well.
				errs = append(errs, nodeViolations(cn, true)...)
			}
			for name, q := range o.InstanceType.Capacity {
				if cur, ok := maxCap[name]; !ok || q.Cmp(cur) > 0 {
					maxCap[name] = q.DeepCopy()
				}
			}
		}
		if cn := nodes[c.Name]; cn != nil {
			cn.alts, cn.hasKey, cn.nOpts = alts, hasKey, len(c.Options)
		}
		errs = append(errs, flexViolations(in, np, c, maxOpts)...)
		errs = append(errs, ceilingViolations(in, np, c)...)
		sum := launchedCap[c.NodePool]
		if sum == nil {
			sum = corev1.ResourceList{}
		}
		if in.Options.ChargeExpectedLaunch {
			// Launched in plan order, each claim as its cheapest option, every
			// option of a claim fits what the limit leaves at its turn, and
			// the pool counts each claim's cheapest option.
			for name, lim := range np.Limits {
				if name == nsv1.ResourceNodes {
					continue
				}
				left := lim.DeepCopy()
				left.Sub(np.Usage[name])
				left.Sub(sum[name])
				for _, o := range c.Options {
					if q := o.InstanceType.Capacity[name]; q.Cmp(left) > 0 {
						fail("claim %s option %s needs %s of pool %s's %s limit %s, %s left at its turn", c.Name, o.InstanceType.Name, q.String(), np.Name, name, lim.String(), left.String())
					}
				}
			}
			maxCap = c.Options[0].InstanceType.Capacity
		}
		for name, q := range maxCap {
			cur := sum[name]
			cur.Add(q)
			sum[name] = cur
		}
		launchedCap[c.NodePool] = sum
	}
	for _, np := range in.NodePools {
		for name, lim := range np.Limits {
			if name == nsv1.ResourceNodes {
				used := np.Usage[nsv1.ResourceNodes]
				if used.Value()+launchedNodes[np.Name] > lim.Value() {
					fail("pool %s exceeds its node limit", np.Name)
				}
				continue
			}
			total := np.Usage[name].DeepCopy()
			total.Add(launchedCap[np.Name][name])
			if total.Cmp(lim) > 0 {
				fail("pool %s may exceed its %s limit %s (pessimistic %s)", np.Name, name, lim.String(), total.String())
			}
		}
	}
	for _, cn := range order {
		errs = append(errs, nodeViolations(cn, false)...)
	}
	errs = append(errs, topologyViolations(order)...)
	return errs
}

// poolSelector expresses the pool's requirements as a node selector (Gte
// and Lte become Gt/Lt on the neighbouring integer).
func poolSelector(np *NodePool) *corev1.NodeSelector {
	var exprs []corev1.NodeSelectorRequirement
	for _, r := range np.Requirements.NodeSelectorRequirements() {
		exprs = append(exprs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	if len(exprs) == 0 {
		return nil
	}
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}
}

func nodeViolations(cn *checkNode, optionOnly bool) []string {
	var errs []string
	fail := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	total := corev1.ResourceList{}
	for _, p := range cn.pods {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			cur := total[name]
			cur.Add(q)
			total[name] = cur
		}
	}
	alloc := cn.node.Status.Allocatable
	for name, q := range total {
		if q.IsZero() {
			continue
		}
		a, ok := alloc[name]
		if !ok || q.Cmp(a) > 0 {
			fail("node %s (%s): %s requests %s exceed allocatable %s", cn.name, cn.node.Labels[corev1.LabelInstanceTypeStable], name, q.String(), a.String())
		}
	}
	if podsCap, ok := alloc[corev1.ResourcePods]; ok && int64(len(cn.pods)) > podsCap.Value() {
		fail("node %s: %d pods exceed max pods %d", cn.name, len(cn.pods), podsCap.Value())
	}
	for _, p := range cn.pods {
		if !cn.newPod[p] {
			continue
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(cn.node); err != nil || !ok {
			fail("pod %s on node %s (%v): node affinity / selector not met", p.Name, cn.name, cn.node.Labels)
		}
		var taints []corev1.Taint
		for _, t := range cn.node.Spec.Taints {
			if t.Key != nsv1.UnregisteredTaint.Key {
				taints = append(taints, t)
			}
		}
		if t, bad := untolerated(taints, p.Spec.Tolerations); bad {
			fail("pod %s on node %s: taint %s not tolerated", p.Name, cn.name, t.Key)
		}
	}
	if optionOnly {
		return errs
	}
	type port struct {
		proto corev1.Protocol
		port  int32
	}
	used := map[port]string{}
	for _, p := range cn.pods {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				proto := cp.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				k := port{proto, cp.HostPort}
				if other, ok := used[k]; ok {
					fail("node %s: host port %d used by %s and %s", cn.name, cp.HostPort, other, p.Name)
				}
				used[k] = p.Name
			}
		}
	}
	return errs
}

var _ = resource.MustParse

// flexViolations checks a claim's option list against the pool's minValues
// and, for claims of pods free to go to any zone, the floor of 15 spot
// options: a claim with fewer must hold a pod that alone has fewer.
func flexViolations(in Input, np *NodePool, c *ClaimPlan, maxOpts int) []string {
	var errs []string
	for _, r := range np.Requirements.NodeSelectorRequirements() {
		req := np.Requirements.Get(r.Key)
		if req == nil || req.MinValues == nil || r.Key == nsv1.LabelCapacityType {
			continue
		}
		seen := map[string]bool{}
		for _, o := range c.Options {
			if r.Key == corev1.LabelTopologyZone {
				seen[o.Zone] = true
			} else if v, ok := o.InstanceType.Labels[r.Key]; ok {
				seen[v] = true
			}
		}
		if len(seen) < *req.MinValues {
			errs = append(errs, fmt.Sprintf("claim %s offers %d values of %s, below minValues %d", c.Name, len(seen), r.Key, *req.MinValues))
		}
	}
	const floor = DefaultMinSpotOptions
	if c.Options[0].CapacityType != nsv1.CapacityTypeSpot || len(np.Limits) > 0 || maxOpts < floor || in.Options.MinSpotOptions != 0 {
		return errs // limits and a custom floor trim options on purpose
	}
	spot := 0
	for _, o := range c.Options {
		if o.CapacityType == nsv1.CapacityTypeSpot {
			spot++
		}
	}
	if spot >= floor {
		return errs
	}
	// A claim pinned to one value of an instance-type label some pod's
	// topology rule uses (instance type, architecture, …) has the options
	// of those types only; the floor over every type does not apply.
	if typeKeyPinned(in, c) {
		return errs
	}
	// A claim in one zone (its pods are counted by a zone rule) is held to
	// what each pod alone has in that zone.
	zone := c.Options[0].Zone
	for _, o := range c.Options {
		if o.Zone != zone {
			zone = ""
		}
	}
	for _, p := range c.Pods {
		if zoneBound(p) || podSpotOptions(in, np, p, zone) < floor {
			return errs
		}
	}
	return append(errs, fmt.Sprintf("claim %s of %d pods has %d spot options although each of its pods alone has at least %d", c.Name, len(c.Pods), spot, floor))
}

// typeKeyPinned reports whether every option of claim c has the same
// value of an instance-type label that some pending pod uses as a
// topology key.
func typeKeyPinned(in Input, c *ClaimPlan) bool {
	keys := map[string]bool{}
	for _, p := range in.Pods {
		for _, tsc := range p.Spec.TopologySpreadConstraints {
			keys[tsc.TopologyKey] = true
		}
		if a := p.Spec.Affinity; a != nil {
			for _, pa := range []*corev1.PodAffinity{a.PodAffinity} {
				if pa != nil {
					for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
						keys[t.TopologyKey] = true
					}
				}
			}
			if aa := a.PodAntiAffinity; aa != nil {
				for _, t := range aa.RequiredDuringSchedulingIgnoredDuringExecution {
					keys[t.TopologyKey] = true
				}
			}
		}
	}
	for k := range keys {
		if k == corev1.LabelTopologyZone || k == corev1.LabelHostname || k == nsv1.LabelCapacityType {
			continue
		}
		v, ok := c.Options[0].InstanceType.Labels[k]
		same := ok
		for _, o := range c.Options {
			if w, ok := o.InstanceType.Labels[k]; !ok || w != v {
				same = false
			}
		}
		if same {
			return true
		}
	}
	return false
}

// zoneBound reports whether a pod's zone or its preferences narrow where it
// may go (then the floor counts options of one zone or of fewer types,
// which this checker does not recompute).
func zoneBound(p *corev1.Pod) bool {
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.TopologyKey == corev1.LabelTopologyZone {
			return true
		}
	}
	if _, ok := p.Spec.NodeSelector[corev1.LabelTopologyZone]; ok {
		return true
	}
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	if a.NodeAffinity != nil {
		if len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
		if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for _, term := range r.NodeSelectorTerms {
				for _, e := range term.MatchExpressions {
					if e.Key == corev1.LabelTopologyZone {
						return true
					}
				}
			}
		}
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if t.TopologyKey == corev1.LabelTopologyZone {
			return true
		}
	}
	return false
}

// podSpotOptions counts the pool's available spot (type, zone) offerings
// (in zone, unless empty) that hold the pod next to every DaemonSet (an undercount when some
// DaemonSet would not run there) and match the pool's and the pod's
// required node affinity.
func podSpotOptions(in Input, np *NodePool, p *corev1.Pod, zone string) int {
	need := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	for _, ds := range in.DaemonSets {
		for name, q := range resourcehelper.PodRequests(dsPod(ds), resourcehelper.PodResourcesOptions{}) {
			cur := need[name]
			cur.Add(q)
			need[name] = cur
		}
	}
	sel := poolSelector(np)
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	n := 0
	for _, it := range np.InstanceTypes {
		alloc := it.Allocatable()
		fits := true
		for name, q := range need {
			if a, ok := alloc[name]; !q.IsZero() && (!ok || q.Cmp(a) > 0) {
				fits = false
			}
		}
		if pods, ok := alloc[corev1.ResourcePods]; ok && pods.Value() < int64(1+len(in.DaemonSets)) {
			fits = false
		}
		if !fits {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || o.CapacityType != nsv1.CapacityTypeSpot || zone != "" && o.Zone != zone {
				continue
			}
			lbls := map[string]string{corev1.LabelTopologyZone: o.Zone, nsv1.LabelCapacityType: o.CapacityType, nsv1.LabelNodePool: np.Name}
			for k, v := range it.Labels {
				lbls[k] = v
			}
			for k, v := range np.Labels {
				lbls[k] = v
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: lbls}}
			if sel != nil {
				if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(node); !ok {
					continue
				}
			}
			if ok, _ := aff.Match(node); ok {
				n++
			}
		}
	}
	return n
}

// ceilingViolations checks a claim's options against its price ceiling
// (the pool's, the solve's or 2×): past it, a list may only carry the
// spot options the floor of 15 still needs, and, in pools with minValues,
// one option per value those need.
func ceilingViolations(in Input, np *NodePool, c *ClaimPlan) []string {
	ceiling := 2.0
	if in.Options.OptionPriceCeiling > 0 {
		ceiling = max(1, in.Options.OptionPriceCeiling)
	}
	if np.OptionPriceCeiling > 0 {
		ceiling = max(1, np.OptionPriceCeiling)
	}
	floor := DefaultMinSpotOptions
	if in.Options.MinSpotOptions > 0 {
		floor = in.Options.MinSpotOptions
	}
	limit := ceiling * c.Options[0].Price * (1 + 1e-9)
	spotWithin, above := 0, 0
	for _, o := range c.Options {
		switch {
		case o.Price > limit:
			above++
		case o.CapacityType == nsv1.CapacityTypeSpot:
			spotWithin++
		}
	}
	allowed := 0
	if c.Options[0].CapacityType == nsv1.CapacityTypeSpot {
		allowed = max(0, floor-spotWithin)
	}
	for _, r := range np.Requirements.NodeSelectorRequirements() {
		if req := np.Requirements.Get(r.Key); req != nil && req.MinValues != nil {
			allowed += *req.MinValues
		}
	}
	if above > allowed {
		return []string{fmt.Sprintf("claim %s lists %d options above %.2f× its cheapest, only %d needed for its floors", c.Name, above, ceiling, allowed)}
	}
	return nil
}
