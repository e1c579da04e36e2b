package scheduling

import (
	"math"
)

// Choosing the type of a new bin by value. Real catalogs are not
// proportional: burstable types sell two vCPUs for a tenth of a cent, memory
// families sell GiB at a third of the general-purpose price, and small types
// run out of pod slots (ENI limits) long before cpu or memory. A single
// best-value type for the whole remaining demand therefore overpays: the
// cheapest plan puts each kind of pod on the type that sells what it needs,
// and mixes complementary pods on one node. So each new bin gets the type
// whose simulated fill holds the most worth per dollar, where a pod's worth
// is what its class costs per pod packed alone on its own best type.

// shortlistLen is how many of its cheapest-per-pod types each class
// nominates as candidates for the bins it may join.
const shortlistLen = 4

// worth fills it.worth and it.short: the lowest $/h per pod of packing the
// class alone (whole pods per node) and the types that achieve the lowest
// such costs.
func (s *solver) worth(p *pool, it *item) {
	if it.worthDone {
		return
	}
	it.worthDone = true
	it.worth, it.short = s.cheapestPerPod(p, it, math.Inf(1))
}

// cheapestPerPod returns the lowest $/h per pod of packing it alone on one
// of the pool's types priced below the given price, and up to
// shortlistLen types achieving the lowest such costs, cheapest first.
func (s *solver) cheapestPerPod(p *pool, it *item, below float64) (float64, []int) {
	type cand struct {
		ti   int
		cost float64
	}
	var best [shortlistLen]cand
	n := 0
	for ti, pt := range p.types {
		mask := pt.slots & it.f.slots
		if !it.f.types.has(ti) || mask == 0 || !s.targetOK(p, ti, it) {
			continue
		}
		per := perNode(it.c.req, pt.alloc)
		if per <= 0 {
			continue
		}
		if it.v.hostScoped || len(it.c.ports) > 0 {
			per = 1
		}
		price := s.slotPrice(pt, mask)
		if price >= below {
			continue
		}
		cost := p.typeCost(ti, price) / float64(per)
		if p.limitMode && p.mvCharged {
			content := it.c.req.clone()
			for d := range content {
				content[d] *= per
			}
			cost = s.contentCost(p, ti, content, price) / float64(per)
		}
		// Insertion into the short list, cheapest first.
		if n < shortlistLen {
			n++
		} else if cost >= best[n-1].cost {
			continue
		}
		i := n - 1
		for i > 0 && best[i-1].cost > cost {
			best[i] = best[i-1]
			i--
		}
		best[i] = cand{ti, cost}
	}
	if n == 0 {
		return 0, nil
	}
	short := make([]int, 0, n)
	for _, c := range best[:n] {
		short = append(short, c.ti)
	}
	return best[0].cost, short
}

// perNode is how many pods of request req fit in alloc.
func perNode(req, alloc vec) int64 {
	per := int64(math.MaxInt64)
	for d, r := range req {
		if r > 0 {
			per = min(per, alloc[d]/r)
		}
	}
	return per
}

// slotPrice is the type's cheapest price in the given slots.
func (s *solver) slotPrice(pt *poolType, mask uint64) float64 {
	mask &= pt.slots
	if mask == pt.slots {
		return pt.minPrice
	}
	price := math.Inf(1)
	for si := range s.slots.ct {
		if mask&(1<<si) != 0 {
			price = math.Min(price, pt.price[si])
		}
	}
	return price
}

// targetChoice remembers the last choice so bulk demand, which fills bin
// after bin alike, is not re-simulated for every bin.
type targetChoice struct {
	anchor *item
	target int
	use    []int64 // pods per group (fillIndex) of the simulated fill
}

// chooseByValue picks the type of a new bin for anchor among the types the
// live items nominate: the one whose simulated fill (the anchor, then the
// dot-product order fill uses) holds the most worth per dollar. It returns
// -1 when no nominated type can take the anchor; the caller falls back to
// chooseTarget.
func (s *solver) chooseByValue(p *pool, anchor *item, fx *fillIndex, last *targetChoice) int {
	return s.chooseByValueBelow(p, anchor, fx, last, math.Inf(1))
}

// chooseByValueBelow is chooseByValue among types whose price is below
// the given one.
func (s *solver) chooseByValueBelow(p *pool, anchor *item, fx *fillIndex, last *targetChoice, below float64) int {
	if last.anchor == anchor && last.target >= 0 {
		again := true
		for g, u := range last.use {
			if u == 0 {
				continue
			}
			if left, live := fx.groupLeft(g); !live || 2*u > left {
				again = false
				break
			}
		}
		if again && p.types[last.target].slots&anchor.f.slots&s.quotaSlots(anchor.st) != 0 {
			return last.target
		}
	}
	best, _, bestUse := s.bestTarget(p, anchor, fx, below)
	*last = targetChoice{anchor: anchor, target: best, use: bestUse}
	return best
}

// bestTarget simulates the anchor's candidate types and returns the best,
// its worth per dollar and the pods per group of its simulated fill. Only
// types priced below the given price are candidates.
func (s *solver) bestTarget(p *pool, anchor *item, fx *fillIndex, below float64) (int, float64, []int64) {
	s.groupWorth(p, fx)
	s.worth(p, anchor)
	allowed := anchor.f.slots & s.quotaSlots(anchor.st)
	// Live pods per group, and the candidate types they nominate.
	live := make([]int64, len(fx.groups))
	seen := map[int]bool{}
	var cands []int
	nominate := func(short []int) {
		for _, ti := range short {
			if !seen[ti] {
				seen[ti] = true
				cands = append(cands, ti)
			}
		}
	}
	nominate(anchor.short)
	for g, grp := range fx.groups {
		for _, m := range grp.members {
			if it := fx.items[m]; !it.dead {
				live[g] += int64(len(it.st.left))
			}
		}
		rep := fx.items[grp.rep]
		if live[g] > 0 && intersects(rep.f.types, anchor.f.types) {
			nominate(rep.short)
		}
	}
	anchorGroup, ok := fx.groupOf[anchor]
	if !ok {
		anchorGroup = -1
	}
	cnt := make([]int64, len(fx.groups))
	use := make([]int64, len(fx.groups))
	best, bestEff, bestValue := -1, 0.0, 0.0
	var bestUse []int64
	for _, ti := range cands {
		pt := p.types[ti]
		if !anchor.f.types.has(ti) || pt.slots&allowed == 0 || !anchor.c.req.fits(pt.alloc) || !s.withinLimits(p, pt) || !s.targetOK(p, ti, anchor) {
			continue
		}
		price := s.slotPrice(pt, allowed)
		if price >= below {
			continue
		}
		value := s.simulate(pt, ti, anchor, anchorGroup, fx, live, cnt, use)
		cost := p.typeCost(ti, price)
		if p.limitMode && p.mvCharged {
			// Charged for what the fill holds, not for the type.
			content := make(vec, len(anchor.c.req))
			if anchorGroup < 0 {
				content.add(anchor.c.req)
			}
			for g, u := range use {
				if u > 0 {
					for d, r := range fx.items[fx.groups[g].rep].c.req {
						content[d] += u * r
					}
				}
			}
			cost = s.contentCost(p, ti, content, price)
		}
		eff := value / cost
		// At equal value per dollar, fewer larger nodes: less overhead and
		// fewer launches.
		if best < 0 || eff > bestEff*(1+1e-9) || eff >= bestEff*(1-1e-9) && value > bestValue*(1+1e-9) {
			best, bestEff, bestValue = ti, eff, value
			bestUse = append(bestUse[:0], use...)
		}
	}
	return best, bestEff, bestUse
}

// groupWorth computes each group's worth once, on its first item, and
// hands it to the others: they are alike in everything worth depends on.
func (s *solver) groupWorth(p *pool, fx *fillIndex) {
	for _, grp := range fx.groups {
		rep := fx.items[grp.rep]
		if rep.worthDone {
			continue
		}
		s.worth(p, rep)
		for _, m := range grp.members {
			if it := fx.items[m]; !it.worthDone {
				it.worth, it.short, it.worthDone = rep.worth, rep.short, true
			}
		}
	}
}

// withinLimits reports whether one node of pt fits the pool's headroom.
func (s *solver) withinLimits(p *pool, pt *poolType) bool {
	return p.exceeds(pt.capacity, nil) < 0
}

// simulate fills a bin of type pt with the anchor and then, as fill does,
// the group whose request best matches the free capacity, ignoring
// topology; several pods of a group are added at once (half of what still
// fits) so large nodes cost few steps. live holds each group's pending
// pods. It returns the worth packed and the pods used per group.
func (s *solver) simulate(pt *poolType, ti int, anchor *item, anchorGroup int, fx *fillIndex, live, cnt, use []int64) float64 {
	alloc := pt.alloc
	used := anchor.c.req.clone()
	value := anchor.worth
	for g, grp := range fx.groups {
		use[g], cnt[g] = 0, 0
		rep := fx.items[grp.rep]
		if !rep.f.types.has(ti) || rep.f.slots&pt.slots == 0 || grp.seed {
			continue
		}
		cnt[g] = live[g]
	}
	if anchorGroup >= 0 {
		cnt[anchorGroup] = max(0, cnt[anchorGroup]-1)
		use[anchorGroup] = 1
	}
	for {
		best, bestScore := -1, -1.0
		for g, grp := range fx.groups {
			if cnt[g] <= 0 {
				continue
			}
			rep := fx.items[grp.rep]
			if !used.fitsWith(rep.c.req, alloc) {
				cnt[g] = 0
				continue
			}
			score := fillScore(rep, used, alloc)
			if score > bestScore {
				best, bestScore = g, score
			}
		}
		if best < 0 {
			return value
		}
		rep := fx.items[fx.groups[best].rep]
		room := int64(math.MaxInt64)
		for d, r := range rep.c.req {
			if r > 0 {
				room = min(room, (alloc[d]-used[d])/r)
			}
		}
		k := max(1, min(cnt[best], (room+1)/2))
		for d, r := range rep.c.req {
			used[d] += k * r
		}
		cnt[best] -= k
		use[best] += k
		value += float64(k) * rep.worth
	}
}

// fillScore ranks a pod of it for a bin with used of alloc taken: the dot
// product of its normalised request with the free capacity, so the pod that
// best matches what is left goes first and cpu and memory fill together.
func fillScore(it *item, used, alloc vec) float64 {
	score := 0.0
	for d, r := range it.c.req {
		if alloc[d] > 0 && r > 0 {
			a := float64(alloc[d])
			score += float64(r) / a * float64(alloc[d]-used[d]) / a
		}
	}
	return score
}
