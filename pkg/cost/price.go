package cost

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// What a running node costs now. One rule, read by the cost metrics,
// `nodesmith plan` and the disruption planner, so that what the metrics
// say a node costs is what consolidation weighs:
//
//   - its offering's price in its pool's instance types: the cloud's price
//     with the NodeOverlays applied (catalog.ApplyOverlays), a spot price
//     as it moves, a reserved offering at zero; else, when the pool's types
//     do not hold it, the claim's launch price (status.price);
//   - an on-demand node the commitments cover (Savings Plans, RIs;
//     catalog.Ledger) costs what they leave uncovered: the on-demand nodes
//     are charged to a fresh ledger in claim name order at those prices,
//     family and region from the instance type.

// OfferingOf is the (type, zone, capacity type) a claim runs on, from its
// status or, failing that, its labels.
func OfferingOf(c *nsv1.NodeClaim) (it, zone, ct string) {
	it, zone, ct = c.Status.InstanceType, c.Status.Zone, c.Status.CapacityType
	if it == "" {
		it = c.Labels[corev1.LabelInstanceTypeStable]
	}
	if zone == "" {
		zone = c.Labels[corev1.LabelTopologyZone]
	}
	if ct == "" {
		ct = c.Labels[nsv1.LabelCapacityType]
	}
	return it, zone, ct
}

// Priced is a claim's $/h now.
type Priced struct {
	// PerHour is what the node adds to the bill: its price less Covered.
	PerHour float64
	// Covered is the part of its price commitments cover.
	Covered float64
	// OK is false when neither its pool's types nor its status price it.
	OK bool
}

// Prices prices claims by the rule above. typesOf gives a claim's pool's
// instance types (nil: none known). The result is in claims' order.
func Prices(claims []*nsv1.NodeClaim, typesOf func(*nsv1.NodeClaim) []*catalog.InstanceType, cs []catalog.Commitment) []Priced {
	out := make([]Priced, len(claims))
	types := make([]*catalog.InstanceType, len(claims))
	for i, c := range claims {
		name, zone, ct := OfferingOf(c)
		var pool []*catalog.InstanceType
		if typesOf != nil {
			pool = typesOf(c)
		}
		for _, it := range pool {
			if it.Name != name {
				continue
			}
			types[i] = it
			if o, ok := it.Offerings.Get(zone, ct); ok {
				out[i] = Priced{PerHour: o.Price, OK: true}
			}
			break
		}
		if !out[i].OK {
			if p, ok := c.Status.PriceUSD(); ok {
				out[i] = Priced{PerHour: p, OK: true}
			}
		}
	}
	if len(cs) == 0 {
		return out
	}
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return claims[order[a]].Name < claims[order[b]].Name })
	l := catalog.NewLedger(cs)
	for _, i := range order {
		if _, _, ct := OfferingOf(claims[i]); ct != nsv1.CapacityTypeOnDemand || types[i] == nil || !out[i].OK {
			continue
		}
		covered := l.Charge(types[i].Family, types[i].Region(), out[i].PerHour)
		out[i].Covered = covered
		out[i].PerHour -= covered
	}
	return out
}
