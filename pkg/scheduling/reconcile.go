package scheduling

import "fmt"

// reconcileSpread is the safety net for zone spread: quotas are handed out
// before packing, so a zone whose share could not be placed (limits, no
// capacity) may leave the others ahead. For every balanced group, a zone
// holding a pod that spreads over it must stay within that pod's maxSkew
// of the group's emptiest domain; while one does not, the newest pod the
// group counts there is taken back (or, when only pods that were already
// running count, a spreading pod there), and reported unschedulable.
func (s *solver) reconcileSpread() bool {
	nz := len(s.topo.zones)
	// owners[g][z]: placed pods of this solve with a required spread over g
	// in zone z; skew[g][z]: the smallest of their maxSkews.
	owners := map[*group][]int32{}
	skews := map[*group][]int32{}
	ownerOf := func(c *podClass, z int, delta int32) {
		for _, k := range c.variants[0].constraints {
			if k.kind != kindSpread || !k.required || !k.g.balanced || k.g.scope != scopeZone {
				continue
			}
			o := owners[k.g]
			if o == nil {
				o = make([]int32, nz)
				owners[k.g], skews[k.g] = o, make([]int32, nz)
			}
			o[z] += delta
			if sk := skews[k.g]; sk[z] == 0 || k.maxSkew < sk[z] {
				sk[z] = k.maxSkew
			}
		}
	}
	for _, nom := range s.noms {
		if n := s.nodeByName(nom.Node); n != nil && n.zone >= 0 {
			ownerOf(s.classOf[nom.Pod], n.zone, 1)
		}
	}
	for _, b := range s.bins {
		if b.zone < 0 {
			continue
		}
		for _, c := range b.podCls {
			ownerOf(c, b.zone, 1)
		}
	}
	if len(owners) == 0 {
		return false
	}
	any := false
	for guard := 0; guard < 1<<20; guard++ {
		evicted := false
		for _, g := range s.topo.groups {
			o := owners[g]
			if o == nil {
				continue
			}
			m := g.minCount() // planned counts are cleared by now
			for z := range o {
				if o[z] == 0 || g.zone[z]-m <= skews[g][z] {
					continue
				}
				why := fmt.Sprintf("topology spread over %s: zone %s would be %d pods ahead of the emptiest zone", g.desc, s.topo.zones[z], g.zone[z]-m)
				in := func(h *host) bool { return h.zone == z }
				c, ok := s.evictOne(in, func(c *podClass) bool { return belongs(c, g) }, why)
				if !ok {
					c, ok = s.evictOne(in, func(c *podClass) bool { return ownsSpread(c, g) }, why)
				}
				if ok {
					ownerOf(c, z, -1)
					evicted, any = true, true
					break
				}
			}
		}
		if !evicted {
			return any
		}
	}
	return any
}

// reconcileAffinity takes back placed pods whose required pod affinity no
// longer holds in the final state: the pods they followed were given a
// zone quota but not placed, or were taken back. A pod needs another
// matching pod in its zone (or on its node), unless no other pod matches
// anywhere and it matches its own term.
func (s *solver) reconcileAffinity() bool {
	any := false
	check := func(c *podClass, h *host, z int) bool {
		for _, k := range c.variants[0].constraints {
			if k.kind != kindAffinity || !k.required {
				continue
			}
			self := int32(0)
			if k.self {
				self = 1
			}
			var here int32
			switch k.g.scope {
			case scopeZone:
				if z >= 0 {
					here = k.g.zone[z]
				}
			case scopeHostname:
				here, _ = h.count(k.g.id)
			case scopeOther:
				if val := h.val(k.g.vk.ix); val >= 0 {
					here = k.g.zone[val]
				}
			}
			if here-self > 0 || k.self && k.g.total-self == 0 {
				continue
			}
			return false
		}
		return true
	}
	for changed := true; changed; {
		changed = false
		for i := len(s.noms) - 1; i >= 0; i-- {
			nom := s.noms[i]
			c := s.classOf[nom.Pod]
			n := s.nodeByName(nom.Node)
			if !c.affine || n == nil || check(c, &n.host, n.zone) {
				continue
			}
			st := s.state[c]
			st.left = append(st.left, nom.Pod)
			st.note("pod affinity: the pods it follows could not be placed")
			n.free.add(c.req)
			s.noms = append(s.noms[:i], s.noms[i+1:]...)
			s.uncount(c, &n.host, n.zone)
			changed, any = true, true
		}
		for _, b := range s.bins {
			for i := len(b.pods) - 1; i >= 0; i-- {
				c := b.podCls[i]
				if !c.affine || check(c, &b.host, b.zone) {
					continue
				}
				st := s.state[c]
				st.left = append(st.left, b.pods[i])
				st.note("pod affinity: the pods it follows could not be placed")
				b.used.sub(c.req)
				b.pods = append(b.pods[:i], b.pods[i+1:]...)
				b.podCls = append(b.podCls[:i], b.podCls[i+1:]...)
				s.uncount(c, &b.host, b.zone)
				changed, any = true, true
			}
		}
	}
	return any
}

func ownsSpread(c *podClass, g *group) bool {
	for _, k := range c.variants[0].constraints {
		if k.kind == kindSpread && k.required && k.g == g {
			return true
		}
	}
	return false
}

// evictOne takes back the newest pod of a class pick accepts on a host
// in accepts (a zone, a value of a key), from a nomination or else from a
// new claim, and returns its class.
func (s *solver) evictOne(in func(*host) bool, pick func(*podClass) bool, why string) (*podClass, bool) {
	for i := len(s.noms) - 1; i >= 0; i-- {
		nom := s.noms[i]
		n := s.nodeByName(nom.Node)
		c := s.classOf[nom.Pod]
		if n == nil || !in(&n.host) || !pick(c) {
			continue
		}
		st := s.state[c]
		st.left = append(st.left, nom.Pod)
		st.note(why)
		n.free.add(c.req)
		s.noms = append(s.noms[:i], s.noms[i+1:]...)
		s.uncount(c, &n.host, n.zone)
		return c, true
	}
	for bi := len(s.bins) - 1; bi >= 0; bi-- {
		b := s.bins[bi]
		if !in(&b.host) {
			continue
		}
		for i := len(b.pods) - 1; i >= 0; i-- {
			c := b.podCls[i]
			if !pick(c) {
				continue
			}
			st := s.state[c]
			st.left = append(st.left, b.pods[i])
			st.note(why)
			b.used.sub(c.req)
			b.pods = append(b.pods[:i], b.pods[i+1:]...)
			b.podCls = append(b.podCls[:i], b.podCls[i+1:]...)
			s.uncount(c, &b.host, b.zone)
			return c, true
		}
	}
	return nil, false
}

func (s *solver) uncount(c *podClass, h *host, z int) {
	for _, gi := range c.matches {
		g := s.topo.groups[gi]
		g.total--
		switch g.scope {
		case scopeZone:
			if z >= 0 {
				g.zone[z]--
			}
		case scopeHostname:
			h.inc(gi, -1, 0)
		case scopeOther:
			if val := h.val(g.vk.ix); val >= 0 {
				g.zone[val]--
			}
		}
	}
}

func (s *solver) nodeByName(name string) *nodeState {
	if s.nodeIndex == nil {
		s.nodeIndex = make(map[string]*nodeState, len(s.nodes))
		for _, n := range s.nodes {
			if _, dup := s.nodeIndex[n.n.Name]; !dup {
				s.nodeIndex[n.n.Name] = n
			}
		}
	}
	return s.nodeIndex[name]
}
