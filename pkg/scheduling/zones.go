package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

func findUntolerated(taints []corev1.Taint, tolerations []corev1.Toleration) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations, scheduleTaints, false)
}

// universe is the set of zones a class variant could land in: zones of
// compatible existing nodes and zones of the offerings of compatible pools.
func (s *solver) universe(c *podClass, v *variant) []bool {
	return s.zonesOf(c, v, false)
}

// domains is the set of zones kube-scheduler may count for a spread: every
// zone where a node matching the pod's node affinity exists or could be
// launched, tainted ones included unless the spread honours taints. It is a
// superset of universe, so skew computed against it is never optimistic.
func (s *solver) domains(c *podClass, v *variant, honorTaints bool) []bool {
	return s.zonesOf(c, v, !honorTaints)
}

func (s *solver) zonesOf(c *podClass, v *variant, ignoreTaints bool) []bool {
	u := make([]bool, len(s.topo.zones))
	for _, n := range s.nodes {
		if n.zone < 0 {
			continue
		}
		if s.nodeCompatible(c, v, n) || ignoreTaints && s.nodeAffinityOnly(c, v, n) {
			u[n.zone] = true
		}
	}
	for i, p := range s.pools {
		f := v.fits[i]
		if ignoreTaints {
			// Domains: any node whose labels match, fitting or not.
			for si := range s.slots.ct {
				if f.domainSlots&(1<<si) != 0 {
					u[s.slots.zone[si]] = true
				}
			}
			continue
		}
		if !f.ok {
			continue
		}
		var m uint64
		for ti, pt := range p.types {
			if f.types.has(ti) {
				m |= pt.slots & f.slots
			}
		}
		for si := range s.slots.ct {
			if m&(1<<si) != 0 {
				u[s.slots.zone[si]] = true
			}
		}
	}
	return u
}

// planZones hands a zone-relevant class per-zone quotas for this round:
// zones its anti-affinity or inverse anti-affinity forbids get 0, zone
// affinity narrows to the zones holding matching pods (or one zone for
// self-affinity), and zone spread water-fills the class's pods over the
// allowed zones so every spread group stays within maxSkew, counting what
// earlier classes of this round were promised.
func (s *solver) planZones(c *podClass, v *variant) {
	st := s.state[c]
	nz := len(s.topo.zones)
	u := s.universe(c, v)
	q := make([]int32, nz)
	for z := range q {
		if u[z] {
			q[z] = -1
		}
	}
	var spreads []*constraint
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
		case kindSpread:
			spreads = append(spreads, k)
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
	if len(spreads) > 0 {
		honor := true
		for _, k := range spreads {
			honor = honor && k.honorTaints
		}
		q = s.waterFill(c, st, s.domains(c, v, honor), q, spreads)
		st.planned = true
	}
	st.quota = q
}

// bestZone picks the zone with the cheapest offering for the class, ties by name.
func (s *solver) bestZone(c *podClass, v *variant, q []int32) int {
	best, bestPrice := -1, 0.0
	for i, p := range s.pools {
		f := v.fits[i]
		if !f.ok {
			continue
		}
		for ti, pt := range p.types {
			if !f.types.has(ti) {
				continue
			}
			for si := range s.slots.ct {
				if pt.slots&f.slots&(1<<si) == 0 {
					continue
				}
				z := s.slots.zone[si]
				if q[z] == 0 {
					continue
				}
				pr := pt.price[si]
				if best < 0 || pr < bestPrice || pr == bestPrice && z < best {
					best, bestPrice = z, pr
				}
			}
		}
		if best >= 0 {
			return best
		}
	}
	for z := range q {
		if q[z] != 0 {
			return z
		}
	}
	return -1
}

// waterFill assigns the class's remaining pods one at a time to the allowed
// zone with the fewest matching pods, as long as every spread constraint's
// skew (against the minimum over its domains) stays within maxSkew.
func (s *solver) waterFill(c *podClass, st *classState, u []bool, q []int32, spreads []*constraint) []int32 {
	nz := len(q)
	assigned := make([]int32, nz)
	domains := 0
	for z := range u {
		if u[z] {
			domains++
		}
	}
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
				if int32(domains) >= k.minDomains {
					first := true
					for d := 0; d < nz; d++ {
						if !u[d] {
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
			if ok && (best < 0 || load < bestLoad) {
				best, bestLoad = z, load
			}
		}
		if best < 0 {
			st.note(fmt.Sprintf("%s: every allowed zone would exceed the skew", spreads[0].text))
			break
		}
		assigned[best]++
		for _, gi := range c.matches {
			if g := s.topo.groups[gi]; g.scope == scopeZone {
				g.planned[best]++
			}
		}
	}
	return assigned
}
