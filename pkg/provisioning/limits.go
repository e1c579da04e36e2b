package provisioning

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Limits at launch. The solver charges a claim its expected launch
// (scheduling.ClaimCharge); the launcher keeps it to that rule by trimming
// each claim of a limited pool, as it launches, to the options that fit
// what the pool's launched capacity leaves (scheduling.TrimToLimit), one
// claim of the pool at a time. These are the pure halves: what a claim's
// options are, what it counts before it launches, what its launch is
// judged against, and the trimmed claim.

// ClaimOptions are the launch options of a claim: the offerings of the
// types its instance-type requirement lists (looked up in types) in the
// zones and capacity types its requirements allow, cheapest first;
// available ones only, unless all is true.
func ClaimOptions(c *nsv1.NodeClaim, types []*catalog.InstanceType, all bool) []scheduling.LaunchOption {
	reqs := scheduling.FromAPI(c.Spec.Requirements)
	it, zone, ct := reqs.Get(corev1.LabelInstanceTypeStable), reqs.Get(corev1.LabelTopologyZone), reqs.Get(nsv1.LabelCapacityType)
	if it == nil || !it.Finite() {
		return nil // a claim always lists its types; without them nothing is known
	}
	var out []scheduling.LaunchOption
	for _, t := range types {
		if !it.Has(t.Name) {
			continue
		}
		for _, o := range t.Offerings {
			if !all && !o.Available || zone != nil && !zone.Has(o.Zone) || ct != nil && !ct.Has(o.CapacityType) {
				continue
			}
			out = append(out, scheduling.LaunchOption{InstanceType: t, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Price < out[j].Price })
	return out
}

// claimCharge is what a claim that has not launched counts against its
// pool's limits: the capacity of its expected launch among its available
// options (scheduling.ClaimCharge), else among all its offerings, else the
// largest capacity of the types it lists, nil when none is known.
func claimCharge(c *nsv1.NodeClaim, types []*catalog.InstanceType) corev1.ResourceList {
	if ch := scheduling.ClaimCharge(ClaimOptions(c, types, false)); ch != nil {
		return ch
	}
	if ch := scheduling.ClaimCharge(ClaimOptions(c, types, true)); ch != nil {
		return ch
	}
	byName := make(map[string]*catalog.InstanceType, len(types))
	for _, it := range types {
		byName[it.Name] = it
	}
	return largestCapacity(c, byName)
}

// LaunchUsage is what the launch of claim is judged against: the launched
// capacity of the other claims of its pool (poolClaims) — their reported
// capacity, or what this process saw them launch as (launched, by name)
// while its cache lags — leaving out, as Usage does, claims being deleted,
// and the candidates claim replaces (the disruption planner judged a
// replacement against the room their removal leaves). Claims that have not
// launched count nothing: each is trimmed at its own launch, and a pool's
// launches are one at a time.
func LaunchUsage(claim *nsv1.NodeClaim, poolClaims []*nsv1.NodeClaim, launched map[string]corev1.ResourceList) corev1.ResourceList {
	replaces := claim.Annotations[nsv1.AnnotationReplacementFor]
	total := corev1.ResourceList{}
	add := func(res corev1.ResourceList) {
		for name, q := range res {
			cur := total[name]
			cur.Add(q)
			total[name] = cur
		}
	}
	listed := map[string]bool{}
	for _, c := range poolClaims {
		listed[c.Name] = true
		if c.Name == claim.Name || !c.DeletionTimestamp.IsZero() {
			continue
		}
		if replaces != "" && c.Annotations[nsv1.AnnotationDisruptionCommand] == replaces {
			continue
		}
		if len(c.Status.Capacity) > 0 {
			add(c.Status.Capacity)
		} else {
			add(launched[c.Name])
		}
	}
	names := make([]string, 0, len(launched))
	for name := range launched {
		if !listed[name] && name != claim.Name {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		add(launched[name])
	}
	return total
}

// TrimClaim applies np's launch rule to claim (scheduling.TrimToLimit over
// all its offerings, with the pool's minValues): a copy of claim whose
// instance-type requirement lists only the types of the options that fit
// what counted (LaunchUsage) leaves, and ""; or nil and why not. A pool
// without resource limits gets claim itself.
func TrimClaim(np *nsv1.NodePool, claim *nsv1.NodeClaim, types []*catalog.InstanceType, counted corev1.ResourceList) (*nsv1.NodeClaim, string) {
	sp := scheduling.NodePoolFromAPI(np, types)
	limited := false
	for name := range sp.Limits {
		limited = limited || name != nsv1.ResourceNodes
	}
	if !limited {
		return claim, ""
	}
	kept, why := scheduling.TrimToLimit(sp, counted, ClaimOptions(claim, types, true), "nodeclaim "+claim.Name)
	if why != "" {
		return nil, why
	}
	keep := map[string]bool{}
	for _, o := range kept {
		keep[o.InstanceType.Name] = true
	}
	out := claim.DeepCopy()
	for i, r := range out.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			var vals []string
			for _, v := range r.Values {
				if keep[v] {
					vals = append(vals, v)
				}
			}
			out.Spec.Requirements[i].Values = vals
		}
	}
	return out, ""
}

// LimitTight reports whether np's resource limits could be passed if every
// claim of np that has not launched — poolClaims' and batch's (claims about
// to launch that the cache may not list yet), not being deleted — launched
// as its largest option, with the launched capacity LaunchUsage counts.
// When not, any option of any claim may launch, together: the
// largest-option rule holds. When so, launches go one at a time, each
// trimmed (TrimClaim).
func LimitTight(np *nsv1.NodePool, poolClaims, batch []*nsv1.NodeClaim, types []*catalog.InstanceType, launched map[string]corev1.ResourceList) bool {
	total := LaunchUsage(&nsv1.NodeClaim{}, poolClaims, launched)
	byName := make(map[string]*catalog.InstanceType, len(types))
	for _, it := range types {
		byName[it.Name] = it
	}
	seen := map[string]bool{}
	for _, list := range [][]*nsv1.NodeClaim{batch, poolClaims} {
		for _, c := range list {
			if seen[c.Name] || !c.DeletionTimestamp.IsZero() || len(c.Status.Capacity) > 0 || launched[c.Name] != nil {
				seen[c.Name] = true
				continue
			}
			seen[c.Name] = true
			largest := largestCapacity(c, byName)
			if largest == nil {
				return true // what it may launch as is unknown: trim it
			}
			for name, q := range largest {
				cur := total[name]
				cur.Add(q)
				total[name] = cur
			}
		}
	}
	for name, lim := range np.Spec.Limits {
		if name == nsv1.ResourceNodes {
			continue
		}
		if used, ok := total[name]; ok && used.Cmp(lim) > 0 {
			return true
		}
	}
	return false
}
