package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// solver holds the state of one Solve call.
type solver struct {
	// optBuf and usedBuf are collectOptions' scratch lists, reused from
	// claim to claim (a claim keeps a copy of its final options).
	optBuf  []LaunchOption
	usedBuf []*poolType

	in       Input
	opts     Options
	d        *dims
	topo     *topology
	slots    slots
	spot     uint64   // the spot slots
	ctMasks  []uint64 // the slots of each capacity type
	reserved uint64   // the reserved slots (reserved.go)
	// resLeft counts down, by reservation id, the instances a reservation
	// still has free as buildClaims gives claims their options.
	resLeft map[string]int
	// resBins counts, by reservation id, the bins seedReservations opened
	// for it (across pools and rounds).
	resBins map[string]int
	// ledger is what the commitments have left (commitment.go); nil without any.
	ledger    *catalog.Ledger
	typeKeys  map[string]struct{}
	pools     []*pool
	nodeLimit []int64
	nodesUsed []int64
	daemons   []*daemon
	classes   []*podClass
	nodes     []*nodeState
	nodeIndex map[string]*nodeState // by name, built on first use
	bins      []*bin
	noms      []Nomination
	state     map[*podClass]*classState
	classOf   map[*corev1.Pod]*podClass
	zoneLoad  []int32 // pods given a zone quota, per zone
	fitCache  map[string]*poolFit
	failed    []PodError
	dropped   []*bin // bins emptied because they could not become claims
	// shapeBuf is placeByShape's heap, reused from class to class: on a
	// 10,000-node cluster a fresh one per class was a third of a cycle's
	// allocations.
	shapeBuf shapeHeap
}

// classState is a class's progress through the solve.
type classState struct {
	left  []*corev1.Pod
	quota []int32 // per zone: -1 unlimited, else pods the zone may still take; nil when zone-free
	// planned marks quotas that were also added to group.planned.
	planned bool
	// allowed is the zones the class may use this round (as quota: -1
	// unlimited, 0 forbidden), kept for the balance repair; nAllowed
	// counts them.
	allowed  []int32
	nAllowed int
	why      []string
	// kq is the class's quota per value of each topology key it is
	// concerned with this round (as quota; nil: none); kplan marks keys
	// whose quotas were also added to group.planned.
	kq    [][]int32
	kplan uint64
	// limitWhy: the index in why of each (pool, limit) note (noteLimit).
	limitWhy map[[2]int]int
}

// nodeState is an existing node or in-flight claim as the solver sees it.
type nodeState struct {
	host
	n    *ExistingNode
	node *corev1.Node
	free vec
	idx  int // the node's place in solver.nodes
}

// Solve places pending pods on existing capacity and plans new NodeClaims
// for the rest. It is deterministic: the same input yields the same plan.
func Solve(in Input) (*Plan, error) {
	s := &solver{in: in, opts: in.Options.withDefaults(), state: map[*podClass]*classState{}}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	rounds := 0
	for _, c := range s.classes {
		rounds = max(rounds, len(c.variants))
	}
	for r := 0; r < rounds; r++ {
		s.round(r)
	}
	return s.plan(), nil
}

func (s *solver) prepare() error {
	ext := map[corev1.ResourceName]struct{}{}
	for _, p := range s.in.Pods {
		extendedNames(p, ext)
	}
	// A pool's limits cap every resource they name, asked for or not: a
	// GPU pool limited to 0 GPUs launches nothing, even for cpu pods.
	for _, np := range s.in.NodePools {
		for name := range np.Limits {
			if name != nsv1.ResourceNodes {
				ext[name] = struct{}{}
			}
		}
	}
	names := make([]corev1.ResourceName, 0, len(ext))
	for n := range ext {
		names = append(names, n)
	}
	s.d = newDims(names)

	s.typeKeys = map[string]struct{}{corev1.LabelArchStable: {}, corev1.LabelOSStable: {}, corev1.LabelInstanceTypeStable: {}}
	zoneSet := map[string]struct{}{}
	for _, np := range s.in.NodePools {
		for _, it := range np.InstanceTypes {
			for k := range it.Labels {
				s.typeKeys[k] = struct{}{}
			}
			for _, o := range it.Offerings {
				zoneSet[o.Zone] = struct{}{}
			}
		}
	}
	delete(s.typeKeys, corev1.LabelTopologyZone)
	delete(s.typeKeys, nsv1.LabelCapacityType)
	for _, n := range s.in.Nodes {
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zoneSet[z] = struct{}{}
		}
	}
	zones := make([]string, 0, len(zoneSet))
	for z := range zoneSet {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	s.topo = newTopology(zones)
	s.zoneLoad = make([]int32, len(zones))
	s.slots = slots{ix: map[[2]string]int{}}
	s.buildDaemons(s.in.DaemonSets)
	if err := s.buildPools(); err != nil {
		return fmt.Errorf("preparing node pools: %w", err)
	}
	s.spot = s.spotSlots()
	s.reserved = s.slotMask(func(i int) bool { return s.slots.ct[i] == nsv1.CapacityTypeReserved })

	pods := sortedByKey(s.in.Pods)
	cl := newClassifier(s.d)
	for _, p := range pods {
		cl.add(p)
	}
	s.classes = cl.classes
	s.classOf = make(map[*corev1.Pod]*podClass, len(pods))
	for _, c := range s.classes {
		for _, p := range c.pods {
			s.classOf[p] = c
		}
	}
	softTaints := slices.ContainsFunc(s.pools, func(p *pool) bool {
		return slices.ContainsFunc(p.np.Taints, func(t corev1.Taint) bool { return softTaint(&t) })
	})
	for _, c := range s.classes {
		if err := s.topo.buildVariants(c, s.opts.PreferencePolicy, softTaints); err != nil {
			return err
		}
		s.state[c] = &classState{left: c.pods}
	}
	// Anti-affinity terms of pods already running are groups too (the
	// symmetric check), so they must exist before classes are matched.
	for _, n := range s.in.Nodes {
		for _, p := range n.Pods {
			if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				if g, err := s.topo.groupFor(p, term.TopologyKey, term.LabelSelector, term.Namespaces, term.NamespaceSelector, term.MatchLabelKeys, term.MismatchLabelKeys); err == nil {
					g.hasOwner = true
				}
			}
		}
	}
	s.initKeys()
	// Which groups count each class, and whether any zone group touches it.
	for _, c := range s.classes {
		for _, g := range s.topo.groups {
			if g.matches(c.rep.Namespace, c.rep.Labels) {
				c.matches = append(c.matches, g.id)
				switch g.scope {
				case scopeZone:
					c.zoneRelevant = true
				case scopeOther:
					c.keyRel |= 1 << g.vk.ix
				}
			}
		}
		for _, v := range c.variants {
			if v.zoneScoped {
				c.zoneRelevant = true
			}
			for _, k := range v.constraints {
				if k.g.scope == scopeOther {
					c.keyRel |= 1 << k.g.vk.ix
				}
			}
		}
	}
	s.markBalanced()
	return s.buildNodes()
}

func (s *solver) buildNodes() error {
	nodes := append([]*ExistingNode(nil), s.in.Nodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].InFlight != nodes[j].InFlight {
			return !nodes[i].InFlight
		}
		return nodes[i].Name < nodes[j].Name
	})
	for _, n := range nodes {
		ns := &nodeState{n: n, free: s.d.fromList(n.Allocatable), idx: len(s.nodes)}
		if _, ok := n.Allocatable[corev1.ResourcePods]; !ok {
			ns.free[dimPods] = 110
		}
		ns.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
		for _, t := range n.Taints {
			if t.Key == nsv1.UnregisteredTaint.Key {
				continue
			}
			ns.node.Spec.Taints = append(ns.node.Spec.Taints, t)
		}
		ns.zone = s.topo.zoneOf(n.Labels)
		ns.vals = s.nodeVals(n.Labels)
		for _, p := range n.Pods {
			ns.free.sub(s.d.podRequests(p))
			ns.ports = append(ns.ports, podHostPorts(p)...)
			s.countExisting(&ns.host, p)
		}
		s.nodes = append(s.nodes, ns)
	}
	return nil
}

// countExisting tallies a pod already on a node into every group it matches
// and every anti-affinity group it owns.
func (s *solver) countExisting(h *host, p *corev1.Pod) {
	for _, g := range s.topo.groups {
		if g.matches(p.Namespace, p.Labels) {
			s.bump(g, h, 1, 0)
		}
	}
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return
	}
	for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		g, err := s.topo.groupFor(p, term.TopologyKey, term.LabelSelector, term.Namespaces, term.NamespaceSelector, term.MatchLabelKeys, term.MismatchLabelKeys)
		if err != nil {
			continue
		}
		g.hasOwner = true
		s.bump(g, h, 0, 1)
	}
}

func (s *solver) bump(g *group, h *host, n, owners int32) {
	g.total += n
	switch g.scope {
	case scopeHostname:
		h.inc(g.id, n, owners)
	case scopeZone:
		if h.zone >= 0 {
			g.zone[h.zone] += n
			g.owners[h.zone] += owners
		}
	case scopeOther:
		if val := h.val(g.vk.ix); val >= 0 && int(val) < len(g.zone) {
			g.zone[val] += n
			g.owners[val] += owners
		}
	}
}

// round places every class that still has pods using its r-th variant.
func (s *solver) round(r int) {
	var active []*podClass
	for _, c := range s.classes {
		if len(s.state[c].left) > 0 && r < len(c.variants) {
			active = append(active, c)
		}
	}
	if len(active) == 0 {
		return
	}
	// Classes that need other pods' presence (pod affinity) go last so the
	// pods they follow are already placed; then larger pods first.
	sort.SliceStable(active, func(i, j int) bool {
		ai, aj := hasAffinity(active[i].variants[r]), hasAffinity(active[j].variants[r])
		if ai != aj {
			return !ai
		}
		a, b := active[i].req, active[j].req
		if a[dimCPU] != b[dimCPU] {
			return a[dimCPU] > b[dimCPU]
		}
		if a[dimMemory] != b[dimMemory] {
			return a[dimMemory] > b[dimMemory]
		}
		return active[i].id < active[j].id
	})
	for _, c := range active {
		v := c.variants[r]
		if v.fits == nil {
			v.fits = make([]*poolFit, len(s.pools))
			for i, p := range s.pools {
				v.fits[i] = s.cachedFit(c, v, p)
			}
		}
	}
	s.widenDomains(active, r)
	s.planRound(active, r)
	s.planKeys(active, r)
	for _, c := range active {
		s.placeOnNodes(c, c.variants[r])
	}
	for _, p := range s.pools {
		var items []*item
		for _, c := range active {
			v := c.variants[r]
			if len(s.state[c].left) > 0 && v.fits[p.idx].ok {
				items = append(items, &item{c: c, v: v, f: v.fits[p.idx], st: s.state[c]})
			}
		}
		if len(items) > 0 {
			s.pack(p, items)
		}
	}
	for _, g := range s.topo.groups {
		clear(g.planned)
	}
	for _, c := range active {
		st := s.state[c]
		st.quota, st.planned, st.allowed = nil, false, nil
		st.kq, st.kplan = nil, 0
	}
}

func hasAffinity(v *variant) bool {
	for _, k := range v.constraints {
		if k.kind == kindAffinity {
			return true
		}
	}
	return false
}

func (s *solver) nodeCompatible(c *podClass, v *variant, n *nodeState) bool {
	// Cached per variant in a slice by node: placement asks for every
	// node and every class, and a map per node was a quarter of a solve
	// onto 1,000 nodes.
	if v.onNode == nil {
		v.onNode = make([]int8, len(s.nodes))
	}
	switch v.onNode[n.idx] {
	case compatYes:
		return true
	case compatNo:
		return false
	}
	ok := !n.n.MarkedForDeletion && v.unsupported == ""
	if ok {
		match, err := c.nodeAffinity().Match(n.node)
		ok = err == nil && match && v.reqs.Matches(n.n.Labels)
	}
	if ok {
		_, untolerated := findUntolerated(n.node.Spec.Taints, c.rep.Spec.Tolerations)
		ok = !untolerated
	}
	v.onNode[n.idx] = compatNo
	if ok {
		v.onNode[n.idx] = compatYes
	}
	return ok
}

// A variant's onNode entries: not yet checked, compatible, not.
const (
	compatUnknown int8 = iota
	compatYes
	compatNo
)

// nodeAffinityOnly is nodeCompatible without the taint check.
func (s *solver) nodeAffinityOnly(c *podClass, v *variant, n *nodeState) bool {
	if n.n.MarkedForDeletion {
		return false
	}
	match, err := c.nodeAffinity().Match(n.node)
	return err == nil && match && v.reqs.Matches(n.n.Labels)
}

// canHost checks topology, inverse anti-affinity and host ports for one more
// pod of c on h, whose zone is z (-1 when not yet pinned; the caller pins).
func (s *solver) canHost(c *podClass, v *variant, h *host, z int) bool {
	st := s.state[c]
	if st.quota != nil {
		if z < 0 || st.quota[z] == 0 {
			return false
		}
	}
	for _, k := range v.constraints {
		g := k.g
		if g.scope == scopeZone && k.kind == kindAntiAffinity && z >= 0 && g.zone[z] > 0 {
			// Quotas were planned before pods the term matches were
			// given theirs; whichever is placed first keeps the zone.
			return false
		}
		if g.scope != scopeHostname {
			continue
		}
		n, _ := h.count(g.id)
		switch k.kind {
		case kindSpread:
			self := int32(0)
			if k.self {
				self = 1
			}
			if n+self > k.maxSkew {
				return false
			}
		case kindAntiAffinity:
			if n > 0 {
				return false
			}
		case kindAffinity:
			if n == 0 && !(g.total == 0 && k.self) {
				return false
			}
		}
	}
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		switch g.scope {
		case scopeHostname:
			hc := h.get(gi)
			if hc.owners > 0 || hc.limit > 0 && hc.n+1 > hc.limit {
				return false
			}
		case scopeZone:
			if g.hasOwner && z >= 0 && g.owners[z] > 0 {
				return false
			}
		}
	}
	if len(c.ports) > 0 && portsConflict(c.ports, h.ports) {
		return false
	}
	return s.keysOK(c, v, h)
}

// record counts one placed pod of c on h in zone z.
func (s *solver) record(c *podClass, v *variant, h *host, z int) {
	st := s.state[c]
	if st.quota != nil && z >= 0 && st.quota[z] > 0 {
		st.quota[z]--
	}
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		g.total++
		switch g.scope {
		case scopeHostname:
			h.inc(gi, 1, 0)
		case scopeZone:
			if z >= 0 {
				g.zone[z]++
				if st.planned && g.planned[z] > 0 {
					g.planned[z]--
				}
			}
		}
	}
	for _, k := range v.constraints {
		switch {
		case k.kind == kindSpread && k.required && k.g.scope == scopeHostname:
			h.restrict(k.g.id, k.maxSkew)
		case k.kind != kindAntiAffinity || !k.required:
		case k.g.scope == scopeHostname:
			h.inc(k.g.id, 0, 1)
		case k.g.scope == scopeZone:
			if z >= 0 {
				k.g.owners[z]++
			}
		}
	}
	s.recordKeys(c, v, h)
	if len(c.ports) > 0 {
		h.ports = append(h.ports, c.ports...)
	}
}

// noteLimit notes that limit d of pool p (-1: its node count) refused the
// class, replacing an earlier note of the same limit: the figures it
// quotes change as the solve plans, and the latest are the ones that held.
func (st *classState) noteLimit(p *pool, d int, why string) {
	k := [2]int{p.idx, d}
	if i, ok := st.limitWhy[k]; ok {
		st.why[i] = why
		return
	}
	if st.limitWhy == nil {
		st.limitWhy = map[[2]int]int{}
	}
	st.limitWhy[k] = len(st.why)
	st.why = append(st.why, why)
}

func (st *classState) note(why string) {
	for _, w := range st.why {
		if w == why {
			return
		}
	}
	st.why = append(st.why, why)
}

func joinReasons(rs []string) string { return strings.Join(rs, "; ") }
