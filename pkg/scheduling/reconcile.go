package scheduling

import "fmt"

// reconcileSpread is a safety net for zone spread: quotas are handed out
// before packing, so a zone whose share could not be placed (limits, no
// capacity) would leave the others ahead. Pods placed on new claims in the
// fullest zone are taken back until every required zone spread is within
// maxSkew again; they are reported unschedulable.
func (s *solver) reconcileSpread() {
	for _, g := range s.topo.groups {
		if g.scope != scopeZone {
			continue
		}
		var k *constraint
		var owners []*podClass
		for _, c := range s.classes {
			for _, v := range c.variants {
				for _, kk := range v.constraints {
					if kk.g == g && kk.kind == kindSpread && kk.required {
						if k == nil || kk.maxSkew < k.maxSkew {
							k = kk
						}
						owners = append(owners, c)
					}
				}
			}
		}
		if k == nil {
			continue
		}
		for guard := 0; guard < 100000; guard++ {
			minZ, maxZ := -1, -1
			for z := range g.zone {
				if !s.zoneInUse(z, owners) {
					continue
				}
				if minZ < 0 || g.zone[z] < g.zone[minZ] {
					minZ = z
				}
				if maxZ < 0 || g.zone[z] > g.zone[maxZ] {
					maxZ = z
				}
			}
			if minZ < 0 || g.zone[maxZ]-g.zone[minZ] <= k.maxSkew {
				break
			}
			if !s.evictOne(g, maxZ, owners, fmt.Sprintf("%s: zone %s could not take its share", k.text, s.topo.zones[minZ])) {
				break
			}
		}
	}
}

// zoneInUse reports whether any class owning the spread could land in zone z.
func (s *solver) zoneInUse(z int, owners []*podClass) bool {
	for _, c := range owners {
		for _, v := range c.variants {
			if v.fits == nil {
				continue
			}
			if s.universe(c, v)[z] {
				return true
			}
		}
	}
	return false
}

// evictOne removes the last-placed pod of an owning class from a new claim
// in zone z.
func (s *solver) evictOne(g *group, z int, owners []*podClass, why string) bool {
	for bi := len(s.bins) - 1; bi >= 0; bi-- {
		b := s.bins[bi]
		if b.zone != z {
			continue
		}
		for i := len(b.pods) - 1; i >= 0; i-- {
			c := b.podCls[i]
			isOwner := false
			for _, o := range owners {
				if o == c {
					isOwner = true
				}
			}
			if !isOwner {
				continue
			}
			st := s.state[c]
			st.left = append(st.left, b.pods[i])
			st.note(why)
			b.used.sub(c.req)
			b.pods = append(b.pods[:i], b.pods[i+1:]...)
			b.podCls = append(b.podCls[:i], b.podCls[i+1:]...)
			for _, gi := range c.matches {
				gg := s.topo.groups[gi]
				gg.total--
				if gg.scope == scopeZone {
					gg.zone[z]--
				} else if gg.scope == scopeHostname {
					b.inc(gi, -1, 0)
				}
			}
			return true
		}
	}
	return false
}
