package scheduling

import (
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
// launched (any node with nodeAffinityPolicy Ignore), tainted ones
// included unless the spread honours taints. It is a superset of
// universe, so skew computed against it is never optimistic.
func (s *solver) domains(c *podClass, v *variant, honorTaints, ignoreAffinity bool) []bool {
	if ignoreAffinity {
		u := make([]bool, len(s.topo.zones))
		for i := range u {
			u[i] = true
		}
		return u
	}
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
				// At one price, the zone with fewer pods planned: groups
				// that each pick a zone spread over the zones.
				if best < 0 || pr < bestPrice || pr == bestPrice && (s.zoneLoad[z] < s.zoneLoad[best] || s.zoneLoad[z] == s.zoneLoad[best] && z < best) {
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
