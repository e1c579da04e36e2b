package scheduling

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Packing against a binding limit. Limits count launched capacity, so
// when a pool's pending demand comes close to what its cpu or memory
// limit has left, the cheapest plan is not the goal any more: every GiB
// and vCPU of the limit spent on overhead (kube-reserved, DaemonSets),
// on shapes the pods do not use, or on the larger options minValues makes
// a claim keep, is a pod refused. In that mode a type's cost is the share
// of the limit's headroom a claim sized to it is charged (its capacity,
// or the largest of the cheapest options holding it that minValues needs),
// with its price as a tie-break, and pods that use the least of the limit
// are packed first, so the limit places as many pods as it can.

// limitModeAt is the share of a limit's headroom the pending requests must
// reach for the pool to pack by limit share: requests are below the
// capacity they need, by overhead and packing losses.
const limitModeAt = 0.7

// leanReqs: above this many distinct pending requests, a type's limit
// share is its lean charge filled to its allocatable, not per request.
const leanReqs = 32

// enterLimitMode decides whether pool p packs by limit share for these
// items, and if so computes each type's share and orders the items by the
// share one pod uses.
func (s *solver) enterLimitMode(p *pool, items []*item) {
	p.limitMode = false
	if !p.hasLimit {
		return
	}
	demand := make(vec, s.d.n())
	for _, it := range items {
		for d, r := range it.c.req {
			demand[d] += r * int64(len(it.st.left))
		}
	}
	var dims []int
	for d := range p.limit {
		if p.limit[d] >= 0 && d != dimPods {
			dims = append(dims, d)
			if float64(demand[d]) >= limitModeAt*float64(max(p.headroom(d), 1)) {
				p.limitMode = true
			}
		}
	}
	if !p.limitMode && len(dims) > 0 {
		// Requests far below the limit can still be charged past it: 1,000
		// pods of 500m/128Mi ask for 125Gi, but the cpu-shaped nodes they
		// need bring 1,000Gi, and a third family's options twice that.
		charge := s.chargeDemand(p, items)
		for _, d := range dims {
			if charge[d] > p.headroom(d) {
				p.limitMode = true
			}
		}
	}
	if !p.limitMode {
		return
	}
	p.limitDims = make(vec, len(p.limit))
	for _, d := range dims {
		p.limitDims[d] = max(p.headroom(d), 1)
	}
	share := p.share
	if len(p.mv) > 0 {
		// The lean order: types by the share of the headroom one node takes.
		p.leanOrder = make([]int, len(p.types))
		typeShare := make([]float64, len(p.types))
		for ti, pt := range p.types {
			p.leanOrder[ti] = ti
			typeShare[ti] = share(pt.capacity)
		}
		sort.SliceStable(p.leanOrder, func(i, j int) bool {
			a, b := p.leanOrder[i], p.leanOrder[j]
			if typeShare[a] != typeShare[b] {
				return typeShare[a] < typeShare[b]
			}
			return p.types[a].minPrice < p.types[b].minPrice
		})
		p.leanCache = map[string]vec{}
	}
	// With minValues, a type's share is what a claim of it is charged when
	// filled with the pending pods of one request (the largest over them):
	// m6g.2xlarge filled with 250m/512Mi pods holds 31 of them, 15.5Gi,
	// whose lean charge has 29.5Gi; filled to its allocatable it would need
	// c6g.8xlarge's 59Gi as its c-family option.
	var reqs []vec
	if p.mvCharged {
	next:
		for _, it := range items {
			if len(it.st.left) == 0 {
				continue
			}
			for _, r := range reqs {
				if r.equal(it.c.req) {
					continue next
				}
			}
			if reqs = append(reqs, it.c.req); len(reqs) > leanReqs {
				reqs = nil
				break
			}
		}
	}
	p.limitShare = make([]float64, len(p.types))
	lambda := math.Inf(1)
	for ti, pt := range p.types {
		c := s.chargeEstimate(p, ti)
		if p.mvCharged {
			var worst vec
			for _, r := range reqs {
				per := perNode(r, pt.alloc)
				if per <= 0 {
					continue
				}
				content := r.clone()
				for d := range content {
					content[d] *= per
				}
				if lc := s.leanContentCharge(p, content); lc != nil && (worst == nil || share(lc) > share(worst)) {
					worst = lc
				}
			}
			if worst == nil {
				worst = s.leanContentCharge(p, pt.alloc)
			}
			if worst != nil {
				c = worst
			}
		}
		p.limitShare[ti] = share(c)
		if pt.minPrice > 0 && p.limitShare[ti] > 0 {
			lambda = math.Min(lambda, p.limitShare[ti]/pt.minPrice)
		}
	}
	// Price breaks ties: it weighs at most 1% of any type's share.
	p.priceWeight = 0
	if !math.IsInf(lambda, 1) {
		p.priceWeight = 0.01 * lambda
	}
	perPod := make(map[*item]float64, len(items))
	for _, it := range items {
		perPod[it] = share(it.c.req)
	}
	sort.SliceStable(items, func(i, j int) bool { return perPod[items[i]] < perPod[items[j]] })
}

// chargeDemand estimates what packing the items costs the pool's limits
// when types are chosen by price: each item's pods on its cheapest type
// per pod, charged as chargeEstimate says.
func (s *solver) chargeDemand(p *pool, items []*item) vec {
	out := make(vec, s.d.n())
	for _, it := range items {
		if len(it.st.left) == 0 {
			continue
		}
		s.worth(p, it)
		if len(it.short) == 0 {
			continue
		}
		ti := it.short[0]
		per := perNode(it.c.req, p.types[ti].alloc)
		if it.v.hostScoped || len(it.c.ports) > 0 {
			per = 1
		}
		if per <= 0 {
			continue
		}
		nodes := (int64(len(it.st.left)) + per - 1) / per
		c := s.chargeEstimate(p, ti)
		for d := range out {
			out[d] += nodes * c[d]
		}
	}
	return out
}

// chargeEstimate is what a claim filled to type ti is charged: ti's
// capacity, or, with minValues, the largest capacity among the cheapest
// types at least as large in every dimension until minValues is met.
func (s *solver) chargeEstimate(p *pool, ti int) vec {
	if p.chargeEst == nil {
		p.chargeEst = make([]vec, len(p.types))
	}
	if c := p.chargeEst[ti]; c != nil {
		return c
	}
	out := p.types[ti].capacity.clone()
	p.chargeEst[ti] = out
	if !p.mvCharged {
		return out
	}
	a := p.types[ti].alloc
	seen := make([][]int, len(p.mv))
	zones := make([]uint64, len(p.mv))
	met := func() bool {
		for i, k := range p.mv {
			if k.zone && bits.OnesCount64(zones[i]) < k.n || !k.zone && len(seen[i]) < k.n {
				return false
			}
		}
		return true
	}
	for tj, pt := range p.types {
		if met() {
			break
		}
		if !a.fits(pt.alloc) {
			continue
		}
		for i, k := range p.mv {
			if k.zone {
				for m := pt.slots; m != 0; m &= m - 1 {
					zones[i] |= 1 << s.slots.zone[bits.TrailingZeros64(m)]
				}
			} else if v := k.val[tj]; v >= 0 && !containsInt(seen[i], v) {
				seen[i] = append(seen[i], v)
			}
		}
		for d := range out {
			out[d] = max(out[d], pt.capacity[d])
		}
	}
	return out
}

// Turns. With Options.ChargeExpectedLaunch a claim is charged its expected
// launch, but its options must meet minValues among those that fit the
// limit left at its turn in plan order: the limit less the launched
// capacity and the charges of the claims before it. A claim whose
// minValues options reach extra beyond its charge c needs, at its turn k,
// the charges up to and including its own plus its extra within the
// limit. Claims go in order of extra, largest first (turnOrder) — the order
// that keeps the largest of prefix-plus-extra least, as deadlines are met
// earliest-first — and packing admits a pod only if every claim still
// finds its room (turnsExceed).

// turnsExceed is the first limited dimension in which some claim of pool p
// would not find room for its minValues options at its turn if bin b were
// charged charge with extra, or -1.
func (s *solver) turnsExceed(p *pool, b *bin, charge, extra vec) int {
	type turn struct{ c, e vec }
	var ts []turn
	for _, o := range s.bins {
		if o.p != p || o == b || len(o.pods) == 0 || o.charge == nil {
			continue
		}
		ts = append(ts, turn{o.charge, o.extra})
	}
	ts = append(ts, turn{charge, extra})
	eShare := func(t turn) float64 {
		if t.e == nil {
			return 0
		}
		return p.limitShareOf(t.e)
	}
	sort.SliceStable(ts, func(i, j int) bool { return eShare(ts[i]) > eShare(ts[j]) })
	prefix := p.launched.clone()
	for _, t := range ts {
		prefix.add(t.c)
		for d, l := range p.limit {
			if l < 0 {
				continue
			}
			need := prefix[d]
			if t.e != nil {
				need += t.e[d]
			}
			if need > l {
				return d
			}
		}
	}
	return -1
}

// limitShareOf is the largest share of its limit that charge c takes in
// any resource the pool limits (its headroom at the start of the solve).
func (p *pool) limitShareOf(c vec) float64 {
	x := 0.0
	for d, l := range p.limit {
		if l >= 0 && d < len(c) {
			if h := l - p.launched[d]; h > 0 {
				x = math.Max(x, float64(c[d])/float64(h))
			}
		}
	}
	return x
}

// share is the share of the pool's limit headroom (as it was when the
// pack call entered limit mode) a charge c takes: its largest over the
// limited dimensions.
func (p *pool) share(c vec) float64 {
	x := 0.0
	for d, h := range p.limitDims {
		if h > 0 {
			x = math.Max(x, float64(c[d])/float64(h))
		}
	}
	return x
}

// Lean charges. With minValues a claim keeps options of several values
// (families, types, zones) and is charged, in every resource, the largest
// of them. Which options it keeps for those values decides the charge, and
// price order picks badly under a binding limit: a claim of 2 GiB/vCPU pods
// on c6g.2xlarge keeps m6g.2xlarge as its third family and is charged twice
// its memory, while the same claim sized to m6g.2xlarge's vCPUs (31 pods
// of 250m/512Mi) is held by c6g.4xlarge and m6g.2xlarge, which have the
// same memory. So in limit mode a claim's charge is chosen among the types
// holding its pods by the share of the headroom each takes, least first:
// the least-share type, then for each minValues value still missing the
// least-share type bringing it (per value the smallest size that fits, and
// the values whose smallest fit takes least). The share of a charge is the
// largest of its options' shares, so for one key this is the least share
// any option set meeting minValues can be charged. At plan time the claim
// keeps only options within that charge (plus its share of the slack), so
// whatever EC2 launches, the limit holds.

// leanCharge is the lean charge of a claim whose pods need content, among
// the types ti of p.leanOrder that ok accepts (nil: all) with slots in
// mask, keeping needMV values of each minValues key: the componentwise
// largest capacity of the types chosen, or nil when no type holds content.
func (s *solver) leanCharge(p *pool, content vec, ok func(ti int) bool, mask uint64, needMV []int) vec {
	var out vec
	seen := make([][]int, len(p.mv))
	zones := make([]uint64, len(p.mv))
	missing := func(i int, k minValuesKey) bool {
		if k.zone {
			return bits.OnesCount64(zones[i]) < needMV[i]
		}
		return len(seen[i]) < needMV[i]
	}
	met := func() bool {
		for i, k := range p.mv {
			if missing(i, k) {
				return false
			}
		}
		return true
	}
	for _, ti := range p.leanOrder {
		if out != nil && met() {
			break
		}
		pt := p.types[ti]
		if pt.slots&mask == 0 || !content.fits(pt.alloc) || ok != nil && !ok(ti) {
			continue
		}
		useful := out == nil
		for i, k := range p.mv {
			if !missing(i, k) {
				continue
			}
			if k.zone {
				for m := pt.slots & mask; m != 0; m &= m - 1 {
					if z := uint64(1) << s.slots.zone[bits.TrailingZeros64(m)]; zones[i]&z == 0 {
						zones[i] |= z
						useful = true
					}
				}
			} else if v := k.val[ti]; v >= 0 && !containsInt(seen[i], v) {
				seen[i] = append(seen[i], v)
				useful = true
			}
		}
		if !useful {
			continue
		}
		if out == nil {
			out = pt.capacity.clone()
			continue
		}
		for d := range out {
			out[d] = max(out[d], pt.capacity[d])
		}
	}
	return out
}

// leanContentCharge is leanCharge over every type of the pool with the
// pool's own minValues, remembered per content.
func (s *solver) leanContentCharge(p *pool, content vec) vec {
	key := make([]byte, 0, 8*len(content))
	for _, x := range content {
		key = binary.LittleEndian.AppendUint64(key, uint64(x))
	}
	if c, ok := p.leanCache[string(key)]; ok {
		return c
	}
	need := make([]int, len(p.mv))
	for i, k := range p.mv {
		need[i] = k.n
	}
	c := s.leanCharge(p, content, nil, math.MaxUint64, need)
	p.leanCache[string(key)] = c
	return c
}

// contentCost is what a new claim of type ti at the given price whose pods
// need content costs the plan: typeCost, except in limit mode with
// minValues, where it is the share of its lean charge (price breaking
// ties), so the type is chosen for what its fill will be charged.
func (s *solver) contentCost(p *pool, ti int, content vec, price float64) float64 {
	if !p.limitMode || !p.mvCharged {
		return p.typeCost(ti, price)
	}
	c := s.leanContentCharge(p, content)
	if c == nil {
		return p.typeCost(ti, price)
	}
	return p.share(c) + p.priceWeight*price
}

// typeCost is what choosing type ti at the given price costs the plan:
// the price, or in limit mode the type's limit share (price breaking ties).
func (p *pool) typeCost(ti int, price float64) float64 {
	if !p.limitMode {
		return price
	}
	return p.limitShare[ti] + p.priceWeight*price
}

// exceeds is the solver's test of a pool's resource limits (the rule is
// overLimit's): the first dimension in which charging add instead of prev
// (nil: nothing) would take what the pool counts — its launched and
// in-flight claims' capacity plus this solve's planned claims — past its
// limit, or -1. Every resource a limit names is a dimension (prepare), so
// a limit on something no pod asks for still binds.
func (p *pool) exceeds(add, prev vec) int {
	if !p.hasLimit {
		return -1
	}
	return overLimit(p.limit, p.used, add, prev)
}

// overLimit is the rule of a pool's resource limits, for the solver and
// LimitRefusal alike: the first dimension in which used plus add, less
// prev (what the claim was charged before, nil for a new claim), would be
// past limit (-1 where unlimited), or -1.
func overLimit(limit, used, add, prev vec) int {
	for d, l := range limit {
		if l < 0 {
			continue
		}
		x := add[d]
		if prev != nil {
			x -= prev[d]
		}
		if x > l-used[d] {
			return d
		}
	}
	return -1
}

// limitReason says which limit refuses a claim of capacity add (the
// resource, the limit as the NodePool spells it, and what the pool counts).
func (s *solver) limitReason(p *pool, d int, add vec, what string) string {
	return limitText(p.np, s.d, d, p.used[d], add[d], what)
}

func limitText(np *NodePool, d *dims, i int, used, add int64, what string) string {
	lim := np.Limits[d.names[i]]
	u, a := d.quantity(i, used), d.quantity(i, add)
	return fmt.Sprintf("pool %q: limit %s: %s would be exceeded (the pool counts %s launched and planned; %s adds %s)",
		np.Name, d.names[i], lim.String(), u.String(), what, a.String())
}

// canOpen is the solver's test of a pool's node-count limit
// (limits.nodes): whether the pool may have one more node or claim.
func (s *solver) canOpen(p *pool) bool {
	return !nodesReached(s.nodeLimit[p.idx], s.nodesUsed[p.idx])
}

// nodesReached is the rule of limits.nodes: a pool counting used nodes
// may not have another when it has a limit (>= 0) and used reaches it.
func nodesReached(limit, used int64) bool {
	return limit >= 0 && used >= limit
}

// nodeLimitReason says that the pool's node-count limit binds.
func (s *solver) nodeLimitReason(p *pool) string {
	return nodeLimitText(p.np, s.nodeLimit[p.idx], s.nodesUsed[p.idx])
}

func nodeLimitText(np *NodePool, limit, used int64) string {
	return fmt.Sprintf("pool %q: limit %s: %d reached (the pool counts %d launched and planned nodes)",
		np.Name, nsv1.ResourceNodes, limit, used)
}

// LimitRefusal is the limits rule for one more claim of np outside a
// solve: "" when np's usage (np.Usage, "nodes" counting its claims) plus
// one claim charged add (the largest capacity among its options, as
// provisioning.Usage counts a claim in flight) stays within every limit np
// names, else why not, worded as the solver words a pod's refusal. The
// disruption planner judges the replacements it launches by it, against a
// pool whose usage no longer counts the nodes they replace.
func LimitRefusal(np *NodePool, add corev1.ResourceList, what string) string {
	if len(np.Limits) == 0 {
		return ""
	}
	if q, ok := np.Limits[nsv1.ResourceNodes]; ok {
		used := np.Usage[nsv1.ResourceNodes]
		if nodesReached(q.Value(), used.Value()) {
			return nodeLimitText(np, q.Value(), used.Value())
		}
	}
	var names []corev1.ResourceName
	for name := range np.Limits {
		if name != nsv1.ResourceNodes {
			names = append(names, name)
		}
	}
	d := newDims(names)
	limit := make(vec, d.n())
	for i := range limit {
		limit[i] = -1
	}
	for name, q := range np.Limits {
		if i, ok := d.index[name]; ok {
			limit[i] = quantityValue(name, q)
		}
	}
	used, charge := d.fromList(np.Usage), d.fromList(add)
	if i := overLimit(limit, used, charge, nil); i >= 0 {
		return limitText(np, d, i, used[i], charge[i], what)
	}
	return ""
}
