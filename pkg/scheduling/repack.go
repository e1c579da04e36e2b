package scheduling

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Repacking claims. The LP seeding and the value-driven packer leave a few
// large claims partly filled: the LP buys 1.6 memory nodes, a plan buys 2.
// Two moves fix most of it once packing is done, each kept only when the
// pool's cost drops:
//   - replace: the worst-filled claims are taken apart and their pods
//     re-placed on strictly cheaper types (small memory types, burstable
//     types), by value and, as a second attempt, each class on its own
//     cheapest type per pod;
//   - drain: small claims are emptied into the spare room of one other
//     claim each, without that claim growing, most expensive first (a
//     large memory node a third empty in cpu holds a dozen small nodes'
//     pods).
// Only pods without topology constraints, host ports or zone quotas take
// part: placing one records nothing, so a move can be undone exactly.

// repackTries caps how many claims one pack call tries to take apart (of
// the 4×repackTries worst filled).
const repackTries = 6

// repackable reports whether it's pods can be moved freely: nothing is
// recorded when one is placed.
func repackable(it *item) bool {
	return len(it.v.constraints) == 0 && len(it.c.ports) == 0 && len(it.c.matches) == 0 &&
		!it.c.zoneRelevant && it.st.quota == nil
}

// binCost is what the bin's claim will cost: the cheapest type in its
// types and slots that holds its pods.
func (s *solver) binCost(b *bin) float64 {
	best := math.Inf(1)
	for ti, pt := range b.p.types {
		if pt.minPrice >= best {
			break // cheapest first: nothing later is cheaper
		}
		if !b.types.has(ti) || pt.slots&b.slots == 0 || !b.used.fits(pt.alloc) {
			continue
		}
		best = math.Min(best, s.slotPrice(pt, b.slots))
	}
	return best
}

// binWaste is the price of the bin's unused share in its fullest dimension.
func (s *solver) binWaste(b *bin) float64 {
	if b.cur < 0 {
		return 0
	}
	alloc := b.p.types[b.cur].alloc
	fill := 0.0
	for d, u := range b.used {
		if alloc[d] > 0 {
			fill = math.Max(fill, float64(u)/float64(alloc[d]))
		}
	}
	return s.binCost(b) * (1 - fill)
}

// repack improves the bins of pool p from first on: the worst-filled ones
// whose pods are all movable are replaced by cheaper ones, then bins are
// drained into others' spare room.
func (s *solver) repack(p *pool, items []*item, first int) {
	var free []*item
	byClass := map[*podClass]*item{}
	for _, it := range items {
		if repackable(it) {
			free = append(free, it)
			byClass[it.c] = it
		}
	}
	if len(free) == 0 {
		return
	}
	type cand struct {
		b     *bin
		waste float64
	}
	var cands []cand
	for _, b := range s.bins[first:] {
		if b.p != p || len(b.pods) == 0 || b.reserved != "" {
			continue // a reservation's bin is paid for: not taken apart
		}
		ok := true
		for _, c := range b.podCls {
			if byClass[c] == nil {
				ok = false
				break
			}
		}
		if ok {
			cands = append(cands, cand{b, s.binWaste(b)})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].waste > cands[j].waste })
	tries := 0
	for _, c := range cands[:min(len(cands), 4*repackTries)] {
		if c.waste <= 0 || tries == repackTries {
			break
		}
		if !s.cheaperHome(p, c.b, byClass) {
			continue // already on the cheapest type any of its pods fits
		}
		tries++
		s.repackBin(p, c.b, free, byClass)
	}
	s.drain(p, free, byClass, first)
	for _, it := range free {
		it.dead = false
	}
}

// repackBin removes b and re-places its pods onto new bins of types
// cheaper than b, chosen by value or, in a second attempt, by each class's
// cheapest type per pod. It keeps the cheaper attempt when it costs less
// than b, and restores b otherwise.
func (s *solver) repackBin(p *pool, b *bin, free []*item, byClass map[*podClass]*item) {
	old := s.binCost(b)
	saved := b.copyState()
	binsCopy := append([]*bin(nil), s.bins...)
	nodesUsed := s.nodesUsed[p.idx]
	poolUsed := p.used.clone()
	lefts := make([][]*corev1.Pod, len(free))
	for i, it := range free {
		lefts[i] = it.st.left
	}
	restore := func() {
		*b = saved.copyState()
		s.bins = append(s.bins[:0], binsCopy...)
		s.nodesUsed[p.idx] = nodesUsed
		copy(p.used, poolUsed)
		for i, it := range free {
			it.st.left = lefts[i]
			it.dead = false
		}
	}
	// The items nominate their best types among the cheaper ones (their
	// usual short lists may hold only larger ones).
	shorts := make([][]int, len(free))
	for i, it := range free {
		s.worth(p, it)
		shorts[i] = it.short
		_, it.short = s.cheapestPerPod(p, it, old)
	}
	defer func() {
		for i, it := range free {
			it.short = shorts[i]
		}
	}()
	best, bestCost := -1, old*(1-1e-9)
	for mode := 0; mode < 2; mode++ {
		cost := s.replace(p, b, free, byClass, lefts, old, mode == 1)
		restore()
		if cost < bestCost {
			best, bestCost = mode, cost
		}
	}
	if best >= 0 {
		s.replace(p, b, free, byClass, lefts, old, best == 1)
		for _, it := range free {
			it.dead = false
		}
	}
}

// cheaperHome reports whether some pod of b fits a type priced below b.
func (s *solver) cheaperHome(p *pool, b *bin, byClass map[*podClass]*item) bool {
	old := s.binCost(b)
	seen := map[*podClass]bool{}
	for _, c := range b.podCls {
		if seen[c] {
			continue
		}
		seen[c] = true
		if _, short := s.cheapestPerPod(p, byClass[c], old); len(short) > 0 {
			return true
		}
	}
	return false
}

// copyState copies the bin with its own slices.
func (b *bin) copyState() bin {
	v := *b
	v.used = b.used.clone()
	v.types = append(bitset(nil), b.types...)
	v.pods = append([]*corev1.Pod(nil), b.pods...)
	v.podCls = append([]*podClass(nil), b.podCls...)
	return v
}

// replace takes b apart and re-places its pods, and returns what the new
// bins cost (+Inf when a pod found no place or they cost old or more).
// alone sizes each new bin as its anchor's cheapest type per pod instead of
// by value.
func (s *solver) replace(p *pool, b *bin, free []*item, byClass map[*podClass]*item, lefts [][]*corev1.Pod, old float64, alone bool) float64 {
	// b's pods go back to their items, ahead of the rest.
	back := map[*item][]*corev1.Pod{}
	for i, pod := range b.pods {
		it := byClass[b.podCls[i]]
		back[it] = append(back[it], pod)
	}
	for _, it := range free {
		if pods := back[it]; len(pods) > 0 {
			it.st.left = append(pods, it.st.left...)
		}
	}
	if p.hasLimit && b.cur >= 0 {
		c := b.charged()
		for d := range p.limit {
			p.used[d] -= c[d]
		}
	}
	s.nodesUsed[p.idx]--
	kept := s.bins[:0]
	for _, o := range s.bins {
		if o != b {
			kept = append(kept, o)
		}
	}
	s.bins = kept
	spent := 0.0
	last := targetChoice{target: -1}
	fx := newFillIndex(free)
	for spent < old {
		var anchor *item
		for _, it := range free {
			if len(it.st.left) > 0 && !it.dead {
				anchor = it
				break
			}
		}
		if anchor == nil || !s.canOpen(p) {
			break
		}
		target := -1
		if alone {
			if len(anchor.short) > 0 {
				target = anchor.short[0]
			}
		} else {
			target = s.chooseByValueBelow(p, anchor, fx, &last, old)
		}
		if target < 0 {
			anchor.dead = true
			continue
		}
		nb := s.open(p, anchor, target)
		if !s.tryAdd(nb, anchor, false) {
			s.closeEmpty(nb)
			anchor.dead = true
			continue
		}
		s.fill(nb, fx, false)
		spent += s.binCost(nb)
	}
	for i, it := range free {
		if len(it.st.left) > len(lefts[i]) {
			return math.Inf(1) // a pod of b found no place
		}
	}
	if spent >= old {
		return math.Inf(1)
	}
	return spent
}

func indexOf(items []*item, it *item) int {
	for i, x := range items {
		if x == it {
			return i
		}
	}
	return -1
}

// drain empties bins of movable pods into the spare room of one other bin
// each, most expensive donors first, keeping a move when the receiver's
// type stays as cheap as it was (the donor's price is saved). Receivers are
// bins with room left in their current type: a large memory node that is
// a third empty in cpu holds a dozen small nodes' pods for nothing.
func (s *solver) drain(p *pool, free []*item, byClass map[*podClass]*item, first int) {
	var donors, spare []*bin
	for _, b := range s.bins[first:] {
		if b.p != p || len(b.pods) == 0 || b.cur < 0 {
			continue
		}
		if b.reserved != "" {
			// A reservation's bin is paid for: never emptied, and never
			// grown past its reserved type by the room of its cheapest one.
			continue
		}
		if s.spareFor(b, free) {
			spare = append(spare, b)
		}
		movable := true
		for _, c := range b.podCls {
			if byClass[c] == nil {
				movable = false
				break
			}
		}
		if movable {
			donors = append(donors, b)
		}
	}
	if len(spare) == 0 || len(donors) == 0 {
		return
	}
	// A receiver must hold at least the smallest donor in every dimension;
	// most bins with spare room hold one more small pod, not a whole bin.
	least := donors[0].used.clone()
	for _, d := range donors[1:] {
		for i, u := range d.used {
			least[i] = min(least[i], u)
		}
	}
	var receivers []*bin
	for _, r := range spare {
		if r.used.fitsWith(least, r.p.types[r.cur].alloc) {
			receivers = append(receivers, r)
		}
	}
	if len(receivers) == 0 {
		return
	}
	cost := map[*bin]float64{}
	for _, b := range donors {
		cost[b] = s.binCost(b)
	}
	sort.SliceStable(donors, func(i, j int) bool { return cost[donors[i]] > cost[donors[j]] })
	gone := map[*bin]bool{}
	for _, d := range donors {
		for _, r := range receivers {
			if r == d || gone[r] {
				continue
			}
			alloc := r.p.types[r.cur].alloc
			if !r.used.fitsWith(d.used, alloc) {
				continue
			}
			if s.moveAll(d, r, byClass) {
				gone[d] = true
				break
			}
		}
	}
	if len(gone) > 0 {
		kept := s.bins[:0]
		for _, b := range s.bins {
			if !gone[b] {
				kept = append(kept, b)
			}
		}
		clear(s.bins[len(kept):])
		s.bins = kept
	}
}

// spareFor reports whether a pod of some movable item still fits in b's
// current type.
func (s *solver) spareFor(b *bin, free []*item) bool {
	alloc := b.p.types[b.cur].alloc
	for _, it := range free {
		if b.used.fitsWith(it.c.req, alloc) {
			return true
		}
	}
	return false
}

// moveAll moves every pod of donor d into r without growing r's type and
// releases d's node; it undoes the move and returns false when a pod is
// refused or r would cost more than before.
func (s *solver) moveAll(d, r *bin, byClass map[*podClass]*item) bool {
	p := d.p
	before := s.binCost(r)
	saveR := r.copyState()
	poolUsed := p.used.clone()
	type left struct {
		it   *item
		left []*corev1.Pod
	}
	var saved []left
	seen := map[*item]bool{}
	for _, c := range d.podCls {
		it := byClass[c]
		if !seen[it] {
			seen[it] = true
			saved = append(saved, left{it, it.st.left})
		}
	}
	ok := true
	for i, pod := range d.pods {
		it := byClass[d.podCls[i]]
		it.st.left = append([]*corev1.Pod{pod}, it.st.left...)
		if !s.tryAdd(r, it, true) {
			ok = false
			break
		}
	}
	if ok && s.binCost(r) > before*(1+1e-9) {
		ok = false
	}
	if !ok {
		*r = saveR
		copy(p.used, poolUsed)
		for _, sv := range saved {
			sv.it.st.left = sv.left
		}
		return false
	}
	if p.hasLimit {
		c := d.charged()
		for dd := range p.limit {
			p.used[dd] -= c[dd]
		}
	}
	s.nodesUsed[p.idx]--
	d.pods, d.podCls = nil, nil
	return true
}
