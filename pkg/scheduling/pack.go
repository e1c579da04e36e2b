package scheduling

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// item is the unplaced pods of one class variant that may use one pool.
type item struct {
	c  *podClass
	v  *variant
	f  *poolFit
	st *classState
	// dead marks the item as unable to join the bin being filled.
	dead bool
	// worth is the $/h per pod of packing the class alone on its best
	// type; short lists its best types (see target.go).
	worth     float64
	short     []int
	worthDone bool
	// flexWaived: no type keeping the flexibility floors takes a pod of
	// the item, so its bins are sized without them (see targetOK).
	flexDone, flexWaived bool
	flexTarget           []bool
	flexTargetZone       []bool
}

// bin is a planned NodeClaim while it is being filled.
type bin struct {
	host
	id     int
	p      *pool
	used   vec // pods' requests
	types  bitset
	slots  uint64
	target int // type index the bin may grow to
	cur    int // cheapest type index that fits used (-1 while empty)
	pods   []*corev1.Pod
	podCls []*podClass
	custom Requirements
	sig    string
	seeded bool
	flex   flexState
	charge vec // capacity counted against the pool's limits (nil: none)
	// extra: with Options.ChargeExpectedLaunch, how far the options minValues
	// makes the claim keep exceed its charge (nil: not at all).
	extra vec
	// reserved names the reservation the bin was opened for
	// (seedReservations); "" for any other bin.
	reserved string
}

func (s *solver) newBin(p *pool, it *item, target int) *bin {
	b := &bin{id: len(s.bins), p: p, used: make(vec, s.d.n()), types: append(bitset(nil), it.f.types...), slots: it.f.slots, target: target, cur: -1, flex: flexState{needOpts: -1}}
	b.zone = -1
	b.vals = s.binVals(p)
	s.bins = append(s.bins, b)
	return b
}

// headroom is what the pool may still launch: its limit minus launched and
// reserved capacity (math.MaxInt64 where unlimited).
func (p *pool) headroom(d int) int64 {
	if p.limit[d] < 0 {
		return math.MaxInt64
	}
	return p.limit[d] - p.used[d]
}

// zoneFor picks the zone a pod of it pins an unpinned bin to: the allowed
// zone with the most quota left (unlimited counts as most), ties by index.
func (s *solver) zoneFor(b *bin, it *item, mask uint64) int {
	best, bestQ := -1, int32(-2)
	for si := range s.slots.ct {
		if mask&(1<<si) == 0 {
			continue
		}
		z := s.slots.zone[si]
		q := int32(-1)
		if it.st.quota != nil {
			q = it.st.quota[z]
			if q == 0 {
				continue
			}
		}
		score := q
		if q < 0 {
			score = math.MaxInt32
		}
		if best < 0 || score > bestQ || score == bestQ && z < best {
			best, bestQ = z, score
		}
	}
	return best
}

func (s *solver) zoneMask(z int) uint64 {
	return s.slotMask(func(i int) bool { return s.slots.zone[i] == z })
}

// tryAdd places one pod of it into b if every constraint allows it and the
// bin still fits in its limit type (target, or cur when capped).
func (s *solver) tryAdd(b *bin, it *item, capToCur bool) bool {
	p := b.p
	if !it.f.types.has(b.target) {
		return false
	}
	// The bin keeps every slot its pods allow, not only the target's: the
	// target bounds its size, and a type offered in fewer zones must not
	// narrow the options of the smaller type the claim launches as.
	mask := b.slots & it.f.slots
	grow := p.types[b.target].slots
	if mask&grow == 0 {
		return false
	}
	if b.reserved != "" && mask&s.reserved == 0 {
		// A reservation's bin launches into the reservation: a pod that
		// may not run there (one that requires on-demand or spot) would
		// turn it into a bin that buys capacity while the reservation's
		// instance, counted as taken, stays idle.
		return false
	}
	z := b.zone
	if z < 0 && it.c.zoneRelevant {
		z = s.zoneFor(b, it, mask&grow)
		if z < 0 {
			return false
		}
	}
	if z >= 0 {
		mask &= s.zoneMask(z)
		if mask&grow == 0 {
			return false
		}
	}
	limitType := b.target
	if capToCur && b.cur >= 0 {
		limitType = b.cur
	}
	if !b.used.fitsWith(it.c.req, p.types[limitType].alloc) {
		return false
	}
	var custom Requirements
	if it.f.sig != b.sig {
		custom = b.custom.Intersect(it.f.custom)
		if custom.Satisfiable() != nil {
			return false
		}
	}
	// Topology keys other than zone and hostname: the bin takes a value of
	// each the pod is concerned with (keys.go) before its rules are checked.
	var pinTypes bitset
	var pinned uint64
	if it.c.keyRel != 0 {
		base := custom
		if base == nil {
			base = b.custom
		}
		m, pt, cr, pn, ok := s.pinKeys(b, it, mask, grow, base)
		if !ok {
			return false
		}
		mask, pinTypes, pinned = m, pt, pn
		if cr != nil && pn != 0 {
			custom = cr
		}
		if pinTypes != nil && !pinTypes.has(b.target) {
			b.unpin(pinned)
			return false
		}
	}
	if !s.canHost(it.c, it.v, &b.host, z) {
		b.unpin(pinned)
		return false
	}
	// Find the cheapest type that still fits, within the bin's types and slots.
	newTypes := b.types
	cur := b.cur
	if cur < 0 {
		cur = 0
	}
	for ; cur < len(p.types); cur++ {
		pt := p.types[cur]
		if !newTypes.has(cur) || !it.f.types.has(cur) || pt.slots&mask == 0 || pinTypes != nil && !pinTypes.has(cur) {
			continue
		}
		if b.used.fitsWith(it.c.req, pt.alloc) {
			break
		}
	}
	if cur == len(p.types) {
		b.unpin(pinned)
		return false
	}
	// Not a failure of the pod: it goes to another claim. A bin pinned to
	// the types of one instance-type label value is held to the floors
	// those types can give.
	flexFit := it.f
	if pinTypes != nil {
		narrowed := *it.f
		narrowed.types = append(bitset(nil), it.f.types...)
		for w := range narrowed.types {
			narrowed.types[w] &= pinTypes[w]
		}
		flexFit = &narrowed
	}
	if !s.flexOK(b, flexFit, mask, it.c.req) {
		b.unpin(pinned)
		return false
	}
	var charge vec
	if p.hasLimit {
		// The pool counts a claim at the largest of the options it will
		// keep (see limitOptions), not at its cheapest type.
		charge = s.limitCharge(b, flexFit, mask, it.c.req, cur)
		prev := b.charged()
		var extra vec
		if s.opts.ChargeExpectedLaunch && len(p.mv) > 0 {
			extra = s.mvCharge(b, flexFit, mask, it.c.req, cur)
			for d := range extra {
				extra[d] = max(0, extra[d]-charge[d])
			}
		}
		d := p.exceeds(charge, prev)
		if d < 0 && extra != nil {
			d = s.turnsExceed(p, b, charge, extra)
		}
		if d >= 0 {
			it.st.noteLimit(p, d, s.limitReason(p, d, charge, "the claim it would join"))
			b.unpin(pinned)
			return false
		}
		for d := range p.limit {
			p.used[d] += charge[d] - prev[d]
		}
		b.charge, b.extra = charge, extra
	}
	// Commit.
	if custom != nil {
		b.custom, b.sig = custom, it.f.sig
	}
	for w := range b.types {
		b.types[w] &= it.f.types[w]
		if pinTypes != nil {
			b.types[w] &= pinTypes[w]
		}
	}
	b.slots = mask
	if z >= 0 && b.zone < 0 {
		b.zone = z
	}
	b.cur = cur
	b.used.add(it.c.req)
	pod := it.st.left[0]
	it.st.left = it.st.left[1:]
	b.pods = append(b.pods, pod)
	b.podCls = append(b.podCls, it.c)
	s.record(it.c, it.v, &b.host, b.zone)
	return true
}

func (s *solver) open(p *pool, it *item, target int) *bin {
	s.nodesUsed[p.idx]++
	b := s.newBin(p, it, target)
	return b
}

// closeEmpty drops a bin that received no pod.
func (s *solver) closeEmpty(b *bin) {
	if len(b.pods) > 0 {
		return
	}
	s.nodesUsed[b.p.idx]--
	s.bins[len(s.bins)-1] = nil
	s.bins = s.bins[:len(s.bins)-1]
}

// pack places the items' pods on new claims of pool p. Seeds (pods that
// need a node of their own: hostname anti-affinity, hostname spread, host
// ports) open one bin each, shared across seed classes; those bins are then
// topped up with other pods to the size they already pay for; the rest goes
// to bins of the best-value type for the remaining demand, filled with the
// dot-product heuristic so cpu and memory fill together.
func (s *solver) pack(p *pool, items []*item) {
	s.enterLimitMode(p, items)
	var seeds, rest []*item
	for _, it := range items {
		if it.v.hostScoped || len(it.c.ports) > 0 {
			seeds = append(seeds, it)
		} else {
			rest = append(rest, it)
		}
	}
	first := len(s.bins)
	// Bins of this pool from earlier rounds take what fits first.
	if first > 0 {
		all := newFillIndex(items)
		for _, b := range s.bins {
			if b.p == p {
				s.fill(b, all, false)
			}
		}
	}
	firstSeeded := len(s.bins)
	// Seeds of the same hostname group cannot share the bins an earlier
	// seed of that group filled, so each group resumes where the last
	// stopped instead of rescanning every bin (quadratic at 20k pods).
	resume := map[int]int{}
	seedTarget := map[*item]int{}
	for _, it := range seeds {
		key := seedKey(it)
		cursor := firstSeeded
		if r, ok := resume[key]; ok {
			cursor = r
		}
		for len(it.st.left) > 0 {
			placed := false
			for ; cursor < len(s.bins); cursor++ {
				if s.tryAdd(s.bins[cursor], it, false) {
					placed = true
					break
				}
			}
			if placed {
				continue
			}
			if !s.canOpen(p) {
				it.st.noteLimit(p, -1, s.nodeLimitReason(p))
				break
			}
			// One target per seed class: its bins are sized alike, and the
			// choice costs a pass over every type.
			target, ok := seedTarget[it]
			if ok && target >= 0 && p.types[target].slots&it.f.slots&s.quotaSlots(it.st) == 0 {
				ok = false // its zones' quota is used up; pick for the others
			}
			if !ok {
				target = s.chooseTarget(p, it, items)
				seedTarget[it] = target
			}
			if target < 0 {
				break
			}
			b := s.open(p, it, target)
			b.seeded = true
			if !s.tryAdd(b, it, false) {
				s.closeEmpty(b)
				it.st.note(s.blocked(p, it))
				break
			}
			cursor = len(s.bins) - 1
		}
		resume[key] = cursor
	}
	fx := newFillIndex(rest)
	for i := firstSeeded; i < len(s.bins); i++ {
		s.fill(s.bins[i], fx, true)
	}
	// Paid-for capacity first: a bin per instance a reservation has free
	// (reserved.go); the LP and the greedy packer take what is left.
	s.seedReservations(p, rest, fx)
	// The LP's fills first, topped up with what they leave over; the
	// value-driven greedy packer below takes the rest.
	for _, b := range s.seedFromLP(p, rest) {
		s.fill(b, fx, true)
	}
	last := targetChoice{target: -1}
	for {
		var anchor *item
		for _, it := range rest {
			if len(it.st.left) > 0 && !it.dead {
				anchor = it
				break
			}
		}
		if anchor == nil {
			break
		}
		if !s.canOpen(p) {
			anchor.st.noteLimit(p, -1, s.nodeLimitReason(p))
			anchor.dead = true
			continue
		}
		target := s.chooseByValue(p, anchor, fx, &last)
		if target < 0 {
			target = s.chooseTarget(p, anchor, rest)
		}
		if target < 0 {
			anchor.dead = true
			continue
		}
		b := s.open(p, anchor, target)
		if !s.tryAdd(b, anchor, false) {
			s.closeEmpty(b)
			anchor.st.note(s.blocked(p, anchor))
			anchor.dead = true
			continue
		}
		s.fill(b, fx, false)
	}
	for _, it := range items {
		it.dead = false
	}
	s.repack(p, rest, first)
}

// seedKey is the first hostname group a seed's pods are limited by (-1 for
// host-port-only seeds, which do not resume).
func seedKey(it *item) int {
	for _, k := range it.v.constraints {
		if k.g.scope == scopeHostname && k.kind != kindAffinity && k.maxSkew <= 1 {
			return k.g.id
		}
	}
	return -1 - it.c.id
}

// fillIndex groups items by request, so fill scores each distinct shape
// once instead of every item: with thousands of small classes (every
// combination of labels and selectors is one) a per-item scan for every
// pod added is quadratic.
type fillIndex struct {
	items  []*item
	shapes [][]int // item indices per distinct request, in item order
	// groups are items alike for value sizing (target.go): same request,
	// same fit, same zone relevance, seeds apart.
	groups  []simGroup
	groupOf map[*item]int
	// tried marks items that failed for the bin being filled (gen).
	tried []uint32
	gen   uint32
}

type simGroup struct {
	members []int // item indices
	rep     int   // the first member
	seed    bool  // a pod per node (hostname rules, host ports): not simulated
}

func newFillIndex(items []*item) *fillIndex {
	fx := &fillIndex{items: items, tried: make([]uint32, len(items)), groupOf: make(map[*item]int, len(items))}
	byReq := map[string]int{}
	type groupKey struct {
		shape      int
		f          *poolFit
		zone, seed bool
	}
	byGroup := map[groupKey]int{}
	var key []byte
	for i, it := range items {
		key = key[:0]
		for _, x := range it.c.req {
			key = binary.AppendVarint(key, x)
		}
		k, ok := byReq[string(key)]
		if !ok {
			k = len(fx.shapes)
			byReq[string(key)] = k
			fx.shapes = append(fx.shapes, nil)
		}
		fx.shapes[k] = append(fx.shapes[k], i)
		gk := groupKey{shape: k, f: it.f, zone: it.c.zoneRelevant, seed: it.v.hostScoped || len(it.c.ports) > 0}
		g, ok := byGroup[gk]
		if !ok {
			g = len(fx.groups)
			byGroup[gk] = g
			fx.groups = append(fx.groups, simGroup{rep: i, seed: gk.seed})
		}
		fx.groups[g].members = append(fx.groups[g].members, i)
		fx.groupOf[it] = g
	}
	return fx
}

// groupLeft is the pending pods of group g's live items, and whether any
// of its items is live.
func (fx *fillIndex) groupLeft(g int) (int64, bool) {
	var n int64
	live := false
	for _, m := range fx.groups[g].members {
		if it := fx.items[m]; !it.dead {
			live = true
			n += int64(len(it.st.left))
		}
	}
	return n, live
}

// fill adds pods to b, each time the one whose size best matches the bin's
// free capacity (largest dot product of normalised request and free space;
// at equal scores the earliest item), until nothing fits. capToCur keeps
// the bin within its current cheapest type.
func (s *solver) fill(b *bin, fx *fillIndex, capToCur bool) {
	fx.gen++
	if fx.gen == 0 {
		clear(fx.tried)
		fx.gen = 1
	}
	var curBuf [32]int
	cursor := curBuf[:0]
	if len(fx.shapes) > len(curBuf) {
		cursor = make([]int, 0, len(fx.shapes))
	}
	cursor = cursor[:len(fx.shapes)]
	for {
		limitType := b.target
		if capToCur && b.cur >= 0 {
			limitType = b.cur
		}
		alloc := b.p.types[limitType].alloc
		best, bestFirst, bestScore := -1, 0, -1.0
		for k, shape := range fx.shapes {
			c := cursor[k]
			for c < len(shape) {
				i := shape[c]
				if fx.tried[i] != fx.gen && len(fx.items[i].st.left) > 0 {
					break
				}
				c++
			}
			cursor[k] = c
			if c == len(shape) {
				continue
			}
			it := fx.items[shape[c]]
			if !b.used.fitsWith(it.c.req, alloc) {
				cursor[k] = len(shape) // the bin only grows
				continue
			}
			score := fillScore(it, b.used, alloc)
			if score > bestScore || score == bestScore && shape[c] < bestFirst {
				best, bestFirst, bestScore = k, shape[c], score
			}
		}
		if best < 0 {
			return
		}
		if !s.tryAdd(b, fx.items[bestFirst], capToCur) {
			fx.tried[bestFirst] = fx.gen
		}
	}
}

// chooseTarget picks the type a new bin may grow to: the one that hosts the
// remaining demand it can take at the lowest cost, price × the number of
// such nodes the demand needs (at least one). Large demand picks the type
// with the best price per resource; a small tail picks the cheapest type
// that holds all of it.
func (s *solver) chooseTarget(p *pool, anchor *item, items []*item) int {
	// The demand is what the items sharing types with the anchor still need,
	// in the dimensions the anchor asks for (a cpu pod's bin is not sized
	// for another class's GPUs).
	demand := make(vec, s.d.n())
	for _, it := range items {
		if len(it.st.left) == 0 || !intersects(it.f.types, anchor.f.types) {
			continue
		}
		for d, r := range it.c.req {
			if anchor.c.req[d] > 0 {
				demand[d] += r * int64(len(it.st.left))
			}
		}
	}
	// Only zones where the anchor still has quota count: a type offered
	// only elsewhere could not take it (its bin would stay empty).
	allowed := anchor.f.slots & s.quotaSlots(anchor.st)
	if allowed == 0 {
		anchor.st.note(s.blocked(p, anchor))
		return -1
	}
	best, bestCost, bestRatio := -1, math.Inf(1), 0.0
	refused, refusedDim := "", 0 // why a limit refuses the cheapest type that fits
	for ti, pt := range p.types {
		if !anchor.f.types.has(ti) || pt.slots&allowed == 0 || !s.targetOK(p, ti, anchor) {
			continue
		}
		if d := p.exceeds(pt.capacity, nil); d >= 0 {
			if refused == "" && anchor.c.req.fits(pt.alloc) {
				refused, refusedDim = s.limitReason(p, d, pt.capacity, "its cheapest fitting type "+pt.it.Name), d
			}
			continue
		}
		ratio := 0.0
		for d, x := range demand {
			if x > 0 {
				ratio = math.Max(ratio, float64(x)/float64(max(pt.alloc[d], 1)))
			}
		}
		price := math.Inf(1)
		for si := range s.slots.ct {
			if pt.slots&allowed&(1<<si) != 0 {
				price = math.Min(price, pt.price[si])
			}
		}
		// Few nodes are paid whole: round the count up; many nodes amortise.
		n := math.Max(1, ratio)
		if n < 16 {
			n = math.Ceil(n - 1e-9)
		}
		cost := p.typeCost(ti, price) * n
		if cost < bestCost*(1-1e-9) || cost <= bestCost*(1+1e-9) && ratio < bestRatio {
			best, bestCost, bestRatio = ti, cost, ratio
		}
	}
	if best < 0 && (allowed != anchor.f.slots || s.typePinned(p, anchor)) {
		anchor.st.note(s.blocked(p, anchor))
	} else if best < 0 && refused != "" {
		anchor.st.noteLimit(p, refusedDim, refused)
	} else if best < 0 {
		anchor.st.note(fmt.Sprintf("pool %q: no instance type within the pool's limits fits", p.np.Name))
	}
	return best
}

// quotaSlots is the (zone, capacity type) slots in zones where the class
// may still place pods this round (every slot when it has no quota).
func (s *solver) quotaSlots(st *classState) uint64 {
	ct := s.quotaCT(st)
	if st.quota == nil {
		return math.MaxUint64 &^ ct
	}
	return s.slotMask(func(i int) bool { return st.quota[s.slots.zone[i]] != 0 }) &^ ct
}

func intersects(a, b bitset) bool {
	for i := range a {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

// blocked explains why a pod could not go even onto a fresh node of pool p.
func (s *solver) blocked(p *pool, it *item) string {
	var cs []string
	for _, k := range it.v.constraints {
		cs = append(cs, k.text)
	}
	if len(it.c.ports) > 0 {
		cs = append(cs, "host ports")
	}
	if len(cs) == 0 {
		return fmt.Sprintf("pool %q: no new node can take it", p.np.Name)
	}
	return fmt.Sprintf("pool %q: %s leave no node or zone for it", p.np.Name, strings.Join(cs, ", "))
}
