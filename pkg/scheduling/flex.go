package scheduling

import (
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Flexibility as a sizing cap. A claim launches as any of the (type, zone)
// offerings that hold its pods, so the fuller it is, the fewer options EC2
// gets. Two floors bound how full a claim may grow:
//
//   - spot options: at least Options.MinSpotOptions (type, zone) spot
//     offerings must still hold the claim, so one exhausted spot pool does
//     not leave the launch without an alternative;
//   - minValues: every pool requirement with minValues keeps that many
//     distinct values (instance families, zones…) among the fitting
//     offerings, so the requirement never fails the pods.
//
// A pod that would break a floor goes to another claim instead. Each floor
// is waived when one pod of the claim's first class cannot reach it at all:
// a pool whose whole catalog sells fewer options keeps its usual sizing.

// minValuesKey is one pool requirement with minValues > 1.
type minValuesKey struct {
	key  string
	n    int
	zone bool  // the values are the offerings' zones
	val  []int // by pool type index: interned label value, -1 when absent
}

// flexState is what a bin remembers between flexibility checks.
type flexState struct {
	needOpts int   // spot options to keep (-1 until the first pod)
	needMV   []int // distinct values to keep, by pool.mv index
	// witness holds the types that met the floors at the last check; they
	// usually still do, so most checks look at a dozen types, not the pool.
	witness []int
	// fail* is the last contents that broke a floor with that pod fit and
	// slot mask: anything at least as large breaks it too.
	failFit  *poolFit
	failMask uint64
	failUsed vec
}

// buildFlex orders the pool's types largest first (the likeliest to hold a
// full claim, so scans stop early) and interns minValues labels.
func (s *solver) buildFlex(p *pool) {
	p.bySize = make([]int, len(p.types))
	for i := range p.bySize {
		p.bySize[i] = i
	}
	sort.SliceStable(p.bySize, func(a, b int) bool {
		x, y := p.types[p.bySize[a]].alloc, p.types[p.bySize[b]].alloc
		if x[dimCPU] != y[dimCPU] {
			return x[dimCPU] > y[dimCPU]
		}
		return x[dimMemory] > y[dimMemory]
	})
	for _, k := range p.reqs.Keys() {
		r := p.reqs[k]
		if r.MinValues == nil || *r.MinValues <= 1 || k == nsv1.LabelCapacityType {
			continue // one claim launches one capacity type
		}
		mk := minValuesKey{key: k, n: *r.MinValues, zone: k == corev1.LabelTopologyZone}
		if !mk.zone {
			ix := map[string]int{}
			mk.val = make([]int, len(p.types))
			for ti, pt := range p.types {
				v, ok := pt.it.Labels[k]
				if !ok {
					mk.val[ti] = -1
					continue
				}
				if _, seen := ix[v]; !seen {
					ix[v] = len(ix)
				}
				mk.val[ti] = ix[v]
			}
		}
		p.mv = append(p.mv, mk)
	}
	p.mvCharged = len(p.mv) > 0 && !s.opts.ChargeExpectedLaunch
	s.buildFlexTargets(p)
}

// buildFlexTargets marks the types a bin may be sized for: those whose
// full fill still leaves the floors met by the types at least as large in
// every dimension (for zone-bound pods, within one zone). Choosing only
// such targets keeps the LP seeding and value sizing honest: a bin filled
// to its target keeps its options, instead of stopping short of it.
func (s *solver) buildFlexTargets(p *pool) {
	s.spot = s.spotSlots() // this pool's slots are interned by now
	p.flexTarget, p.flexTargetZone = s.flexTargets(p, nil, p.slots)
}

// flexTargets computes the target marks over the pool's types in set (nil:
// all) and slots.
func (s *solver) flexTargets(p *pool, set bitset, slots uint64) ([]bool, []bool) {
	target := make([]bool, len(p.types))
	targetZone := make([]bool, len(p.types))
	spot := s.spot & slots
	need := s.opts.MinSpotOptions
	perZone := make([]int, len(s.topo.zones))
	seen := make([][]int, len(p.mv))
	zoneSeen := make([]uint64, len(p.mv))
	mvMet := func() bool {
		for i, k := range p.mv {
			if k.zone && bits.OnesCount64(zoneSeen[i]) < k.n || !k.zone && len(seen[i]) < k.n {
				return false
			}
		}
		return true
	}
	for _, ti := range p.bySize {
		if set != nil && !set.has(ti) {
			continue
		}
		a := p.types[ti].alloc
		opts := 0
		for z := range perZone {
			perZone[z] = 0
		}
		for i := range seen {
			seen[i] = seen[i][:0]
			zoneSeen[i] = 0
		}
		zoneOK := false
		for _, tj := range p.bySize {
			pt := p.types[tj]
			if pt.alloc[dimCPU] < a[dimCPU] {
				break // bySize is by cpu first: nothing later dominates
			}
			if set != nil && !set.has(tj) || pt.exotic || pt.slots&slots == 0 || !a.fits(pt.alloc) {
				continue
			}
			sl := pt.slots & spot
			opts += bits.OnesCount64(sl)
			for m := sl; m != 0; m &= m - 1 {
				z := s.slots.zone[bits.TrailingZeros64(m)]
				perZone[z]++
				if perZone[z] >= need {
					zoneOK = true
				}
			}
			for i, k := range p.mv {
				if k.zone {
					for m := pt.slots & slots; m != 0; m &= m - 1 {
						zoneSeen[i] |= 1 << s.slots.zone[bits.TrailingZeros64(m)]
					}
				} else if v := k.val[tj]; v >= 0 && !containsInt(seen[i], v) {
					seen[i] = append(seen[i], v)
				}
			}
			if opts >= need && zoneOK && mvMet() {
				break
			}
		}
		m := mvMet()
		target[ti] = opts >= need && m
		targetZone[ti] = zoneOK && m
	}
	return target, targetZone
}

// targetOK reports whether a bin anchored by it may be sized for type ti:
// the type keeps the floors (see buildFlexTargets), or no type that keeps
// them can take one pod of it.
func (s *solver) targetOK(p *pool, ti int, it *item) bool {
	if !s.typeQuotaOK(p, ti, it) {
		return false
	}
	if s.typePinned(p, it) {
		// Its claims keep the types of one value of an instance-type
		// label: the pool's floors over every type do not apply (flexOK
		// holds them to what those types give).
		return true
	}
	if !it.flexDone {
		s.itemFlex(p, it)
	}
	if it.flexWaived {
		return true
	}
	ok := it.flexTarget
	if it.c.zoneRelevant {
		ok = it.flexTargetZone
	}
	return ok[ti]
}

// itemFlex sets the item's target marks: the pool's, unless the item's
// own requirements leave out types or slots that fit its pods (then its
// own), and waives them when no marked type takes one of its pods.
func (s *solver) itemFlex(p *pool, it *item) {
	it.flexDone = true
	restricted := it.f.slots != p.slots
	for ti, pt := range p.types {
		if restricted {
			break
		}
		restricted = !it.f.types.has(ti) && it.c.req.fits(pt.alloc)
	}
	it.flexTarget, it.flexTargetZone = p.flexTarget, p.flexTargetZone
	if restricted {
		it.flexTarget, it.flexTargetZone = s.flexTargets(p, it.f.types, it.f.slots)
	}
	ok := it.flexTarget
	if it.c.zoneRelevant {
		ok = it.flexTargetZone
	}
	it.flexWaived = true
	for ti, pt := range p.types {
		if ok[ti] && it.f.types.has(ti) && it.f.slots&pt.slots != 0 && it.c.req.fits(pt.alloc) {
			it.flexWaived = false
			return
		}
	}
}

// spotSlots is the set of spot slots; it also refreshes ctMasks, the slots
// of each capacity type.
func (s *solver) spotSlots() uint64 {
	s.ctMasks = s.ctMasks[:0]
	var cts []string
	for i, ct := range s.slots.ct {
		k := 0
		for k < len(cts) && cts[k] != ct {
			k++
		}
		if k == len(cts) {
			cts = append(cts, ct)
			s.ctMasks = append(s.ctMasks, 0)
		}
		s.ctMasks[k] |= 1 << i
	}
	return s.slotMask(func(i int) bool { return s.slots.ct[i] == nsv1.CapacityTypeSpot })
}

// flexOK reports whether b may take one more pod of request req whose fit
// is f, with the bin's slots narrowed to mask: the floors must still hold.
func (s *solver) flexOK(b *bin, f *poolFit, mask uint64, req vec) bool {
	if b.reserved != "" {
		// A reservation's bin launches into its one reservation: the
		// spot floor is for lists of spot pools (the size is still the
		// reserved type's, tryAdd).
		return true
	}
	p := b.p
	fl := &b.flex
	spot := mask & s.spot
	used := b.used.clone()
	used.add(req)
	if fl.needOpts < 0 {
		// The first pod sets the floors to what the pool can give at all.
		fl.needMV = make([]int, len(p.mv))
		for i, k := range p.mv {
			fl.needMV[i] = k.n
		}
		need := 0
		if spot != 0 {
			need = s.opts.MinSpotOptions
		}
		opts, got, w := s.flexScan(b, f, mask, spot, used, p.bySize, need, fl.needMV)
		// A floor the pool cannot reach even for one pod is waived: the
		// pool's catalog is what it is (claimFor reports a minValues that
		// no claim can meet).
		fl.needOpts = need
		if opts < need {
			fl.needOpts = 0
		}
		for i := range fl.needMV {
			if got[i] < fl.needMV[i] {
				fl.needMV[i] = 0
			}
		}
		fl.witness = w
		return true
	}
	needOpts := fl.needOpts
	if spot == 0 {
		needOpts = 0 // the claim launches on-demand: no spot floor
	}
	if needOpts == 0 && allAtMostOne(fl.needMV) {
		return true
	}
	if fl.failUsed != nil && fl.failFit == f && fl.failMask == mask && fl.failUsed.fits(used) {
		return false
	}
	if len(fl.witness) > 0 {
		if _, _, w := s.flexScan(b, f, mask, spot, used, fl.witness, needOpts, fl.needMV); w != nil {
			return true
		}
	}
	_, _, w := s.flexScan(b, f, mask, spot, used, p.bySize, needOpts, fl.needMV)
	if w != nil {
		fl.witness = w
		return true
	}
	fl.failFit, fl.failMask, fl.failUsed = f, mask, used
	return false
}

func allAtMostOne(xs []int) bool {
	for _, x := range xs {
		if x > 1 {
			return false
		}
	}
	return true
}

// flexScan walks order and counts the spot options and, per capacity type
// (a claim launches one), the distinct minValues values of the types that
// hold used (within b's and f's types and mask), stopping once need is met
// and one capacity type meets every needMV. It returns the option count,
// the best count per minValues key and the types that contributed, or a
// nil witness when the floors are not met.
func (s *solver) flexScan(b *bin, f *poolFit, mask, spot uint64, used vec, order []int, need int, needMV []int) (int, []int, []int) {
	p := b.p
	opts := 0
	nk, nc := len(p.mv), len(s.ctMasks)
	var got []int
	var seen [][]int
	var zones []uint64
	if nk > 0 {
		got = make([]int, nk*nc)
		seen = make([][]int, nk*nc)
		zones = make([]uint64, nk*nc)
	}
	best := func() []int {
		out := make([]int, nk)
		for c := 0; c < nc; c++ {
			for i := 0; i < nk; i++ {
				out[i] = max(out[i], got[c*nk+i])
			}
		}
		return out
	}
	met := func() bool {
		if opts < need {
			return false
		}
		if nk == 0 {
			return true
		}
	next:
		for c := 0; c < nc; c++ {
			for i := range needMV {
				if got[c*nk+i] < needMV[i] {
					continue next
				}
			}
			return true
		}
		return false
	}
	if met() {
		return opts, best(), []int{}
	}
	var w []int
	for _, ti := range order {
		pt := p.types[ti]
		if pt.exotic || !b.types.has(ti) || !f.types.has(ti) {
			continue
		}
		sl := pt.slots & mask
		if sl == 0 || !used.fits(pt.alloc) {
			continue
		}
		useful := false
		if opts < need {
			if n := bits.OnesCount64(sl & spot); n > 0 {
				opts += n
				useful = true
			}
		}
		for c, cm := range s.ctMasks {
			csl := sl & cm
			if csl == 0 {
				continue
			}
			for i, k := range p.mv {
				x := c*nk + i
				if got[x] >= needMV[i] {
					continue
				}
				if k.zone {
					for m := csl; m != 0; m &= m - 1 {
						z := s.slots.zone[bits.TrailingZeros64(m)]
						if zones[x]&(1<<z) == 0 {
							zones[x] |= 1 << z
							got[x]++
							useful = true
						}
					}
					continue
				}
				v := k.val[ti]
				if v < 0 || containsInt(seen[x], v) {
					continue
				}
				seen[x] = append(seen[x], v)
				got[x]++
				useful = true
			}
		}
		if useful {
			w = append(w, ti)
			if met() {
				return opts, best(), w
			}
		}
	}
	return opts, best(), nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// limitOptions trims the price-ordered options of a claim in a pool with
// limits. The pool counts a claim at the largest capacity among its
// options (whichever launches, the limit holds), so every option beyond
// the floors that is larger than the options already needed spends limit
// another claim could use: the cheapest options up to the floors (spot
// options, minValues) are kept, then only options no larger than those.
func (s *solver) limitOptions(opts []LaunchOption, p *pool) []LaunchOption {
	if p.byIt == nil {
		p.byIt = make(map[*catalog.InstanceType]*poolType, len(p.types))
		for _, pt := range p.types {
			p.byIt[pt.it] = pt
		}
	}
	spotAll := 0
	for _, o := range opts {
		if o.CapacityType == nsv1.CapacityTypeSpot {
			spotAll++
		}
	}
	need := min(s.opts.MinSpotOptions, spotAll)
	needMV := make([]int, len(p.mv))
	seen := make([]map[string]bool, len(p.mv))
	for i, k := range p.mv {
		all := map[string]bool{}
		for _, o := range opts {
			all[optionValue(o, k)] = true
		}
		needMV[i] = min(k.n, len(all))
		seen[i] = map[string]bool{}
	}
	met := func(spot int) bool {
		if spot < need {
			return false
		}
		for i := range needMV {
			if len(seen[i]) < needMV[i] {
				return false
			}
		}
		return true
	}
	var kept []LaunchOption
	var capMax vec
	spot, i := 0, 0
	for ; i < len(opts) && !met(spot); i++ {
		o := opts[i]
		kept = append(kept, o)
		if o.CapacityType == nsv1.CapacityTypeSpot {
			spot++
		}
		for j, k := range p.mv {
			seen[j][optionValue(o, k)] = true
		}
		c := p.byIt[o.InstanceType].capacity
		if capMax == nil {
			capMax = c.clone()
		}
		for d := range capMax {
			capMax[d] = max(capMax[d], c[d])
		}
	}
	if capMax == nil {
		return opts // no floor to keep: every option stays, as before
	}
	for _, o := range opts[i:] {
		if p.byIt[o.InstanceType].capacity.fits(capMax) {
			kept = append(kept, o)
		}
	}
	return kept
}

func optionValue(o LaunchOption, k minValuesKey) string {
	if k.zone {
		return o.Zone
	}
	return o.InstanceType.Labels[k.key]
}

// charged is the capacity b counts against its pool's limits.
func (b *bin) charged() vec {
	if b.charge != nil {
		return b.charge
	}
	c := make(vec, len(b.used))
	if b.cur >= 0 {
		copy(c, b.p.types[b.cur].capacity)
	}
	return c
}

// largestCharge is what b counts against its pool's limits under the
// largest-option rule: its charge, and with ChargeExpectedLaunch the
// options minValues makes it keep (extra) too.
func (b *bin) largestCharge() vec {
	c := b.charged()
	if b.extra == nil {
		return c
	}
	out := c.clone()
	out.add(b.extra)
	return out
}

// limitCharge is the capacity a claim of b plus one pod of request req
// is charged against the pool's limits while packing: the capacity of its
// cheapest type cur, or, when the pool has minValues, the largest
// capacity among the cheapest types that hold it until every minValues is
// met — a claim must keep those options whatever the limit, so the limit
// must hold them. The spot-option floor is not charged: what fits in the
// limit is never refused to keep spot options, which the claim keeps at
// plan time as far as the limit's slack allows (see buildClaims). In limit
// mode the minValues options are the lean ones (leanCharge), not the
// cheapest.
func (s *solver) limitCharge(b *bin, f *poolFit, mask uint64, req vec, cur int) vec {
	if !b.p.mvCharged {
		return b.p.types[cur].capacity.clone()
	}
	return s.mvCharge(b, f, mask, req, cur)
}

// mvCharge is the largest capacity among the options a claim of b plus one
// pod of request req keeps for minValues (see limitCharge).
func (s *solver) mvCharge(b *bin, f *poolFit, mask uint64, req vec, cur int) vec {
	p := b.p
	out := p.types[cur].capacity.clone()
	needMV := b.flex.needMV
	if allAtMostOne(needMV) {
		return out
	}
	used := b.used.clone()
	used.add(req)
	if p.limitMode && p.leanOrder != nil {
		ok := func(ti int) bool { return b.types.has(ti) && f.types.has(ti) }
		if c := s.leanCharge(p, used, ok, mask, needMV); c != nil {
			return c
		}
	}
	seen := make([][]int, len(p.mv))
	zones := make([]uint64, len(p.mv))
	met := func() bool {
		for i, k := range p.mv {
			if k.zone && bits.OnesCount64(zones[i]) < needMV[i] || !k.zone && len(seen[i]) < needMV[i] {
				return false
			}
		}
		return true
	}
	for ti := cur; ti < len(p.types) && !met(); ti++ {
		pt := p.types[ti]
		if !b.types.has(ti) || !f.types.has(ti) || pt.slots&mask == 0 || !used.fits(pt.alloc) {
			continue
		}
		for i, k := range p.mv {
			if k.zone {
				for m := pt.slots & mask; m != 0; m &= m - 1 {
					zones[i] |= 1 << s.slots.zone[bits.TrailingZeros64(m)]
				}
			} else if v := k.val[ti]; v >= 0 && !containsInt(seen[i], v) {
				seen[i] = append(seen[i], v)
			}
		}
		for d := range out {
			out[d] = max(out[d], pt.capacity[d])
		}
	}
	return out
}
