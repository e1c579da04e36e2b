package catalog

import (
	"hash/fnv"
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Snapshot offering rule. The snapshot has no per-zone data, so zones are
// assigned by hashes, deterministically, to look like real AWS: most types
// are in most zones, exotic ones in fewer, and all sizes of a family share
// their zones (AWS rolls hardware out per family).
//
//   - h = FNV-1a 64 of the family name.
//   - Zones missing: 0 when h%8 < 5, 1 when h%8 is 5 or 6, 2 when it is 7.
//     GPU and accelerator families miss one more; a bare-metal size one more
//     again. At least one zone always remains.
//   - The missing zones are consecutive in the zone list (wrapping around),
//     starting at index (h>>16) % len(zones).
//   - On-demand: every remaining zone, at the type's on-demand price.
//   - Spot, only for types whose usage classes include spot and that have a
//     spot estimate: every remaining zone, at the estimate × (1 + v), with v
//     in [−5%, +5%] from FNV-1a 64 of "type/zone", capped at the on-demand
//     price, so zones differ a little, as spot markets do.
const spotZoneSpread = 0.05

// ZonesFor is the subset of zones the snapshot rule offers spec in, in zone order.
func ZonesFor(spec *Spec, zones []string) []string {
	n := len(zones)
	if n == 0 {
		return nil
	}
	h := fnv64a(spec.Family)
	missing := 0
	switch r := h % 8; {
	case r == 7:
		missing = 2
	case r >= 5:
		missing = 1
	}
	if spec.GPUCount > 0 || spec.AcceleratorCount > 0 {
		missing++
	}
	if spec.BareMetal {
		missing++
	}
	missing = min(missing, n-1)
	start := int((h >> 16) % uint64(n))
	skip := make([]bool, n)
	for i := 0; i < missing; i++ {
		skip[(start+i)%n] = true
	}
	out := make([]string, 0, n-missing)
	for i, z := range zones {
		if !skip[i] {
			out = append(out, z)
		}
	}
	return out
}

// OfferingsFor applies the snapshot rule to spec over opts.Zones (default
// us-east-1a…f). All offerings start available.
func OfferingsFor(spec *Spec, opts Options) Offerings {
	opts = opts.withDefaults()
	zones := ZonesFor(spec, opts.Zones)
	out := make(Offerings, 0, 2*len(zones))
	spot := spec.SpotPrice > 0 && spec.SupportsUsageClass(nsv1.CapacityTypeSpot)
	for _, z := range zones {
		if spec.OnDemandPrice > 0 {
			out = append(out, Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: spec.OnDemandPrice, Available: true})
		}
		if spot {
			out = append(out, Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: spotPriceIn(spec, z), Available: true})
		}
	}
	return out
}

func spotPriceIn(spec *Spec, zone string) float64 {
	h := fnv64a(spec.Name + "/" + zone)
	v := (float64(h%2001)/2000 - 0.5) * 2 * spotZoneSpread
	p := spec.SpotPrice * (1 + v)
	if spec.OnDemandPrice > 0 {
		p = math.Min(p, spec.OnDemandPrice)
	}
	// Whole micro-dollars keep prices readable and comparisons exact.
	return math.Round(p*1e6) / 1e6
}

func fnv64a(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// Available returns the offerings that are not known to be out of capacity.
func (ofs Offerings) Available() Offerings {
	out := make(Offerings, 0, len(ofs))
	for _, o := range ofs {
		if o.Available {
			out = append(out, o)
		}
	}
	return out
}

// HasAvailable reports whether any offering is available.
func (ofs Offerings) HasAvailable() bool {
	for _, o := range ofs {
		if o.Available {
			return true
		}
	}
	return false
}

// Compatible returns the offerings in one of zones and one of capacityTypes;
// an empty set places no constraint.
func (ofs Offerings) Compatible(zones, capacityTypes sets.Set[string]) Offerings {
	out := make(Offerings, 0, len(ofs))
	for _, o := range ofs {
		if (zones.Len() == 0 || zones.Has(o.Zone)) && (capacityTypes.Len() == 0 || capacityTypes.Has(o.CapacityType)) {
			out = append(out, o)
		}
	}
	return out
}

// Cheapest returns the lowest-priced offering (ties broken by capacity type,
// then zone, so the answer is deterministic); false when there is none.
func (ofs Offerings) Cheapest() (Offering, bool) {
	if len(ofs) == 0 {
		return Offering{}, false
	}
	best := ofs[0]
	for _, o := range ofs[1:] {
		if lessOffering(o, best) {
			best = o
		}
	}
	return best, true
}

// Get returns the offering for zone and capacity type.
func (ofs Offerings) Get(zone, capacityType string) (Offering, bool) {
	for _, o := range ofs {
		if o.Zone == zone && o.CapacityType == capacityType {
			return o, true
		}
	}
	return Offering{}, false
}

// Zones returns the distinct zones of the offerings, sorted.
func (ofs Offerings) Zones() []string {
	s := sets.New[string]()
	for _, o := range ofs {
		s.Insert(o.Zone)
	}
	return sets.List(s)
}

// CapacityTypes returns the distinct capacity types of the offerings, sorted.
func (ofs Offerings) CapacityTypes() []string {
	s := sets.New[string]()
	for _, o := range ofs {
		s.Insert(o.CapacityType)
	}
	return sets.List(s)
}

// Sorted returns a copy ordered by price, then capacity type, then zone.
func (ofs Offerings) Sorted() Offerings {
	out := append(Offerings(nil), ofs...)
	sort.SliceStable(out, func(i, j int) bool { return lessOffering(out[i], out[j]) })
	return out
}

func lessOffering(a, b Offering) bool {
	if a.Price != b.Price {
		return a.Price < b.Price
	}
	if a.CapacityType != b.CapacityType {
		return a.CapacityType < b.CapacityType
	}
	return a.Zone < b.Zone
}
