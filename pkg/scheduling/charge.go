package scheduling

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// What a claim is charged. A NodePool's limits count launched capacity, so
// the honest charge of a claim that has not launched yet is what it will
// launch as: the option price-capacity-optimized picks. Charging every
// claim its largest option instead (safe whichever option launches) wastes
// a binding limit on options nobody launches — minValues keeps memory-heavy
// families among the options of cpu-shaped claims, and those would be
// charged twice the memory the claim launches with.
//
// Charging the expected launch is safe only when launches keep to it: a
// claim that launches larger than it was charged takes room a later claim
// was planned in. So the launch re-trims: at launch a claim keeps only the
// options that fit what the pool's limits leave once the capacity of its
// launched nodes and claims (and of claims launching at that moment, at
// their largest remaining option) is counted, and it must still meet the
// pool's minValues among them, or it is refused (TrimToLimit). The solver
// plans each claim's options the same way, at its turn in plan order
// (Options.ChargeExpectedLaunch): launched in plan order as their cheapest
// options, every claim finds the room it was planned with; an insufficient-
// capacity fallback to a larger option may cost a later claim its launch,
// never the limit.

// ClaimCharge is what a claim whose launch options are opts counts against
// its pool's limits until it launches: the capacity of its expected launch,
// the cheapest option (the option price-capacity-optimized chooses when
// pools are equally deep; ties go to the first listed). Nil for no options.
func ClaimCharge(opts []LaunchOption) corev1.ResourceList {
	if len(opts) == 0 {
		return nil
	}
	best := 0
	for i, o := range opts {
		if o.Price < opts[best].Price {
			best = i
		}
	}
	return opts[best].InstanceType.Capacity.DeepCopy()
}

// TrimToLimit is the launch rule of a limited pool: the options of a claim
// of np (opts, in their order) whose instance type's capacity fits what
// np's resource limits leave once counted is charged — counted being the
// capacity of np's launched nodes and claims and of its claims launching
// now (at their largest option), not this claim's own — and "" ; or nil and
// why not, worded as the solver words a refused pod: no option fits, or
// the options that fit miss a minValues of np's requirements. A pool with
// no resource limit keeps every option. The node-count limit is not
// checked here: a claim counts as a node from its creation.
func TrimToLimit(np *NodePool, counted corev1.ResourceList, opts []LaunchOption, what string) ([]LaunchOption, string) {
	var names []corev1.ResourceName
	for name := range np.Limits {
		if name != nsv1.ResourceNodes {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return opts, ""
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	fits := func(c corev1.ResourceList) corev1.ResourceName {
		for _, name := range names {
			lim, used := np.Limits[name], counted[name]
			q := c[name]
			if quantityValue(name, q) > quantityValue(name, lim)-quantityValue(name, used) {
				return name
			}
		}
		return ""
	}
	var kept []LaunchOption
	var first corev1.ResourceName
	for _, o := range opts {
		if name := fits(o.InstanceType.Capacity); name != "" {
			if first == "" {
				first = name
			}
			continue
		}
		kept = append(kept, o)
	}
	if len(kept) == 0 {
		if first == "" {
			return nil, fmt.Sprintf("pool %q: %s has no launch options", np.Name, what)
		}
		lim, used := np.Limits[first], counted[first]
		return nil, fmt.Sprintf("pool %q: limit %s: %s would be exceeded by every option of %s (the pool counts %s launched and launching)",
			np.Name, first, lim.String(), what, used.String())
	}
	if key, n, got := missingMinValues(np.Requirements, kept); key != "" {
		return nil, fmt.Sprintf("pool %q: minValues %d for %s but the options of %s within the limits give only %d",
			np.Name, n, key, what, got)
	}
	return kept, ""
}

// missingMinValues is the first requirement of reqs with minValues that
// opts do not meet ("" when all are met), its minValues and the distinct
// values opts give it.
func missingMinValues(reqs Requirements, opts []LaunchOption) (string, int, int) {
	for _, k := range reqs.Keys() {
		r := reqs[k]
		if r.MinValues == nil || *r.MinValues <= 1 || k == nsv1.LabelCapacityType {
			continue // one claim launches one capacity type
		}
		distinct := map[string]struct{}{}
		for _, o := range opts {
			if k == corev1.LabelTopologyZone {
				distinct[o.Zone] = struct{}{}
			} else if v, ok := o.InstanceType.Labels[k]; ok {
				distinct[v] = struct{}{}
			}
		}
		if len(distinct) < *r.MinValues {
			return k, *r.MinValues, len(distinct)
		}
	}
	return "", 0, 0
}

// PlannedCharge is what a planned claim whose launch options are opts
// counts against its pool's limits under o: its expected launch
// (ClaimCharge) with ChargeExpectedLaunch, else, per resource, the largest
// capacity among its options (whichever launches, the limit holds). Nil for
// no options.
func (o Options) PlannedCharge(opts []LaunchOption) corev1.ResourceList {
	if o.ChargeExpectedLaunch {
		return ClaimCharge(opts)
	}
	var out corev1.ResourceList
	for _, op := range opts {
		if out == nil {
			out = corev1.ResourceList{}
		}
		for name, q := range op.InstanceType.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}
