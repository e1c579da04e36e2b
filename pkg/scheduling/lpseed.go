package scheduling

import (
	"math"
	"sort"
)

const (
	// lpSeedIter caps the cutting-plane rounds of the seeding LP; real
	// catalogs converge in 15–25, near-proportional ones are abandoned
	// early and left to the greedy packer, which is already near the
	// bound there.
	lpSeedIter = 25
	// lpRoundUp: a fill the LP uses for at least 1 − lpRoundUp of a node
	// gets a whole node; fill tops it up with pods left over.
	lpRoundUp = 0.3
	// lpSeedClasses: above this many items the dense master LP costs more
	// than it saves; the greedy packer works alone.
	lpSeedClasses = 128
)

// seedFromLP opens the bins of the packing LP's solution before the greedy
// packer runs. The LP (see PackingLowerBound) over the pool's types and the
// items' pods knows which pods belong together on which type; each of its
// fills becomes as many bins of that type as the solution uses nodes of it
// (rounded down, or up from lpRoundUp below), filled with the fill's whole
// pods through tryAdd, so every constraint still applies. What is left is
// for the greedy packer. It returns the bins it opened.
func (s *solver) seedFromLP(p *pool, rest []*item) []*bin {
	var its []*item
	var cls []boundClass
	for _, it := range rest {
		if len(it.st.left) > 0 && !it.dead {
			its = append(its, it)
			cls = append(cls, boundClass{cpu: float64(it.c.req[dimCPU]), mem: float64(it.c.req[dimMemory]), n: float64(len(it.st.left))})
		}
	}
	if len(its) == 0 || len(its) > lpSeedClasses {
		return nil
	}
	var tys []*boundType
	index := map[*boundType]int{}
	for ti, pt := range p.types {
		if !s.withinLimits(p, pt) {
			continue
		}
		t := &boundType{name: pt.it.Name, cpu: float64(pt.alloc[dimCPU]), mem: float64(pt.alloc[dimMemory]), pods: float64(pt.alloc[dimPods]), price: p.typeCost(ti, pt.minPrice), fits: make([]bool, len(its))}
		if t.cpu <= 0 || t.mem <= 0 || t.pods < 1 {
			continue
		}
		fitsAny := false
		for k, it := range its {
			t.fits[k] = it.f.types.has(ti) && it.f.slots&pt.slots != 0 && it.c.req.fits(pt.alloc) && s.targetOK(p, ti, it)
			fitsAny = fitsAny || t.fits[k]
		}
		if !fitsAny {
			continue
		}
		t.whole = t.maxPods(cls) <= wholeFillPods
		tys = append(tys, t)
		index[t] = ti
	}
	tys = pruneDominated(tys)
	if len(tys) == 0 {
		return nil
	}
	_, pats := solveConfigLP(cls, tys, 0, lpSeedIter)
	sort.SliceStable(pats, func(i, j int) bool { return pats[i].nodes > pats[j].nodes })
	var opened []*bin
	for _, pat := range pats {
		ti := index[pat.t]
		for n := int(math.Floor(pat.nodes + lpRoundUp + 1e-9)); n > 0; n-- {
			if !s.canOpen(p) {
				return opened
			}
			var b *bin
			for k, w := range pat.w {
				it := its[k]
				for c := int(math.Floor(w + 1e-9)); c > 0 && len(it.st.left) > 0; c-- {
					if b == nil {
						b = s.open(p, it, ti)
					}
					if !s.tryAdd(b, it, false) {
						break
					}
				}
			}
			if b == nil {
				break
			}
			if len(b.pods) == 0 {
				s.closeEmpty(b)
				break
			}
			opened = append(opened, b)
		}
	}
	return opened
}
