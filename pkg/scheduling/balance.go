package scheduling

import (
	"fmt"
	"sort"
)

// Zone spread over every matching pod. kube-scheduler measures a pod's
// zone spread over all pods its selector matches — plain pods, other
// spreading pods, pods that are bound to one zone — and checks it for
// each pod as it binds, in an order we do not control. A plan is valid
// only if its final state passes that check for every spreading pod. So
// every zone group some pending pod spreads over is balanced: each pod
// the selector matches, whatever its own rules, is given a zone quota
// that keeps the group within its smallest maxSkew over the spreading
// pods' domains (placed pods, existing pods and this round's quotas
// count). Then any spreading pod may sit in any zone, and the minimum
// zone always has room for one more.
//
// A round plans zones in three steps: classes bound to few zones first
// (they cannot move), then the rest water-fill the emptiest zones, then
// classes following other pods (pod affinity) where those pods went. A
// repair pass finally moves quotas of freely placed pods from the fullest
// zone of a group to its emptiest while the group is out of balance (a
// zone-bound class planned late can tip it).

// markBalanced flags the zone groups a pending class spreads over with a
// required spread and records their smallest maxSkew and largest
// minDomains.
func (s *solver) markBalanced() {
	for _, c := range s.classes {
		for _, v := range c.variants {
			for _, k := range v.constraints {
				g := k.g
				if k.kind != kindSpread || !k.required || g.scope == scopeHostname {
					continue
				}
				if !g.balanced || k.maxSkew < g.skew {
					g.skew = k.maxSkew
				}
				g.minDomains = max(g.minDomains, k.minDomains)
				g.balanced = true
				if g.dom == nil {
					g.dom = make([]bool, g.size())
				}
			}
		}
	}
	for _, c := range s.classes {
		for _, gi := range c.matches {
			if g := s.topo.groups[gi]; g.balanced && g.scope == scopeZone {
				c.balanced = append(c.balanced, g)
			}
		}
		for _, k := range c.variants[0].constraints {
			c.affine = c.affine || k.kind == kindAffinity && k.required
		}
	}
}

// widenDomains adds the domains of this round's spreading classes to
// their groups: a balance over more zones than a pod's own domains is
// never looser than its own.
func (s *solver) widenDomains(active []*podClass, r int) {
	for _, c := range active {
		v := c.variants[r]
		for _, k := range v.constraints {
			if k.kind != kindSpread || !k.required || !k.g.balanced {
				continue
			}
			dom := s.domains(c, v, k.honorTaints, k.ignoreAffinity)
			if k.g.scope == scopeOther {
				dom, _ = s.keyValues(c, v, k.g.vk.ix, true, k.honorTaints, k.ignoreAffinity)
			}
			for z, in := range dom {
				if in {
					k.g.dom[z] = true
				}
			}
		}
	}
}

// planRound hands every zone-relevant active class its zone quotas for
// round r, in the order described above, and repairs the balance.
func (s *solver) planRound(active []*podClass, r int) {
	var first, follow []*podClass
	for _, c := range active {
		if !c.zoneRelevant {
			continue
		}
		if hasZoneAffinity(c.variants[r]) {
			follow = append(follow, c)
		} else {
			first = append(first, c)
		}
	}
	for _, c := range first {
		s.allowZones(c, c.variants[r])
	}
	// Zone-bound classes first: they cannot make room; the rest level
	// around them.
	sort.SliceStable(first, func(i, j int) bool {
		return s.state[first[i]].nAllowed < s.state[first[j]].nAllowed
	})
	for _, c := range first {
		s.planZones(c, c.variants[r])
	}
	for _, c := range follow {
		s.allowZones(c, c.variants[r])
		s.planZones(c, c.variants[r])
	}
	s.repairBalance(active, r)
}

func hasZoneAffinity(v *variant) bool {
	for _, k := range v.constraints {
		if k.kind == kindAffinity && k.g.scope == scopeZone {
			return true
		}
	}
	return false
}

// allowZones computes the zones a class may use this round: its universe,
// minus zones its anti-affinity or an inverse anti-affinity forbids,
// narrowed by zone affinity to the zones holding matching pods (or one
// zone for self-affinity).
func (s *solver) allowZones(c *podClass, v *variant) {
	st := s.state[c]
	u := s.universe(c, v)
	q := make([]int32, len(s.topo.zones))
	for z := range q {
		if u[z] {
			q[z] = -1
		}
	}
	for _, k := range v.constraints {
		g := k.g
		if g.scope != scopeZone {
			continue
		}
		switch k.kind {
		case kindAntiAffinity:
			for z := range q {
				if g.zone[z]+g.planned[z] > 0 {
					q[z] = 0
				} else if k.self && q[z] != 0 {
					q[z] = 1
				}
			}
		case kindAffinity:
			present := false
			for z := range q {
				if g.zone[z]+g.planned[z] > 0 {
					present = true
				}
			}
			switch {
			case present:
				for z := range q {
					if g.zone[z]+g.planned[z] == 0 {
						q[z] = 0
					}
				}
			case k.self:
				chosen := s.bestZone(c, v, q)
				for z := range q {
					if z != chosen {
						q[z] = 0
					}
				}
			default:
				for z := range q {
					q[z] = 0
				}
				st.note(fmt.Sprintf("%s: no pod matches it in any zone", k.text))
			}
		}
	}
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		if g.scope == scopeZone && g.hasOwner {
			for z := range q {
				if g.owners[z] > 0 {
					q[z] = 0
				}
			}
		}
	}
	st.quota = q
	st.nAllowed = 0
	for _, x := range q {
		if x != 0 {
			st.nAllowed++
		}
	}
}

// planZones turns the class's allowed zones into quotas: a class that
// spreads over a zone group, or that a balanced group counts, water-fills
// its pods one at a time into the allowed zone with the fewest matching
// pods, keeping its own spreads within maxSkew and every balanced group
// it belongs to within its skew. A class bound to one zone is not held
// back by the balance: it has nowhere else to go, and the others level
// around it.
func (s *solver) planZones(c *podClass, v *variant) {
	st := s.state[c]
	var spreads []*constraint
	for _, k := range v.constraints {
		if k.kind == kindSpread && k.g.scope == scopeZone {
			spreads = append(spreads, k)
		}
	}
	if len(spreads) == 0 && len(c.balanced) == 0 && st.nAllowed != 1 {
		return // quota is the allowed zones, unlimited
	}
	// A class bound to one zone (self-affinity) is planned there, so the
	// classes after it that follow the same pods see where they go.
	q := st.quota
	nz := len(q)
	var dom []bool
	ndom := int32(0)
	if len(spreads) > 0 {
		honor, ignoreAffinity := true, false
		for _, k := range spreads {
			honor = honor && k.honorTaints
			ignoreAffinity = ignoreAffinity || k.ignoreAffinity
		}
		dom = s.domains(c, v, honor, ignoreAffinity)
		for _, in := range dom {
			if in {
				ndom++
			}
		}
	}
	free := st.nAllowed > 1
	assigned := make([]int32, nz)
	cnt := func(g *group, z int) int32 { return g.zone[z] + g.planned[z] }
	for range st.left {
		best := -1
		var bestLoad int32
		for z := 0; z < nz; z++ {
			if q[z] == 0 || q[z] > 0 && assigned[z] >= q[z] {
				continue
			}
			ok := true
			var load int32
			for _, k := range spreads {
				minCount := int32(0)
				if ndom >= k.minDomains {
					first := true
					for d := 0; d < nz; d++ {
						if !dom[d] {
							continue
						}
						if x := cnt(k.g, d); first || x < minCount {
							minCount, first = x, false
						}
					}
				}
				self := int32(0)
				if k.self {
					self = 1
				}
				if cnt(k.g, z)+self-minCount > k.maxSkew {
					ok = false
					break
				}
				load += cnt(k.g, z)
			}
			for _, g := range c.balanced {
				if !ok || !g.dom[z] {
					continue
				}
				if free && cnt(g, z)+1-g.minCount() > g.skew {
					ok = false
				}
				load += cnt(g, z)
			}
			if ok && (best < 0 || load < bestLoad) {
				best, bestLoad = z, load
			}
		}
		if best < 0 {
			text := "zone balance"
			if len(spreads) > 0 {
				text = spreads[0].text
			} else if len(c.balanced) > 0 {
				text = fmt.Sprintf("topology spread %s (the pod counts in it)", c.balanced[0].desc)
			}
			st.note(fmt.Sprintf("%s: every allowed zone would exceed the skew", text))
			break
		}
		assigned[best]++
		s.zoneLoad[best]++
		for _, gi := range c.matches {
			if g := s.topo.groups[gi]; g.scope == scopeZone {
				g.planned[best]++
			}
		}
	}
	st.allowed = q
	st.quota = assigned
	st.planned = true
}

// repairBalance moves quotas of freely placed member classes from the
// fullest zone of a balanced group to its emptiest while the group is out
// of balance.
func (s *solver) repairBalance(active []*podClass, r int) {
	for _, g := range s.topo.groups {
		if !g.balanced || g.scope != scopeZone {
			continue
		}
		var members []*podClass
		for _, c := range active {
			st := s.state[c]
			if st.planned && st.nAllowed > 1 && belongs(c, g) {
				members = append(members, c)
			}
		}
		for guard := 0; guard < 1<<20; guard++ {
			hi, lo := -1, -1
			for z, in := range g.dom {
				if !in {
					continue
				}
				if hi < 0 || g.zone[z]+g.planned[z] > g.zone[hi]+g.planned[hi] {
					hi = z
				}
				if lo < 0 || g.zone[z]+g.planned[z] < g.zone[lo]+g.planned[lo] {
					lo = z
				}
			}
			if hi < 0 || g.zone[hi]+g.planned[hi]-g.zone[lo]-g.planned[lo] <= g.skew {
				break
			}
			if !s.moveQuota(members, r, hi, lo) {
				break
			}
		}
	}
}

func belongs(c *podClass, g *group) bool {
	for _, b := range c.balanced {
		if b == g {
			return true
		}
	}
	return false
}

// moveQuota moves one pod's quota of some member from zone hi to lo if
// the class may use lo and its other balanced groups and own spreads stay
// within skew there.
func (s *solver) moveQuota(members []*podClass, r, hi, lo int) bool {
	cnt := func(g *group, z int) int32 { return g.zone[z] + g.planned[z] }
next:
	for _, c := range members {
		st := s.state[c]
		if st.quota[hi] <= 0 || st.allowed[lo] == 0 || st.allowed[lo] > 0 && st.quota[lo] >= st.allowed[lo] {
			continue
		}
		for _, g := range c.balanced {
			if g.dom[lo] && cnt(g, lo)+1-g.minCount() > g.skew {
				continue next
			}
			// Taking the pod out of hi must not leave hi below the
			// group's other zones either.
			if g.dom[hi] && g.maxCount()-(cnt(g, hi)-1) > g.skew {
				continue next
			}
		}
		for _, k := range c.variants[r].constraints {
			if k.kind == kindSpread && k.g.scope == scopeZone && !k.g.balanced {
				continue next // its own spread was checked against other counts; leave it
			}
		}
		st.quota[hi]--
		st.quota[lo]++
		for _, gi := range c.matches {
			if g := s.topo.groups[gi]; g.scope == scopeZone {
				g.planned[hi]--
				g.planned[lo]++
			}
		}
		return true
	}
	return false
}
