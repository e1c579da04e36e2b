package catalog

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/apis/v1alpha1"
)

// Node overlays. A NodeOverlay changes what the solver assumes of the
// instance types its requirements select: the price of their offerings and
// extended resources they advertise. ApplyOverlays is the one place the
// rule lives; the provider's instance types (cloudprovider/overlay, which
// the controllers and the simulator use) and the CLI's plan and explain
// (pkg/whatif) all pass through it.
//
// The rule, per instance type and offering:
//   - the overlays whose requirements match the offering's labels (the
//     type's labels plus zone and capacity type) are ordered by weight,
//     highest first, then by name, alphabetically first first;
//   - the first of them that sets a price (price or priceAdjustment)
//     decides it; a price adjustment never takes it below zero; the offering
//     records the overlay's name (PricedBy);
//   - reserved offerings are not repriced: they are paid for already.
//
// Per instance type, capacity additions of every overlay that matches at
// least one of its offerings are merged, resource by resource, in the same
// order: the first overlay that sets a resource decides its quantity.
//
// Two overlays of equal weight that both decide on the same offering's
// price or the same type's resource conflict: the order above still picks
// one, deterministically, and both are listed in the result's Conflicts.

// Overlay is a NodeOverlay as the catalog applies it.
type Overlay struct {
	Name         string
	Weight       int32
	Requirements []nsv1.NodeSelectorRequirementWithMinValues
	// Price, when set, replaces the offering's price.
	Price *float64
	// Adjustment, when set, changes the offering's price.
	Adjustment *PriceAdjustment
	// Capacity are extended resources added to the type.
	Capacity corev1.ResourceList
}

// PriceAdjustment is an absolute amount in USD per hour, or a percentage.
type PriceAdjustment struct {
	Amount  float64
	Percent bool
}

// Apply is the adjusted price, never below zero.
func (a PriceAdjustment) Apply(price float64) float64 {
	if a.Percent {
		price *= 1 + a.Amount/100
	} else {
		price += a.Amount
	}
	return math.Max(0, price)
}

// ParsePriceAdjustment reads "+0.1", "-0.05", "-10%", "+5%".
func ParsePriceAdjustment(s string) (PriceAdjustment, error) {
	body, pct := strings.CutSuffix(s, "%")
	if len(body) < 2 || (body[0] != '+' && body[0] != '-') {
		return PriceAdjustment{}, fmt.Errorf("price adjustment %q: want a signed amount such as +0.1 or a percentage such as -10%%", s)
	}
	v, err := strconv.ParseFloat(body, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return PriceAdjustment{}, fmt.Errorf("price adjustment %q: want a signed amount such as +0.1 or a percentage such as -10%%", s)
	}
	return PriceAdjustment{Amount: v, Percent: pct}, nil
}

// OverlayFrom reads a NodeOverlay; an error quotes the bad value.
func OverlayFrom(o *v1alpha1.NodeOverlay) (Overlay, error) {
	out := Overlay{Name: o.Name, Requirements: o.Spec.Requirements, Capacity: o.Spec.Capacity}
	if o.Spec.Weight != nil {
		out.Weight = *o.Spec.Weight
	}
	if o.Spec.Price != nil {
		v, err := strconv.ParseFloat(*o.Spec.Price, 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return Overlay{}, fmt.Errorf("NodeOverlay %s: price %q: want a non-negative number of dollars per hour", o.Name, *o.Spec.Price)
		}
		out.Price = &v
	}
	if o.Spec.PriceAdjustment != nil {
		a, err := ParsePriceAdjustment(*o.Spec.PriceAdjustment)
		if err != nil {
			return Overlay{}, fmt.Errorf("NodeOverlay %s: %w", o.Name, err)
		}
		out.Adjustment = &a
	}
	if out.Price != nil && out.Adjustment != nil {
		return Overlay{}, fmt.Errorf("NodeOverlay %s: price and priceAdjustment are exclusive", o.Name)
	}
	return out, nil
}

// OverlaysFrom reads overlays, leaving out (and reporting by name) those
// that do not parse.
func OverlaysFrom(os []v1alpha1.NodeOverlay) ([]Overlay, map[string]error) {
	var out []Overlay
	bad := map[string]error{}
	for i := range os {
		o, err := OverlayFrom(&os[i])
		if err != nil {
			bad[os[i].Name] = err
			continue
		}
		out = append(out, o)
	}
	return out, bad
}

func (o *Overlay) setsPrice() bool { return o.Price != nil || o.Adjustment != nil }

func (o *Overlay) price(p float64) float64 {
	if o.Price != nil {
		return *o.Price
	}
	return o.Adjustment.Apply(p)
}

// Matches reports whether the overlay's requirements all hold for labels.
func (o *Overlay) Matches(labels map[string]string) bool {
	for _, r := range o.Requirements {
		if v, ok := labels[r.Key]; !r.Allows(v, ok) {
			return false
		}
	}
	return true
}

// OverlayResult is what ApplyOverlays did besides the types.
type OverlayResult struct {
	// Conflicts names, per overlay, the overlays of equal weight it
	// conflicted with (sorted); absent when it conflicted with none.
	Conflicts map[string][]string
	// Applied names the overlays that changed at least one price or capacity.
	Applied map[string]bool
}

// ApplyOverlays returns types with the overlays applied (see the rule
// above). Types no overlay changes are returned as they are, others are
// copies, so a shared catalog is never changed.
func ApplyOverlays(types []*InstanceType, overlays []Overlay) ([]*InstanceType, OverlayResult) {
	res := OverlayResult{Conflicts: map[string][]string{}, Applied: map[string]bool{}}
	if len(overlays) == 0 {
		return types, res
	}
	ord := append([]Overlay(nil), overlays...)
	sort.SliceStable(ord, func(a, b int) bool {
		if ord[a].Weight != ord[b].Weight {
			return ord[a].Weight > ord[b].Weight
		}
		return ord[a].Name < ord[b].Name
	})
	conflict := func(a, b *Overlay) {
		for _, p := range [][2]string{{a.Name, b.Name}, {b.Name, a.Name}} {
			if !slices.Contains(res.Conflicts[p[0]], p[1]) {
				res.Conflicts[p[0]] = append(res.Conflicts[p[0]], p[1])
			}
		}
	}
	out := make([]*InstanceType, len(types))
	for i, it := range types {
		var ofs Offerings
		matchedAny := make([]bool, len(ord))
		for j, o := range it.Offerings {
			labels := it.LabelsFor(o)
			var winner *Overlay
			for k := range ord {
				ov := &ord[k]
				if !ov.Matches(labels) {
					continue
				}
				matchedAny[k] = true
				if !ov.setsPrice() || o.CapacityType == nsv1.CapacityTypeReserved {
					continue
				}
				if winner == nil {
					winner = ov
				} else if winner.Weight == ov.Weight {
					conflict(winner, ov)
				}
			}
			if winner == nil {
				continue
			}
			if ofs == nil {
				ofs = append(Offerings(nil), it.Offerings...)
			}
			ofs[j].Price = winner.price(o.Price)
			ofs[j].PricedBy = winner.Name
			res.Applied[winner.Name] = true
		}
		added := corev1.ResourceList{}
		decidedBy := map[corev1.ResourceName]*Overlay{}
		for k := range ord {
			ov := &ord[k]
			if !matchedAny[k] {
				continue
			}
			for name, q := range ov.Capacity {
				if prev := decidedBy[name]; prev != nil {
					if prev.Weight == ov.Weight {
						conflict(prev, ov)
					}
					continue
				}
				decidedBy[name] = ov
				added[name] = q
				res.Applied[ov.Name] = true
			}
		}
		if ofs == nil && len(added) == 0 {
			out[i] = it
			continue
		}
		cp := *it
		if ofs != nil {
			cp.Offerings = ofs
		}
		if len(added) > 0 {
			cp.Capacity = it.Capacity.DeepCopy()
			if cp.Capacity == nil {
				cp.Capacity = corev1.ResourceList{}
			}
			for name, q := range added {
				cp.Capacity[name] = q
			}
			if it.allocatable != nil {
				cp.allocatable = subtractFloor(cp.Capacity, cp.Overhead.Total())
			}
		}
		out[i] = &cp
	}
	for _, names := range res.Conflicts {
		sort.Strings(names)
	}
	return out, res
}
