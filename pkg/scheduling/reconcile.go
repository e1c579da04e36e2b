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
			why := fmt.Sprintf("%s: zone %s could not take its share", k.text, s.topo.zones[minZ])
			evicted := false
			for z := range g.zone {
				if g.zone[z]-g.zone[minZ] > k.maxSkew && s.evictOne(g, z, owners, why) {
					evicted = true
					break
				}
			}
			if !evicted {
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
			if s.domains(c, v, false)[z] {
				return true
			}
		}
	}
	return false
}

// evictOne takes back the last-placed pod of an owning class in zone z,
// from a new claim or else from a nomination.
func (s *solver) evictOne(g *group, z int, owners []*podClass, why string) bool {
	isOwner := func(c *podClass) bool {
		for _, o := range owners {
			if o == c {
				return true
			}
		}
		return false
	}
	for i := len(s.noms) - 1; i >= 0; i-- {
		nom := s.noms[i]
		n := s.nodeByName(nom.Node)
		c := s.classOf[nom.Pod]
		if n == nil || n.zone != z || !isOwner(c) {
			continue
		}
		st := s.state[c]
		st.left = append(st.left, nom.Pod)
		st.note(why)
		n.free.add(c.req)
		s.noms = append(s.noms[:i], s.noms[i+1:]...)
		s.uncount(c, &n.host, z)
		return true
	}
	for bi := len(s.bins) - 1; bi >= 0; bi-- {
		b := s.bins[bi]
		if b.zone != z {
			continue
		}
		for i := len(b.pods) - 1; i >= 0; i-- {
			c := b.podCls[i]
			if !isOwner(c) {
				continue
			}
			st := s.state[c]
			st.left = append(st.left, b.pods[i])
			st.note(why)
			b.used.sub(c.req)
			b.pods = append(b.pods[:i], b.pods[i+1:]...)
			b.podCls = append(b.podCls[:i], b.podCls[i+1:]...)
			s.uncount(c, &b.host, z)
			return true
		}
	}
	return false
}

func (s *solver) uncount(c *podClass, h *host, z int) {
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		g.total--
		if g.scope == scopeZone {
			g.zone[z]--
		} else if g.scope == scopeHostname {
			h.inc(gi, -1, 0)
		}
	}
}

func (s *solver) nodeByName(name string) *nodeState {
	for _, n := range s.nodes {
		if n.n.Name == name {
			return n
		}
	}
	return nil
}
