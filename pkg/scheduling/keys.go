package scheduling

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Topology keys other than hostname and zone. A spread or a pod
// (anti-)affinity term may name any node label: the capacity type
// (nodesmith.sh/capacity-type), an instance-type label (instance type,
// architecture, family, …) or a label a NodePool's template or
// requirements set (a custom team label). Each such key is a valueKey;
// its groups count matching pods per value, the way zone groups count
// per zone.
//
// A new claim's value of a key comes from where the label comes from:
//   - the capacity type: the claim's slots, narrowed to one capacity type;
//   - an instance-type label: the claim's types, narrowed to the types with
//     the value of the claim's target type;
//   - a NodePool label or a single-valued requirement: fixed;
//   - a NodePool requirement listing several values: one of them, written
//     into the claim's requirements (and so its labels);
//   - anything else (no such label, or a requirement such as Exists that
//     lists no values): the claim's node has no known value. A pod whose
//     required spread or affinity needs the key cannot go to such a pool,
//     and the pool says so.
//
// The domains of a key for a spreading pod are the values the pools it
// may use can produce (requirements ∩ offerings) plus the values of the
// existing nodes, filtered like kube-scheduler filters nodes:
// nodeAffinityPolicy Honor (the default) keeps pools and nodes matching
// the pod's node affinity, nodeTaintsPolicy Ignore (the default) keeps
// tainted ones. A claim takes a value when its first pod the key concerns
// (one its groups count or one with a rule on the key) joins it.
//
// Required spreads are planned like zone spreads: every class a spread
// group counts is handed a quota per value that water-fills the values
// with the fewest matching pods within maxSkew (minDomains honoured), so
// half of a service spread on capacity type lands on spot and half on
// on-demand; a claim pinned to a value only takes pods with quota there.
// Anti-affinity forbids values that hold a matching pod (self
// anti-affinity: one pod per value), affinity keeps to values that hold
// one (self affinity: the cheapest value). After packing, reconcileKeys
// checks the final state as kube-scheduler would and takes back pods that
// leave a value too far ahead.

// maxValueKeys bounds the distinct keys of one solve (a class's keys are a
// 64-bit set).
const maxValueKeys = 64

// Host values of a key that are not a value index.
const (
	valUnpinned int32 = -1
	valAbsent   int32 = -2
)

type valueKey struct {
	ix    int
	name  string
	vals  []string
	valIx map[string]int32
}

func (k *valueKey) intern(v string) int32 {
	if i, ok := k.valIx[v]; ok {
		return i
	}
	i := int32(len(k.vals))
	k.vals = append(k.vals, v)
	k.valIx[v] = i
	return i
}

func (t *topology) key(name string) *valueKey {
	if k, ok := t.keyIx[name]; ok {
		return k
	}
	k := &valueKey{ix: len(t.keys), name: name, valIx: map[string]int32{}}
	t.keys = append(t.keys, k)
	t.keyIx[name] = k
	return k
}

func (t *topology) sizeGroup(g *group) {
	n := len(g.vk.vals)
	g.zone, g.owners, g.planned = make([]int32, n), make([]int32, n), make([]int32, n)
}

// keySource says where a pool's nodes get a key's value from.
type keySource int

const (
	srcAbsent keySource = iota // no such label
	srcFixed                   // a template label or single-valued requirement
	srcCapacityType
	srcType // an instance-type label
	srcList // a requirement listing several values
	srcOpen // a requirement that lists no values (Exists, NotIn, Gt, …)
)

type keySrc struct {
	kind keySource
	val  int32   // srcFixed
	list []int32 // srcList, sorted
}

func (s *solver) classifyKey(p *pool, vk *valueKey) keySrc {
	switch {
	case vk.name == nsv1.LabelCapacityType:
		return keySrc{kind: srcCapacityType}
	}
	if v, ok := p.labels[vk.name]; ok {
		return keySrc{kind: srcFixed, val: vk.intern(v)}
	}
	if _, typed := s.typeKeys[vk.name]; typed {
		return keySrc{kind: srcType}
	}
	r := p.reqs.Get(vk.name)
	switch {
	case r == nil:
		return keySrc{kind: srcAbsent}
	case !r.Finite():
		return keySrc{kind: srcOpen}
	case len(r.Values()) == 0:
		return keySrc{kind: srcAbsent}
	}
	src := keySrc{kind: srcList}
	for _, v := range r.Values() {
		src.list = append(src.list, vk.intern(v))
	}
	return src
}

// src is where the pool's nodes get key ki's value from (absent for a key
// that appeared after initKeys, which no pod's rule can have).
func (p *pool) src(ki int) keySrc {
	if ki < len(p.keySrcs) {
		return p.keySrcs[ki]
	}
	return keySrc{kind: srcAbsent}
}

// typeLabel is instance type pt's value of key.
func typeLabel(pt *poolType, key string) (string, bool) {
	if v, ok := pt.it.Labels[key]; ok {
		return v, true
	}
	if key == corev1.LabelInstanceTypeStable {
		return pt.it.Name, true
	}
	return "", false
}

// initKeys learns the values of every key the groups use, from the pools
// and the existing nodes, and sizes the groups. It runs once every group
// of the solve's pods exists.
func (s *solver) initKeys() {
	t := s.topo
	for _, vk := range t.keys {
		for _, p := range s.pools {
			if p.keySrcs == nil {
				p.keySrcs = make([]keySrc, 0, len(t.keys))
			}
			src := s.classifyKey(p, vk)
			p.keySrcs = append(p.keySrcs, src)
			switch src.kind {
			case srcCapacityType:
				for si := range s.slots.ct {
					if p.slots&(1<<si) != 0 {
						vk.intern(s.slots.ct[si])
					}
				}
			case srcType:
				for _, pt := range p.types {
					if v, ok := typeLabel(pt, vk.name); ok {
						vk.intern(v)
					}
				}
			}
		}
		for _, n := range s.in.Nodes {
			if v, ok := n.Labels[vk.name]; ok {
				vk.intern(v)
			}
		}
	}
	for _, g := range t.groups {
		if g.scope == scopeOther {
			t.sizeGroup(g)
		}
	}
	t.keysSized = true
}

// nodeVals is an existing node's value of every key.
func (s *solver) nodeVals(lbls map[string]string) []int32 {
	if len(s.topo.keys) == 0 {
		return nil
	}
	out := make([]int32, len(s.topo.keys))
	for i, vk := range s.topo.keys {
		out[i] = valAbsent
		if v, ok := lbls[vk.name]; ok {
			out[i] = vk.intern(v)
			s.growGroups(vk)
		}
	}
	return out
}

// growGroups sizes the groups of vk after a late value (none are expected
// after initKeys, but a node label seen only here must not index past the
// counts).
func (s *solver) growGroups(vk *valueKey) {
	n := len(vk.vals)
	for _, g := range s.topo.groups {
		if g.vk == vk && len(g.zone) < n {
			for len(g.zone) < n {
				g.zone = append(g.zone, 0)
				g.owners = append(g.owners, 0)
				g.planned = append(g.planned, 0)
			}
			if g.dom != nil {
				for len(g.dom) < n {
					g.dom = append(g.dom, false)
				}
			}
		}
	}
}

// binVals is a new claim's starting value of every key: fixed by its
// pool, absent, or to be chosen by its first pod the key concerns.
func (s *solver) binVals(p *pool) []int32 {
	if len(s.topo.keys) == 0 {
		return nil
	}
	out := make([]int32, len(s.topo.keys))
	for i := range s.topo.keys {
		switch src := p.src(i); src.kind {
		case srcFixed:
			out[i] = src.val
		case srcAbsent, srcOpen:
			out[i] = valAbsent
		default:
			out[i] = valUnpinned
		}
	}
	return out
}

// listValues is the values a srcList key may take for fit f: the pool's
// list narrowed by the pod's own requirement on the key.
func (s *solver) listValues(p *pool, f *poolFit, ki int) []int32 {
	src := p.src(ki)
	r := f.custom.Get(s.topo.keys[ki].name)
	if r == nil {
		return src.list
	}
	var out []int32
	for _, v := range src.list {
		if r.Has(s.topo.keys[ki].vals[v]) {
			out = append(out, v)
		}
	}
	return out
}

// poolValues calls emit for every value of key ki a node of pool p could
// have for fit f, with the price of an offering giving it.
func (s *solver) poolValues(p *pool, f *poolFit, ki int, emit func(val int32, price float64)) {
	src := p.src(ki)
	if src.kind == srcAbsent || src.kind == srcOpen {
		return
	}
	vk := s.topo.keys[ki]
	var list []int32
	if src.kind == srcList {
		list = s.listValues(p, f, ki)
	}
	for ti, pt := range p.types {
		if !f.types.has(ti) {
			continue
		}
		m := pt.slots & f.slots
		if m == 0 {
			continue
		}
		tv := int32(-1)
		if src.kind == srcType {
			v, ok := typeLabel(pt, vk.name)
			if !ok {
				continue
			}
			tv = vk.intern(v)
		}
		for si := range s.slots.ct {
			if m&(1<<si) == 0 {
				continue
			}
			price := pt.price[si]
			switch src.kind {
			case srcFixed:
				emit(src.val, price)
			case srcCapacityType:
				emit(vk.intern(s.slots.ct[si]), price)
			case srcType:
				emit(tv, price)
			case srcList:
				for _, v := range list {
					emit(v, price)
				}
			}
		}
	}
}

// keyValues is the set of values of key ki for a class variant, with the
// cheapest price of each (+Inf for values only existing nodes have). With
// domain false: the values its pods could be placed in (compatible nodes,
// fitting pools). With domain true: its spread domains (see the top of
// this file).
func (s *solver) keyValues(c *podClass, v *variant, ki int, domain, honorTaints, ignoreAffinity bool) ([]bool, []float64) {
	vk := s.topo.keys[ki]
	set := make([]bool, len(vk.vals))
	price := make([]float64, len(vk.vals))
	for i := range price {
		price[i] = math.Inf(1)
	}
	emit := func(val int32, pr float64) {
		if int(val) < len(set) {
			set[val] = true
			price[val] = math.Min(price[val], pr)
		}
	}
	for i, p := range s.pools {
		f := v.fits[i]
		if f.ok || domain && !honorTaints && f.taintBlocked {
			s.poolValues(p, f, ki, emit)
		}
	}
	for _, n := range s.nodes {
		val := n.val(ki)
		if val < 0 || int(val) >= len(set) {
			continue
		}
		if s.nodeCompatible(c, v, n) || domain && !honorTaints && s.nodeAffinityOnly(c, v, n) {
			set[val] = true
		}
	}
	if domain && ignoreAffinity {
		for i := range set {
			set[i] = true
		}
	}
	return set, price
}

// keyNeeds is the set of keys a variant's required spreads and affinity
// terms need a value of (a node without the label cannot take the pod).
func (v *variant) keyNeeds() uint64 {
	var m uint64
	for _, k := range v.constraints {
		if k.g.scope == scopeOther && k.kind != kindAntiAffinity {
			m |= 1 << k.g.vk.ix
		}
	}
	return m
}

// keyFitReason says why pool p cannot take a pod of variant v because a
// key its rules need has no value there ("" when it can).
func (s *solver) keyFitReason(p *pool, v *variant) string {
	need := v.keyNeeds()
	if need == 0 {
		return ""
	}
	for _, k := range v.constraints {
		if k.g.scope != scopeOther || need&(1<<k.g.vk.ix) == 0 {
			continue
		}
		switch p.src(k.g.vk.ix).kind {
		case srcAbsent:
			return fmt.Sprintf("pool %q: its nodes have no %s label, which %s needs", p.np.Name, k.g.key, k.text)
		case srcOpen:
			return fmt.Sprintf("pool %q: its requirement %s lists no values, so %s cannot tell which %s its nodes get", p.np.Name, p.reqs.Get(k.g.key), k.text, k.g.key)
		}
	}
	return ""
}

// planKeys hands the active classes their per-value quotas for every key
// they are concerned with (see the top of this file).
func (s *solver) planKeys(active []*podClass, r int) {
	if len(s.topo.keys) == 0 {
		return
	}
	for _, c := range active {
		if c.keyRel == 0 {
			continue
		}
		st := s.state[c]
		st.kq = make([][]int32, len(s.topo.keys))
		for ki := range s.topo.keys {
			if c.keyRel&(1<<ki) != 0 {
				st.kq[ki] = s.planKey(c, c.variants[r], ki)
			}
		}
	}
}

// planKey is the quota of class c on key ki: per value, -1 unlimited, 0
// forbidden, else the pods the value may take.
func (s *solver) planKey(c *podClass, v *variant, ki int) []int32 {
	st := s.state[c]
	vk := s.topo.keys[ki]
	n := len(vk.vals)
	reach, price := s.keyValues(c, v, ki, false, false, false)
	q := make([]int32, n)
	for i := range q {
		if reach[i] {
			q[i] = -1
		}
	}
	cnt := func(g *group, i int) int32 { return g.zone[i] + g.planned[i] }
	// Cheaper values first among equals (spot before on-demand).
	better := func(a, b int) bool { return price[a] < price[b] || price[a] == price[b] && a < b }
	var spreads []*constraint
	for _, k := range v.constraints {
		g := k.g
		if g.vk != vk {
			continue
		}
		switch k.kind {
		case kindSpread:
			spreads = append(spreads, k)
		case kindAntiAffinity:
			for i := range q {
				if cnt(g, i) > 0 {
					q[i] = 0
				} else if k.self && q[i] != 0 {
					q[i] = 1
				}
			}
		case kindAffinity:
			present := false
			for i := range q {
				present = present || cnt(g, i) > 0
			}
			switch {
			case present:
				for i := range q {
					if cnt(g, i) == 0 {
						q[i] = 0
					}
				}
			case k.self:
				best := -1
				for i := range q {
					if q[i] != 0 && (best < 0 || better(i, best)) {
						best = i
					}
				}
				for i := range q {
					if i != best {
						q[i] = 0
					}
				}
			default:
				clear(q)
				st.note(fmt.Sprintf("%s: no pod matches it on any %s", k.text, vk.name))
			}
		}
	}
	var balanced []*group
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		if g.vk != vk {
			continue
		}
		if g.hasOwner {
			for i := range q {
				if g.owners[i] > 0 {
					q[i] = 0
				}
			}
		}
		if g.balanced {
			balanced = append(balanced, g)
		}
	}
	if len(spreads) == 0 && len(balanced) == 0 {
		return q
	}
	// Water-fill the class's pods into the allowed values with the fewest
	// matching pods, each spread within its maxSkew and each balanced group
	// the class counts in within the group's.
	type spreadDom struct {
		k    *constraint
		dom  []bool
		ndom int32
	}
	sd := make([]spreadDom, len(spreads))
	for i, k := range spreads {
		dom, _ := s.keyValues(c, v, ki, true, k.honorTaints, k.ignoreAffinity)
		sd[i] = spreadDom{k: k, dom: dom}
		for _, in := range dom {
			if in {
				sd[i].ndom++
			}
		}
	}
	nAllowed := 0
	for _, x := range q {
		if x != 0 {
			nAllowed++
		}
	}
	free := nAllowed > 1
	assigned := make([]int32, n)
	for range st.left {
		best := -1
		var bestLoad int32
		for i := 0; i < n; i++ {
			if q[i] == 0 || q[i] > 0 && assigned[i] >= q[i] {
				continue
			}
			ok := true
			var load int32
			for _, d := range sd {
				minCount := int32(0)
				if d.ndom >= d.k.minDomains {
					first := true
					for j, in := range d.dom {
						if in {
							if x := cnt(d.k.g, j); first || x < minCount {
								minCount, first = x, false
							}
						}
					}
				}
				self := int32(0)
				if d.k.self {
					self = 1
				}
				if cnt(d.k.g, i)+self-minCount > d.k.maxSkew {
					ok = false
					break
				}
				load += cnt(d.k.g, i)
			}
			for _, g := range balanced {
				if !ok || !g.dom[i] {
					continue
				}
				if free && cnt(g, i)+1-g.minCount() > g.skew {
					ok = false
				}
				load += cnt(g, i)
			}
			if ok && (best < 0 || load < bestLoad || load == bestLoad && better(i, best)) {
				best, bestLoad = i, load
			}
		}
		if best < 0 {
			text := ""
			if len(spreads) > 0 {
				text = spreads[0].text
			} else {
				text = fmt.Sprintf("topology spread %s (the pod counts in it)", balanced[0].desc)
			}
			st.note(fmt.Sprintf("%s: every allowed %s value would exceed the skew", text, vk.name))
			break
		}
		assigned[best]++
		for _, gi := range c.matches {
			if g := s.topo.groups[gi]; g.vk == vk {
				g.planned[best]++
			}
		}
	}
	st.kplan |= 1 << ki
	return assigned
}

// valueOK reports whether one more pod of c (variant v) may go to a host
// whose value of key ki is val: its quota, its own anti-affinity and
// affinity, and the anti-affinity of pods already there.
func (s *solver) valueOK(c *podClass, v *variant, ki int, val int32) bool {
	if val == valUnpinned {
		return true
	}
	st := s.state[c]
	if val >= 0 && st.kq != nil && st.kq[ki] != nil && st.kq[ki][val] == 0 {
		return false
	}
	for _, k := range v.constraints {
		g := k.g
		if g.vk == nil || g.vk.ix != ki {
			continue
		}
		if val < 0 {
			if k.kind != kindAntiAffinity {
				return false // a node without the label is no domain
			}
			continue
		}
		switch k.kind {
		case kindAntiAffinity:
			if g.zone[val] > 0 {
				return false
			}
		case kindAffinity:
			if g.zone[val] == 0 && !(g.total == 0 && k.self) {
				return false
			}
		}
	}
	if val < 0 {
		return true
	}
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		if g.vk != nil && g.vk.ix == ki && g.hasOwner && g.owners[val] > 0 {
			return false
		}
	}
	return true
}

// keysOK is valueOK for every key c is concerned with.
func (s *solver) keysOK(c *podClass, v *variant, h *host) bool {
	if c.keyRel == 0 {
		return true
	}
	for ki := range s.topo.keys {
		if c.keyRel&(1<<ki) != 0 && !s.valueOK(c, v, ki, h.val(ki)) {
			return false
		}
	}
	return true
}

// recordKeys counts one placed pod of c on h in its groups on other keys.
func (s *solver) recordKeys(c *podClass, v *variant, h *host) {
	if c.keyRel == 0 {
		return
	}
	st := s.state[c]
	for ki := range s.topo.keys {
		if c.keyRel&(1<<ki) == 0 {
			continue
		}
		val := h.val(ki)
		if val < 0 {
			continue
		}
		if st.kq != nil && st.kq[ki] != nil && st.kq[ki][val] > 0 {
			st.kq[ki][val]--
		}
		for _, gi := range c.matches {
			g := s.topo.groups[gi]
			if g.vk == nil || g.vk.ix != ki {
				continue
			}
			g.zone[val]++
			if st.kplan&(1<<ki) != 0 && g.planned[val] > 0 {
				g.planned[val]--
			}
		}
		for _, k := range v.constraints {
			if k.kind == kindAntiAffinity && k.required && k.g.vk != nil && k.g.vk.ix == ki {
				k.g.owners[val]++
			}
		}
	}
}

// pinKeys chooses b's value of every key it has none of yet that one more
// pod of it is concerned with: among the values the bin can still take
// (its slots within mask, its target type, its requirement's list), one
// the pod may use, the one with the most quota left, cheaper first. It
// returns the narrowed mask, the types the bin must keep (nil: all), the
// narrowed custom requirements and the keys pinned; ok false (nothing
// pinned) when some key has no usable value.
func (s *solver) pinKeys(b *bin, it *item, mask, grow uint64, custom Requirements) (uint64, bitset, Requirements, uint64, bool) {
	c := it.c
	var pinTypes bitset
	var pinned uint64
	undo := func() {
		for ki := range s.topo.keys {
			if pinned&(1<<ki) != 0 {
				b.vals[ki] = valUnpinned
			}
		}
	}
	p := b.p
	for ki, vk := range s.topo.keys {
		if c.keyRel&(1<<ki) == 0 || b.vals[ki] != valUnpinned {
			continue
		}
		src := p.src(ki)
		var cands []int32
		price := map[int32]float64{}
		switch src.kind {
		case srcCapacityType:
			for si := range s.slots.ct {
				if mask&grow&(1<<si) == 0 {
					continue
				}
				val := vk.intern(s.slots.ct[si])
				pr := p.types[b.target].price[si]
				if old, ok := price[val]; !ok {
					cands = append(cands, val)
					price[val] = pr
				} else if pr < old {
					price[val] = pr
				}
			}
		case srcType:
			if v, ok := typeLabel(p.types[b.target], vk.name); ok {
				cands = append(cands, vk.intern(v))
			}
		case srcList:
			r := custom.Get(vk.name)
			for _, val := range s.listValues(p, it.f, ki) {
				if r == nil || r.Has(vk.vals[val]) {
					cands = append(cands, val)
				}
			}
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
		best, bestScore := int32(-1), int32(0)
		for _, val := range cands {
			if int(val) >= len(vk.vals) || !s.valueOK(c, it.v, ki, val) {
				continue
			}
			score := int32(math.MaxInt32)
			if st := it.st; st.kq != nil && st.kq[ki] != nil && st.kq[ki][val] >= 0 {
				score = st.kq[ki][val]
			}
			if best < 0 || score > bestScore || score == bestScore && price[val] < price[best] {
				best, bestScore = val, score
			}
		}
		if best < 0 {
			undo()
			return 0, nil, nil, 0, false
		}
		b.vals[ki] = best
		pinned |= 1 << ki
		switch src.kind {
		case srcCapacityType:
			ct := vk.vals[best]
			mask &= s.slotMask(func(i int) bool { return s.slots.ct[i] == ct })
			if mask&grow == 0 {
				undo()
				return 0, nil, nil, 0, false
			}
		case srcType:
			if pinTypes == nil {
				pinTypes = newBitset(len(p.types))
				for ti := range p.types {
					pinTypes.set(ti)
				}
			}
			for ti, pt := range p.types {
				if v, ok := typeLabel(pt, vk.name); !ok || v != vk.vals[best] {
					pinTypes[ti/64] &^= 1 << (ti % 64)
				}
			}
		case srcList:
			if custom == nil {
				custom = Requirements{}
			} else {
				custom = custom.Clone()
			}
			custom.Add(NewRequirement(vk.name, corev1.NodeSelectorOpIn, vk.vals[best]))
			if custom.Satisfiable() != nil {
				undo()
				return 0, nil, nil, 0, false
			}
		}
	}
	return mask, pinTypes, custom, pinned, true
}

// unpin gives back the values pinKeys chose when the pod does not join.
func (b *bin) unpin(pinned uint64) {
	for ki := range b.vals {
		if pinned&(1<<ki) != 0 {
			b.vals[ki] = valUnpinned
		}
	}
}

// quotaCT is the slots of capacity types the class has no quota left in
// this round (0 when it has no capacity-type quota).
func (s *solver) quotaCT(st *classState) uint64 {
	vk, ok := s.topo.keyIx[nsv1.LabelCapacityType]
	if !ok || st.kq == nil || st.kq[vk.ix] == nil {
		return 0
	}
	q := st.kq[vk.ix]
	return s.slotMask(func(i int) bool {
		val, ok := vk.valIx[s.slots.ct[i]]
		return ok && q[val] == 0
	})
}

// typeQuotaOK reports whether a claim of type ti of pool p could take a
// pod of it: for every instance-type label the class has a quota on, the
// type's value still has quota.
func (s *solver) typeQuotaOK(p *pool, ti int, it *item) bool {
	st := it.st
	if it.c.keyRel == 0 || st.kq == nil {
		return true
	}
	for ki, vk := range s.topo.keys {
		if it.c.keyRel&(1<<ki) == 0 || p.src(ki).kind != srcType {
			continue
		}
		v, ok := typeLabel(p.types[ti], vk.name)
		if !ok {
			return false
		}
		val, ok := vk.valIx[v]
		if !ok || !s.valueOK(it.c, it.v, ki, val) {
			return false
		}
	}
	return true
}

// addPinnedTypeLabels writes the instance-type label values b is pinned
// to into its claim's requirements, so an in-flight claim already shows
// the value its node will have (a single-valued requirement is a label).
func (s *solver) addPinnedTypeLabels(b *bin, reqs Requirements) {
	for ki, vk := range s.topo.keys {
		if val := b.val(ki); val >= 0 && b.p.src(ki).kind == srcType && vk.name != corev1.LabelInstanceTypeStable {
			reqs.Add(NewRequirement(vk.name, corev1.NodeSelectorOpIn, vk.vals[val]))
		}
	}
}

// typePinned reports whether the item's claims in pool p are pinned to
// one value of an instance-type label.
func (s *solver) typePinned(p *pool, it *item) bool {
	if it.c.keyRel == 0 {
		return false
	}
	for ki := range s.topo.keys {
		if it.c.keyRel&(1<<ki) != 0 && p.src(ki).kind == srcType {
			return true
		}
	}
	return false
}

// reconcileKeys is reconcileSpread for the other keys: in the final
// state, a value holding a pod that spreads over a balanced group must be
// within that pod's maxSkew of the group's emptiest domain; while one is
// not, the newest pod the group counts there (else a spreading pod there)
// is taken back and reported unschedulable.
func (s *solver) reconcileKeys() bool {
	any := false
	for _, g := range s.topo.groups {
		if g.scope != scopeOther || !g.balanced {
			continue
		}
		ki := g.vk.ix
		n := g.size()
		own := make([]int32, n)
		skew := make([]int32, n)
		ownerOf := func(c *podClass, val int32, delta int32) {
			if val < 0 {
				return
			}
			for _, k := range c.variants[0].constraints {
				if k.kind == kindSpread && k.required && k.g == g {
					own[val] += delta
					if skew[val] == 0 || k.maxSkew < skew[val] {
						skew[val] = k.maxSkew
					}
				}
			}
		}
		for _, nom := range s.noms {
			if nd := s.nodeByName(nom.Node); nd != nil {
				ownerOf(s.classOf[nom.Pod], nd.val(ki), 1)
			}
		}
		for _, b := range s.bins {
			for _, c := range b.podCls {
				ownerOf(c, b.val(ki), 1)
			}
		}
		for guard := 0; guard < 1<<20; guard++ {
			evicted := false
			m := g.minCount()
			for val := 0; val < n; val++ {
				if own[val] == 0 || g.zone[val]-m <= skew[val] {
					continue
				}
				why := fmt.Sprintf("topology spread over %s: %s %s would be %d pods ahead of the emptiest value", g.desc, g.key, g.vk.vals[val], g.zone[val]-m)
				at := func(h *host) bool { return h.val(ki) == int32(val) }
				c, ok := s.evictOne(at, func(c *podClass) bool { return countsIn(c, g) }, why)
				if !ok {
					c, ok = s.evictOne(at, func(c *podClass) bool { return ownsSpread(c, g) }, why)
				}
				if ok {
					ownerOf(c, int32(val), -1)
					evicted, any = true, true
					break
				}
			}
			if !evicted {
				break
			}
		}
	}
	return any
}

func countsIn(c *podClass, g *group) bool {
	for _, gi := range c.matches {
		if gi == g.id {
			return true
		}
	}
	return false
}
