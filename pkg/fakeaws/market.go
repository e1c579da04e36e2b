package fakeaws

import (
	"fmt"
	"hash/fnv"
	"math"
)

// DriftMarket returns specs whose market departs from the one they
// describe, the way a real region departs from any snapshot: some types
// are missing from a zone they were offered in, some are offered in a zone
// they were not, spot prices move by up to ±40 % per zone (never above
// on-demand), and some on-demand prices rise 3–12 %. The changes are a
// deterministic function of seed and the type and zone names, so a test
// can rebuild them. A world built from SpecsFromCatalog specs and then
// drifted is priced and placed differently from the catalog snapshot's
// rule, so a provider that launches by the snapshot instead of live data
// (DescribeInstanceTypeOfferings, DescribeSpotPriceHistory, GetProducts)
// shows up in a test. zones are the world's zones.
func DriftMarket(specs []Spec, zones []string, seed int64) []Spec {
	out := make([]Spec, 0, len(specs))
	for _, s := range specs {
		h := driftHash(seed, s.Name, "")
		offered := s.Zones
		if len(offered) == 0 {
			offered = zones
		}
		var kept []string
		for _, z := range zones {
			in := contains(offered, z)
			switch {
			case in && driftHash(seed, s.Name, z)%5 == 0 && len(offered) > 1:
				// Withdrawn from this zone (a fifth of the pairs).
			case !in && driftHash(seed, s.Name, z)%3 == 0:
				kept = append(kept, z) // newly offered here
			case in:
				kept = append(kept, z)
			}
		}
		if len(kept) == 0 {
			kept = []string{offered[0]}
		}
		d := s
		d.Zones = kept
		if h%3 == 0 {
			d.OnDemandPrice = roundPrice(s.OnDemandPrice * (1.03 + float64(h%10)/100))
		}
		if !s.SpotUnsupported {
			base := s.SpotPrice
			if base <= 0 {
				base = s.OnDemandPrice * 0.4
			}
			d.ZoneSpotPrices = make(map[string]float64, len(kept))
			for _, z := range kept {
				f := 0.6 + 0.8*float64(driftHash(seed, s.Name, "spot/"+z)%1000)/999
				d.ZoneSpotPrices[z] = roundPrice(math.Min(base*f, d.OnDemandPrice))
			}
		}
		out = append(out, d)
	}
	return out
}

func driftHash(seed int64, name, zone string) uint64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%d/%s/%s", seed, name, zone)
	return h.Sum64()
}
