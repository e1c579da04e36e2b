package cost

import (
	"sort"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// Item is one node: where it comes from and what it costs.
type Item struct {
	NodePool     string
	CapacityType string
	InstanceType string
	// PerHour is the price in USD per hour.
	PerHour float64
}

// Line is the nodes of one NodePool, capacity type and instance type.
type Line struct {
	NodePool     string  `json:"nodePool"`
	CapacityType string  `json:"capacityType"`
	InstanceType string  `json:"instanceType"`
	Nodes        int     `json:"nodes"`
	PerHour      float64 `json:"dollarsPerHour"`
}

// Breakdown is a fleet's $/h, line by line and in total.
type Breakdown struct {
	Lines   []Line  `json:"lines"`
	Nodes   int     `json:"nodes"`
	PerHour float64 `json:"dollarsPerHour"`
}

// Sum groups items into lines, ordered by pool, capacity type and type.
func Sum(items []Item) Breakdown {
	type key struct{ pool, ct, it string }
	byKey := map[key]*Line{}
	var out Breakdown
	for _, it := range items {
		k := key{it.NodePool, it.CapacityType, it.InstanceType}
		l := byKey[k]
		if l == nil {
			l = &Line{NodePool: it.NodePool, CapacityType: it.CapacityType, InstanceType: it.InstanceType}
			byKey[k] = l
		}
		l.Nodes++
		l.PerHour += it.PerHour
		out.Nodes++
		out.PerHour += it.PerHour
	}
	for _, l := range byKey {
		out.Lines = append(out.Lines, *l)
	}
	sort.Slice(out.Lines, func(i, j int) bool {
		a, b := out.Lines[i], out.Lines[j]
		if a.NodePool != b.NodePool {
			return a.NodePool < b.NodePool
		}
		if a.CapacityType != b.CapacityType {
			return a.CapacityType < b.CapacityType
		}
		return a.InstanceType < b.InstanceType
	})
	return out
}

// By sums the breakdown's $/h by one dimension (e.g. Line.NodePool).
func (b Breakdown) By(dim func(Line) string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range b.Lines {
		out[dim(l)] += l.PerHour
	}
	return out
}

// Claims are the items of the claims that are running or launching and
// have a price, priced by Prices (typesOf and cs as there): claims being
// deleted are going away and count no more.
func Claims(claims []*nsv1.NodeClaim, typesOf func(*nsv1.NodeClaim) []*catalog.InstanceType, cs []catalog.Commitment) []Item {
	live := Live(claims)
	var out []Item
	for i, p := range Prices(live, typesOf, cs) {
		if !p.OK {
			continue
		}
		out = append(out, itemOf(live[i], p.PerHour))
	}
	return out
}

func itemOf(c *nsv1.NodeClaim, perHour float64) Item {
	return Item{NodePool: c.Labels[nsv1.LabelNodePool], CapacityType: c.Status.CapacityType, InstanceType: c.Status.InstanceType, PerHour: perHour}
}

// Live are the claims not being deleted.
func Live(claims []*nsv1.NodeClaim) []*nsv1.NodeClaim {
	out := make([]*nsv1.NodeClaim, 0, len(claims))
	for _, c := range claims {
		if c.DeletionTimestamp.IsZero() {
			out = append(out, c)
		}
	}
	return out
}

// PoolTypes is a typesOf for Prices: a claim's pool's types in types (by
// NodePool name).
func PoolTypes(types map[string][]*catalog.InstanceType) func(*nsv1.NodeClaim) []*catalog.InstanceType {
	return func(c *nsv1.NodeClaim) []*catalog.InstanceType { return types[c.Labels[nsv1.LabelNodePool]] }
}
