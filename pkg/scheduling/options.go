package scheduling

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Option lists. A claim lists the (type, zone, capacity type) offerings
// that hold its pods; EC2's price-capacity-optimized strategy may launch
// any of them, preferring deep pools over cheap ones. A claim whose
// cheapest option is a 1-vCPU type could otherwise list types sixty times
// larger, and the launch could cost that much more. So every list is
// bounded to a price ceiling relative to its cheapest option (Options'
// OptionPriceCeiling, default 2×, or the pool's own), and widened past it
// only as far as the spot-option floor (MinSpotOptions) and the pool's
// minValues need.

// spotNeed is the spot-option floor of a list in the slots ctSlots (one
// capacity type): MinSpotOptions for spot, none otherwise.
func (s *solver) spotNeed(ctSlots uint64) int {
	if ctSlots&s.spot == 0 {
		return 0
	}
	return s.opts.MinSpotOptions
}

// ceilingOf is the price ceiling of pool p's claims, as a multiple of a
// claim's cheapest option.
func (s *solver) ceilingOf(p *pool) float64 {
	if c := p.np.OptionPriceCeiling; c > 0 {
		return math.Max(1, c)
	}
	return s.opts.OptionPriceCeiling
}

// optionFloors counts what a list of options gives toward the floors:
// spot options and distinct values of each minValues key.
type optionFloors struct {
	spotNeed, spot int
	mv             []minValuesKey
	seen           []map[string]struct{}
}

func newOptionFloors(spotNeed int, mv []minValuesKey) *optionFloors {
	f := &optionFloors{spotNeed: spotNeed, mv: mv, seen: make([]map[string]struct{}, len(mv))}
	for i := range f.seen {
		f.seen[i] = map[string]struct{}{}
	}
	return f
}

// add counts o and reports whether it brought something a floor still
// needed.
func (f *optionFloors) add(o LaunchOption) bool {
	useful := false
	if o.CapacityType == nsv1.CapacityTypeSpot && f.spot < f.spotNeed {
		f.spot++
		useful = true
	}
	for i, k := range f.mv {
		if len(f.seen[i]) >= k.n {
			continue
		}
		v := optionValue(o, k)
		if _, ok := f.seen[i][v]; !ok && v != "" {
			f.seen[i][v] = struct{}{}
			useful = true
		}
	}
	return useful
}

func (f *optionFloors) met() bool {
	if f.spot < f.spotNeed {
		return false
	}
	for i, k := range f.mv {
		if len(f.seen[i]) < k.n {
			return false
		}
	}
	return true
}

// capOptions keeps the price-ordered options priced at most ceiling times
// the cheapest, then, in price order, only those of the dearer options
// that bring a spot option or a minValues value the list still lacks.
func (s *solver) capOptions(opts []LaunchOption, p *pool, ceiling float64, spotNeed int) []LaunchOption {
	if len(opts) == 0 {
		return opts
	}
	limit := ceiling * opts[0].Price
	floors := newOptionFloors(spotNeed, p.mv)
	out := opts[:0]
	for _, o := range opts {
		// Options are price-ordered, so the cheap ones are counted first.
		useful := floors.add(o)
		if o.Price <= limit*(1+1e-9) || useful {
			out = append(out, o)
		}
	}
	return out
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
	// A reservation with an instance free that holds the bin comes first:
	// it is paid for already.
	if claim, maxCap, ok := s.claimReserved(b, within); ok {
		return claim, maxCap, nil
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
			if pt.slots&b.slots&^s.reserved&(1<<si) != 0 && (best < 0 || s.marginalPrice(pt, si) < s.marginalPrice(pt, best)) {
				best = si
			}
		}
		if best < 0 {
			continue // only reserved slots, used up
		}
		for _, m := range s.ctMasks {
			if m&(1<<best) != 0 {
				cts = append(cts, m)
			}
		}
		break
	}
	if len(cts) == 0 {
		if b.slots&^s.reserved == 0 {
			return nil, nil, fmt.Errorf("pool %q: no capacity reservation it may use has an instance free that holds its share", p.np.Name)
		}
		return nil, nil, fmt.Errorf("pool %q: no instance type fits its share within the pool's limits", p.np.Name)
	}
	// The other capacity types are tried only when the first misses a
	// minValues.
	for _, m := range s.ctMasks {
		if m != cts[0] && m&b.slots != 0 && m&s.reserved == 0 {
			cts = append(cts, m)
		}
	}
	var firstErr error
	for _, ctSlots := range cts {
		claim, maxCap, err := s.claimOptions(b, ctSlots, within)
		if err == nil {
			s.chargeCommitments(claim)
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
	maxN := s.opts.MaxOptionsPerClaim
	ceiling := s.ceilingOf(p)
	var opts []LaunchOption
	maxCap := make(vec, s.d.n())
	var used []*poolType
	// Exotic types (GPUs, accelerators, bare metal) are options only when
	// nothing else holds the pods: the provider drops them from a launch
	// that has other options, so they must not count toward its floors.
	for _, exotic := range []bool{false, true} {
		opts, used = s.collectOptions(b, ctSlots, within, exotic)
		if len(opts) > 0 {
			break
		}
	}
	sortOptions(opts)
	opts = s.capOptions(opts, p, ceiling, s.spotNeed(ctSlots))
	if p.hasLimit && !p.turns {
		opts = s.limitOptions(opts, p)
	}
	opts = keepMinValues(opts, maxN, p.mv)
	if len(opts) == 0 {
		return nil, nil, fmt.Errorf("pool %q: no instance type fits its share within the pool's limits", p.np.Name)
	}
	// opts may still be collectOptions' scratch list: the claim keeps a copy.
	opts = append(make([]LaunchOption, 0, len(opts)), opts...)
	for _, pt := range used {
		for _, o := range opts {
			if o.InstanceType == pt.it {
				for d := range maxCap {
					maxCap[d] = max(maxCap[d], pt.capacity[d])
				}
				break
			}
		}
	}
	ct := opts[0].CapacityType
	reqs := p.reqs.Clone()
	reqs.AddAll(b.custom)
	typeNames, zones := make([]string, 0, len(opts)), make([]string, 0, len(opts))
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
	s.addPinnedTypeLabels(b, reqs)
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
	labels := make(map[string]string, len(p.labels)+len(b.custom))
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

// collectOptions lists b's options in ctSlots that pass within, in the
// pool's type order (in scratch lists the next call reuses), stopping once the list is final (see claimOptions);
// exotic types are listed only when exotic is true. Types are in order of
// their cheapest offering, so once the list holds max options no dearer
// than the next type's cheapest, it is final.
func (s *solver) collectOptions(b *bin, ctSlots uint64, within func(*poolType) bool, exotic bool) ([]LaunchOption, []*poolType) {
	p := b.p
	maxN := s.opts.MaxOptionsPerClaim
	ceiling := s.ceilingOf(p)
	opts, used := s.optBuf[:0], s.usedBuf[:0]
	defer func() { s.optBuf, s.usedBuf = opts[:0], used[:0] }()
	lowest := math.Inf(1)
	floors := newOptionFloors(s.spotNeed(ctSlots), p.mv)
	for ti, pt := range p.types {
		// Types come in order of their cheapest offering: past the ceiling
		// only floors the list does not meet yet can widen it.
		if pt.minPrice > ceiling*lowest && floors.met() {
			break
		}
		if len(opts) >= maxN && len(p.mv) == 0 {
			sortOptions(opts)
			opts = opts[:maxN]
			if opts[maxN-1].Price <= pt.minPrice {
				break
			}
		}
		if !b.types.has(ti) || pt.slots&b.slots&ctSlots == 0 || pt.exotic && !exotic || !within(pt) {
			continue
		}
		for si := range s.slots.ct {
			if pt.slots&b.slots&ctSlots&(1<<si) == 0 {
				continue
			}
			o := LaunchOption{InstanceType: pt.it, Zone: s.topo.zones[s.slots.zone[si]], CapacityType: s.slots.ct[si], Price: pt.price[si]}
			if s.reserved&(1<<si) != 0 {
				if o.Reservation = s.freeReservation(pt, si); o.Reservation == nil {
					continue
				}
				o.Price = 0
			}
			opts = append(opts, o)
			lowest = math.Min(lowest, o.Price)
			floors.add(o)
		}
		used = append(used, pt)
	}
	return opts, used
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
