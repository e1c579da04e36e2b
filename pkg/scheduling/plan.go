package scheduling

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// plan turns the filled bins into claims with price-ordered options and
// explains every pod left over. A bin that cannot become a claim (no
// option within the limits, a minValues no option set meets) gives its
// pods back as unschedulable; since that may tip a zone spread, the spread
// is reconciled again and the claims rebuilt.
func (s *solver) plan() *Plan {
	var claims []*ClaimPlan
	for guard := 0; guard < 8; guard++ {
		for guard2 := 0; guard2 < 64; guard2++ {
			spread := s.reconcileSpread()
			if !s.reconcileAffinity() && !spread {
				break
			}
		}
		s.dropped = s.dropped[:0]
		claims = s.buildClaims()
		if len(s.dropped) == 0 {
			break
		}
	}
	out := &Plan{Nominations: s.noms, NewClaims: claims}
	failed := append([]PodError(nil), s.failed...)
	for _, c := range s.classes {
		st := s.state[c]
		if len(st.left) == 0 {
			continue
		}
		reason := s.explain(c, st)
		for _, pod := range st.left {
			failed = append(failed, PodError{Pod: pod, Reason: fmt.Sprintf("cannot place pod %s: %s", podKey(pod), reason)})
		}
	}
	sortPodErrors(failed)
	out.Unschedulable = failed
	return out
}

// buildClaims builds the claims of the non-empty bins. Limits are
// pessimistic: a claim may launch any of its options, so each keeps only
// options that fit what earlier claims could take at most and what later
// claims take at least. A bin that cannot become a claim is emptied: its
// pods are uncounted and recorded in s.failed, and the bin in s.dropped.
func (s *solver) buildClaims() []*ClaimPlan {
	var out []*ClaimPlan
	later := make([][]int64, len(s.pools))
	for i, p := range s.pools {
		later[i] = make([]int64, len(p.limit))
	}
	for _, b := range s.bins {
		if len(b.pods) > 0 && b.cur >= 0 && b.p.hasLimit {
			c := b.charged()
			for d := range b.p.limit {
				later[b.p.idx][d] += c[d]
			}
		}
	}
	base := make([][]int64, len(s.pools))
	for i, p := range s.pools {
		base[i] = make([]int64, len(p.limit))
		for d := range p.limit {
			base[i][d] = p.used[d] - later[i][d] // launched before this solve
		}
	}
	n := 0
	for _, b := range s.bins {
		if len(b.pods) == 0 {
			continue
		}
		p := b.p
		var budget vec
		if p.hasLimit {
			budget = make(vec, len(p.limit))
			c := b.charged()
			for d := range p.limit {
				later[p.idx][d] -= c[d]
				budget[d] = math.MaxInt64
				if p.limit[d] >= 0 {
					budget[d] = p.limit[d] - base[p.idx][d] - later[p.idx][d]
				}
			}
		}
		claim, maxCap, err := s.claimFor(b, budget)
		if err != nil {
			for i, pod := range b.pods {
				s.failed = append(s.failed, PodError{Pod: pod, Reason: fmt.Sprintf("cannot place pod %s: %v", podKey(pod), err)})
				s.uncount(b.podCls[i], &b.host, b.zone)
			}
			b.pods, b.podCls = nil, nil
			s.dropped = append(s.dropped, b)
			continue
		}
		if budget != nil {
			for d := range p.limit {
				base[p.idx][d] += maxCap[d]
			}
		}
		n++
		claim.Name = fmt.Sprintf("claim-%04d", n)
		out = append(out, claim)
	}
	return out
}

func (s *solver) explain(c *podClass, st *classState) string {
	last := c.variants[len(c.variants)-1]
	var parts []string
	anyPool := false
	for _, f := range last.fits {
		if f.ok {
			anyPool = true
		}
	}
	if !anyPool {
		if len(s.pools) == 0 {
			parts = append(parts, "no NodePool exists and no existing node fits")
		} else {
			parts = append(parts, "no NodePool can satisfy it")
			for _, f := range last.fits {
				parts = append(parts, f.reason)
			}
		}
		return joinReasons(parts)
	}
	if len(st.why) > 0 {
		return joinReasons(st.why)
	}
	return "no node or new claim could take it with its topology constraints"
}

// claimFor computes the options of a bin: every (type, zone, capacity type)
// of its pool that holds its pods and the DaemonSet overhead, in its allowed
// slots, within the limit budget, cheapest first. Only the capacity type of
// the cheapest option is kept (spot when spot is allowed and cheaper); the
// provider falls back to on-demand itself when spot is short.
func (s *solver) claimFor(b *bin, budget vec) (*ClaimPlan, vec, error) {
	p := b.p
	within := func(pt *poolType) bool {
		if !b.used.fits(pt.alloc) {
			return false
		}
		for d := range budget {
			if pt.capacity[d] > budget[d] {
				return false
			}
		}
		return true
	}
	// The cheapest option decides the capacity type, unless its options
	// miss a minValues the next capacity type meets.
	var cts []uint64
	for ti, pt := range p.types {
		if !b.types.has(ti) || pt.slots&b.slots == 0 || !within(pt) {
			continue
		}
		best := -1
		for si := range s.slots.ct {
			if pt.slots&b.slots&(1<<si) != 0 && (best < 0 || pt.price[si] < pt.price[best]) {
				best = si
			}
		}
		for _, m := range s.ctMasks {
			if m&(1<<best) != 0 {
				cts = append(cts, m)
			}
		}
		break
	}
	if len(cts) == 0 {
		return nil, nil, fmt.Errorf("pool %q: no instance type fits its share within the pool's limits", p.np.Name)
	}
	// The other capacity types are tried only when the first misses a
	// minValues.
	for _, m := range s.ctMasks {
		if m != cts[0] && m&b.slots != 0 {
			cts = append(cts, m)
		}
	}
	var firstErr error
	for _, ctSlots := range cts {
		claim, maxCap, err := s.claimOptions(b, ctSlots, within)
		if err == nil {
			return claim, maxCap, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, nil, firstErr
}

// claimOptions builds the claim of b from its options in ctSlots (one
// capacity type) that pass within.
func (s *solver) claimOptions(b *bin, ctSlots uint64, within func(*poolType) bool) (*ClaimPlan, vec, error) {
	p := b.p
	// Types are in order of their cheapest offering, so once the list holds
	// max options no dearer than the next type's cheapest, it is final.
	maxN := s.opts.MaxOptionsPerClaim
	var opts []LaunchOption
	maxCap := make(vec, s.d.n())
	byType := map[*poolType]struct{}{}
	var used []*poolType
	for ti, pt := range p.types {
		if len(opts) >= maxN && len(p.mv) == 0 {
			sortOptions(opts)
			opts = opts[:maxN]
			if opts[maxN-1].Price <= pt.minPrice {
				break
			}
		}
		if !b.types.has(ti) || pt.slots&b.slots&ctSlots == 0 || !within(pt) {
			continue
		}
		for si := range s.slots.ct {
			if pt.slots&b.slots&ctSlots&(1<<si) == 0 {
				continue
			}
			opts = append(opts, LaunchOption{InstanceType: pt.it, Zone: s.topo.zones[s.slots.zone[si]], CapacityType: s.slots.ct[si], Price: pt.price[si]})
		}
		if _, ok := byType[pt]; !ok {
			byType[pt] = struct{}{}
			used = append(used, pt)
		}
	}
	sortOptions(opts)
	if p.hasLimit {
		opts = s.limitOptions(opts, p)
	}
	opts = keepMinValues(opts, maxN, p.mv)
	if len(opts) == 0 {
		return nil, nil, fmt.Errorf("pool %q: no instance type fits its share within the pool's limits", p.np.Name)
	}
	kept := map[string]struct{}{}
	for _, o := range opts {
		kept[o.InstanceType.Name] = struct{}{}
	}
	for _, pt := range used {
		if _, ok := kept[pt.it.Name]; ok {
			for d := range maxCap {
				maxCap[d] = max(maxCap[d], pt.capacity[d])
			}
		}
	}
	ct := opts[0].CapacityType
	reqs := p.reqs.Clone()
	reqs.AddAll(b.custom)
	var typeNames, zones []string
	for _, o := range opts {
		typeNames = append(typeNames, o.InstanceType.Name)
		zones = append(zones, o.Zone)
	}
	reqs[corev1.LabelInstanceTypeStable] = NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, typeNames...)
	if prev := p.reqs.Get(corev1.LabelInstanceTypeStable); prev != nil {
		reqs[corev1.LabelInstanceTypeStable].MinValues = prev.MinValues
	}
	reqs.Add(NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
	reqs.Add(NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, ct))
	for _, k := range reqs.Keys() {
		r := reqs[k]
		if r.MinValues == nil {
			continue
		}
		distinct := map[string]struct{}{}
		for _, o := range opts {
			switch k {
			case corev1.LabelTopologyZone:
				distinct[o.Zone] = struct{}{}
			case nsv1.LabelCapacityType:
				distinct[o.CapacityType] = struct{}{}
			default:
				if v, ok := o.InstanceType.Labels[k]; ok {
					distinct[v] = struct{}{}
				}
			}
		}
		if len(distinct) < *r.MinValues {
			return nil, nil, fmt.Errorf("pool %q: minValues %d for %s but only %d values fit the pods", p.np.Name, *r.MinValues, k, len(distinct))
		}
	}
	labels := map[string]string{}
	for k, v := range p.labels {
		labels[k] = v
	}
	for _, k := range b.custom.Keys() {
		if vals := b.custom[k].Values(); b.custom[k].Finite() && len(vals) > 0 {
			labels[k] = vals[0]
		}
	}
	req := b.used.clone()
	cheapest := p.types[b.cur]
	for ti, pt := range p.types {
		if pt.it == opts[0].InstanceType {
			cheapest = p.types[ti]
			break
		}
	}
	req.add(cheapest.daemon)
	return &ClaimPlan{
		NodePool:      p.np.Name,
		Pods:          b.pods,
		Requirements:  reqs,
		Requests:      s.d.toList(req),
		Options:       opts,
		Labels:        labels,
		Taints:        append([]corev1.Taint(nil), p.np.Taints...),
		StartupTaints: append([]corev1.Taint(nil), p.np.StartupTaints...),
	}, maxCap, nil
}

// keepMinValues cuts the price-ordered options to maxN, swapping the
// dearest options whose value is repeated for the cheapest options of values
// the cut would lose, until every minValues requirement has its count (or
// every value there is).
func keepMinValues(opts []LaunchOption, maxN int, mv []minValuesKey) []LaunchOption {
	if len(opts) <= maxN {
		return opts
	}
	kept := append([]LaunchOption(nil), opts[:maxN]...)
	valueOf := func(o LaunchOption, k minValuesKey) string {
		if k.zone {
			return o.Zone
		}
		return o.InstanceType.Labels[k.key]
	}
	for _, k := range mv {
		count := map[string]int{}
		for _, o := range kept {
			count[valueOf(o, k)]++
		}
		for _, o := range opts[maxN:] {
			if len(count) >= k.n {
				break
			}
			v := valueOf(o, k)
			if count[v] > 0 {
				continue
			}
			// Drop the dearest kept option whose value stays covered.
			for i := len(kept) - 1; i >= 0; i-- {
				if old := valueOf(kept[i], k); count[old] > 1 {
					count[old]--
					kept = append(kept[:i], kept[i+1:]...)
					break
				}
			}
			if len(kept) == maxN {
				break // nothing to drop without losing a value
			}
			kept = append(kept, o)
			count[v]++
		}
	}
	sortOptions(kept)
	return kept
}

func sortOptions(opts []LaunchOption) {
	sort.SliceStable(opts, func(i, j int) bool {
		a, c := opts[i], opts[j]
		if a.Price != c.Price {
			return a.Price < c.Price
		}
		if a.InstanceType.Name != c.InstanceType.Name {
			return a.InstanceType.Name < c.InstanceType.Name
		}
		if a.Zone != c.Zone {
			return a.Zone < c.Zone
		}
		return a.CapacityType < c.CapacityType
	})
}
