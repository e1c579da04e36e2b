package scheduling

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// poolFit is what one class variant may use of one pool.
type poolFit struct {
	ok     bool
	reason string
	types  bitset // pool type indices that match the labels and fit one pod
	slots  uint64 // (zone, capacity type) slots the pod allows
	// custom narrows pool-level label keys the pod constrains (team In [a]).
	custom Requirements
	sig    string
	// taintBlocked: everything matches but a pool taint is not tolerated.
	taintBlocked bool
	// domainSlots are the slots of every type whose labels match, whether or
	// not a pod fits: nodes there are spread domains all the same.
	domainSlots uint64
}

// cachedFit is fitPool shared by every class variant with the same node
// requirements, tolerations and requests: a fit depends on nothing else,
// and workloads whose pods differ only in labels and topology rules have
// thousands of classes but a few dozen fits. Sharing also lets the packer
// treat such classes alike (see fillIndex).
func (s *solver) cachedFit(c *podClass, v *variant, p *pool) *poolFit {
	if s.fitCache == nil {
		s.fitCache = map[string]*poolFit{}
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(p.idx))
	b.WriteByte('|')
	b.WriteString(v.unsupported)
	b.WriteByte('|')
	if v.avoidSoftTaints {
		b.WriteString("soft")
	}
	b.WriteByte('|')
	b.WriteString(s.keyFitReason(p, v))
	b.WriteByte('|')
	for _, x := range c.req {
		b.WriteString(strconv.FormatInt(x, 36))
		b.WriteByte(',')
	}
	b.WriteByte('|')
	for _, k := range v.reqs.Keys() {
		for _, r := range v.reqs[k].selectorRequirements() {
			b.WriteString(r.Key)
			b.WriteByte(' ')
			b.WriteString(string(r.Operator))
			for _, val := range r.Values {
				b.WriteByte(' ')
				b.WriteString(val)
			}
			b.WriteByte(';')
		}
		b.WriteByte('/')
	}
	b.WriteByte('|')
	for _, t := range c.rep.Spec.Tolerations {
		b.WriteString(t.Key)
		b.WriteByte('|')
		b.WriteString(string(t.Operator))
		b.WriteByte('|')
		b.WriteString(t.Value)
		b.WriteByte('|')
		b.WriteString(string(t.Effect))
		b.WriteByte(';')
	}
	key := b.String()
	if f, ok := s.fitCache[key]; ok {
		return f
	}
	f := s.fitPool(c, v, p)
	s.fitCache[key] = f
	return f
}

// fitPool evaluates a class variant against a pool: taints, the pod's node
// requirements against the pool's labels and each type's labels and
// offerings, and whether one pod fits the type at all.
func (s *solver) fitPool(c *podClass, v *variant, p *pool) *poolFit {
	f := &poolFit{}
	if p.dropped != "" {
		f.reason = fmt.Sprintf("pool %q %s", p.np.Name, p.dropped)
		return f
	}
	taintReason := ""
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), p.np.Taints, c.rep.Spec.Tolerations, scheduleTaints, false); bad {
		taintReason = fmt.Sprintf("pool %q: taint %s not tolerated", p.np.Name, taintText(t))
	}
	if v.unsupported != "" {
		f.reason = fmt.Sprintf("pool %q: %s", p.np.Name, v.unsupported)
		return f
	}
	if v.avoidSoftTaints && taintReason == "" {
		if t, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), p.np.Taints, c.rep.Spec.Tolerations, softTaint, false); bad {
			f.reason = fmt.Sprintf("pool %q: PreferNoSchedule taint %s not tolerated (such a pool is used only when no other fits)", p.np.Name, taintText(t))
			return f
		}
	}
	if r := s.keyFitReason(p, v); r != "" {
		f.reason = r
		return f
	}
	f.slots = p.slots
	var typeReqs []*Requirement
	for _, k := range v.reqs.Keys() {
		r := v.reqs[k]
		switch {
		case k == corev1.LabelTopologyZone:
			f.slots &= s.slotMask(func(i int) bool { return r.Matches(s.topo.zones[s.slots.zone[i]], true) })
			if f.slots == 0 {
				f.reason = fmt.Sprintf("pool %q: requirement %s matches none of its offered zones", p.np.Name, r)
				return f
			}
		case k == nsv1.LabelCapacityType:
			f.slots &= s.slotMask(func(i int) bool { return r.Matches(s.slots.ct[i], true) })
			if f.slots == 0 {
				f.reason = fmt.Sprintf("pool %q: requirement %s matches none of its offered capacity types", p.np.Name, r)
				return f
			}
		case k == corev1.LabelHostname:
			if !r.Has(newNodeHostname) {
				f.reason = fmt.Sprintf("pool %q: requirement %s names existing nodes only", p.np.Name, r)
				return f
			}
		case k == nsv1.LabelNodePool:
			if !r.Has(p.np.Name) {
				f.reason = fmt.Sprintf("pool %q: requirement %s excludes the pool", p.np.Name, r)
				return f
			}
		default:
			if _, typed := s.typeKeys[k]; typed {
				typeReqs = append(typeReqs, r)
				continue
			}
			pr := p.reqs.Get(k)
			if pr == nil {
				if !r.AllowsAbsent() {
					f.reason = fmt.Sprintf("pool %q: requirement %s but the pool sets no label %s", p.np.Name, r, k)
					return f
				}
				continue
			}
			in := pr.Intersect(r)
			if !in.Satisfiable() {
				f.reason = fmt.Sprintf("pool %q: requirement %s conflicts with the pool's %s", p.np.Name, r, pr)
				return f
			}
			if f.custom == nil {
				f.custom = Requirements{}
			}
			f.custom[k] = in
			f.sig += in.String() + ";"
		}
	}
	f.types = newBitset(len(p.types))
	matched, fitted := 0, 0
	var largest vec
	labelFail := make([]int, len(typeReqs))
	for i, pt := range p.types {
		ok := true
		for j, r := range typeReqs {
			v, present := pt.it.Labels[r.Key]
			if !r.Matches(v, present) {
				labelFail[j]++
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		matched++
		f.domainSlots |= pt.slots & f.slots
		if largest == nil {
			largest = pt.alloc.clone()
		} else {
			for d := range largest {
				largest[d] = max(largest[d], pt.alloc[d])
			}
		}
		if !c.req.fits(pt.alloc) {
			continue
		}
		fitted++
		if pt.slots&f.slots == 0 {
			continue
		}
		f.types.set(i)
	}
	switch {
	case matched == 0:
		worst := 0
		for j := range labelFail {
			if labelFail[j] > labelFail[worst] {
				worst = j
			}
		}
		f.reason = fmt.Sprintf("pool %q: requirement %s matches none of its %d instance types", p.np.Name, typeReqs[worst], len(p.types))
	case fitted == 0:
		f.reason = fmt.Sprintf("pool %q: incompatible with all %d matching instance types: %s", p.np.Name, matched, s.tooBig(c.req, largest))
	case f.types.count() == 0:
		f.reason = fmt.Sprintf("pool %q: none of the %d fitting instance types has an available offering in the allowed zones and capacity types", p.np.Name, fitted)
	case taintReason != "":
		// Still a topology domain for spreads that ignore taints.
		f.reason, f.taintBlocked = taintReason, true
	default:
		f.ok = true
	}
	if taintReason != "" && !f.ok && !f.taintBlocked {
		f.reason = taintReason
	}
	return f
}

func (s *solver) tooBig(req, largest vec) string {
	var parts []string
	for d := range req {
		if req[d] > largest[d] {
			parts = append(parts, fmt.Sprintf("needs %s but the largest allows %s", s.d.format(d, req[d]), s.d.format(d, largest[d])))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no single type fits %s together", s.reqText(req))
	}
	return strings.Join(parts, ", ")
}

func (s *solver) reqText(req vec) string {
	var parts []string
	for d := range req {
		if req[d] != 0 && d != dimPods {
			parts = append(parts, s.d.format(d, req[d]))
		}
	}
	return strings.Join(parts, ", ")
}

func (s *solver) slotMask(keep func(i int) bool) uint64 {
	var m uint64
	for i := range s.slots.ct {
		if keep(i) {
			m |= 1 << i
		}
	}
	return m
}

func taintText(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}
