package fakeaws

import (
	"strconv"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// SpecsFromCatalog describes catalog specs to the world, offered in the zones
// and at the zone spot prices the catalog's offering rule gives them, so a
// provider that prices from the catalog sees the same market the fake sells.
// Specs not offered in the region or without an architecture, a size or an
// on-demand price are skipped; previous generations are kept (EC2 still sells
// them even though the catalog leaves them out by default).
func SpecsFromCatalog(specs []catalog.Spec, region string, zones []string) []Spec {
	out := make([]Spec, 0, len(specs))
	for i := range specs {
		cs := &specs[i]
		if !cs.OfferedInRegion || !cs.Complete() || cs.OnDemandPrice <= 0 {
			continue
		}
		s := Spec{
			Name: cs.Name, Arch: cs.Architecture, VCPU: cs.VCPUs, MemoryMiB: cs.MemoryMiB,
			GPUCount: cs.GPUCount, GPUName: cs.GPUName, GPUMfr: cs.GPUManufacturer, GPUMemMiB: cs.GPUMemoryMiB,
			MaxENIs: cs.ENIsOnDefaultCard(), IPv4PerENI: cs.IPv4PerENI, Hypervisor: cs.Hypervisor,
			BareMetal: cs.BareMetal, LocalNVMeGB: cs.InstanceStorageGB, OnDemandPrice: cs.OnDemandPrice,
			SpotPrice: cs.SpotPrice, SpotUnsupported: true, ZoneSpotPrices: map[string]float64{},
		}
		if cs.NetworkBandwidthMbps > 0 {
			s.NetworkPerformance = networkPerformance(cs.NetworkBandwidthMbps)
		}
		seen := map[string]bool{}
		for _, o := range catalog.OfferingsFor(cs, catalog.Options{Region: region, Zones: zones}) {
			if !seen[o.Zone] {
				seen[o.Zone] = true
				s.Zones = append(s.Zones, o.Zone)
			}
			if o.CapacityType == nsv1.CapacityTypeSpot {
				s.SpotUnsupported = false
				s.ZoneSpotPrices[o.Zone] = o.Price
			}
		}
		if len(s.Zones) == 0 {
			continue
		}
		out = append(out, s)
	}
	return out
}

func networkPerformance(mbps int64) string {
	if mbps%1000 == 0 {
		return strconv.FormatInt(mbps/1000, 10) + " Gigabit"
	}
	return strconv.FormatInt(mbps, 10) + " Megabit"
}
