package catalog

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestZonesForRule(t *testing.T) {
	zones := DefaultZones
	tests := []struct {
		name string
		spec Spec
		// maxZones is the most zones the rule may give this kind of type.
		maxZones int
	}{
		{"plain", Spec{Name: "x.large", Family: "x"}, 6},
		{"gpu family misses at least one zone", Spec{Name: "g.large", Family: "g", GPUCount: 1}, 5},
		{"accelerator family misses at least one zone", Spec{Name: "inf.large", Family: "inf", AcceleratorCount: 1}, 5},
		{"gpu metal misses at least two", Spec{Name: "g.metal", Family: "g", GPUCount: 8, BareMetal: true}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ZonesFor(&tt.spec, zones)
			if len(got) == 0 || len(got) > tt.maxZones || len(got) < tt.maxZones-2 {
				t.Errorf("%d zones %v, want between %d and %d", len(got), got, max(tt.maxZones-2, 1), tt.maxZones)
			}
			if !reflect.DeepEqual(got, ZonesFor(&tt.spec, zones)) {
				t.Error("not deterministic")
			}
		})
	}
	// Sizes of a family share zones (AWS rolls hardware out per family).
	a := ZonesFor(&Spec{Name: "m5.large", Family: "m5"}, zones)
	b := ZonesFor(&Spec{Name: "m5.4xlarge", Family: "m5"}, zones)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("m5 sizes in different zones: %v vs %v", a, b)
	}
	// One zone always survives, and no zones gives no zones.
	if got := ZonesFor(&Spec{Family: "g", GPUCount: 1, BareMetal: true}, []string{"z1"}); len(got) != 1 {
		t.Errorf("single zone: got %v", got)
	}
	if got := ZonesFor(&Spec{Family: "m5"}, nil); got != nil {
		t.Errorf("no zones: got %v", got)
	}
}

// Over the whole snapshot the rule looks like AWS: most types everywhere,
// every type somewhere, and the missing zones spread over all zones.
func TestZonesForDistribution(t *testing.T) {
	c := mustLoad(t, Options{})
	everywhere, missingIn := 0, map[string]int{}
	for _, it := range c.Types() {
		zs := sets.New(it.Offerings.Zones()...)
		if zs.Len() == len(DefaultZones) {
			everywhere++
		}
		for _, z := range DefaultZones {
			if !zs.Has(z) {
				missingIn[z]++
			}
		}
	}
	n := len(c.Types())
	if everywhere*2 < n || everywhere == n {
		t.Errorf("%d of %d types in every zone; want most but not all", everywhere, n)
	}
	for _, z := range DefaultZones {
		if missingIn[z] == 0 {
			t.Errorf("no type is missing from %s; the rule should spread gaps over zones", z)
		}
	}
}

func TestOfferingsFor(t *testing.T) {
	tests := []struct {
		name                   string
		spec                   Spec
		wantOnDemand, wantSpot bool
	}{
		{"both", Spec{Name: "a.large", Family: "a", OnDemandPrice: 1, SpotPrice: 0.4, SupportedUsageClasses: []string{"on-demand", "spot"}}, true, true},
		{"spot estimate but no spot usage class", Spec{Name: "b.large", Family: "b", OnDemandPrice: 1, SpotPrice: 0.4, SupportedUsageClasses: []string{"on-demand"}}, true, false},
		{"spot usage class but no estimate", Spec{Name: "c.large", Family: "c", OnDemandPrice: 1, SupportedUsageClasses: []string{"on-demand", "spot"}}, true, false},
		{"spot only", Spec{Name: "d.large", Family: "d", SpotPrice: 0.4, SupportedUsageClasses: []string{"spot"}}, false, true},
		{"no price", Spec{Name: "e.large", Family: "e", SupportedUsageClasses: []string{"on-demand", "spot"}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offs := OfferingsFor(&tt.spec, Options{})
			zones := ZonesFor(&tt.spec, DefaultZones)
			od := offs.Compatible(nil, sets.New(nsv1.CapacityTypeOnDemand))
			spot := offs.Compatible(nil, sets.New(nsv1.CapacityTypeSpot))
			if (len(od) > 0) != tt.wantOnDemand || (len(spot) > 0) != tt.wantSpot {
				t.Fatalf("on-demand %d spot %d offerings", len(od), len(spot))
			}
			for _, group := range []Offerings{od, spot} {
				if len(group) > 0 && !reflect.DeepEqual(group.Zones(), zones) {
					t.Errorf("offered in %v, rule says %v", group.Zones(), zones)
				}
			}
			for _, o := range od {
				if o.Price != tt.spec.OnDemandPrice || !o.Available {
					t.Errorf("on-demand offering %+v", o)
				}
			}
			for _, o := range spot {
				lo, hi := tt.spec.SpotPrice*(1-spotZoneSpread)-1e-6, tt.spec.SpotPrice*(1+spotZoneSpread)+1e-6
				if o.Price < lo || o.Price > hi || !o.Available {
					t.Errorf("spot offering %+v outside [%f, %f]", o, lo, hi)
				}
				if tt.spec.OnDemandPrice > 0 && o.Price > tt.spec.OnDemandPrice {
					t.Errorf("spot offering %+v costs more than on-demand", o)
				}
			}
		})
	}
}

// Spot never costs more than on-demand, even where the advisor saw no savings.
func TestSpotCappedAtOnDemand(t *testing.T) {
	spec := Spec{Name: "a1.2xlarge", Family: "a1", OnDemandPrice: 0.204, SpotPrice: 0.204, SupportedUsageClasses: []string{"on-demand", "spot"}}
	varied := false
	for _, o := range OfferingsFor(&spec, Options{}) {
		if o.Price > spec.OnDemandPrice {
			t.Errorf("%+v above on-demand", o)
		}
		if o.Price < spec.OnDemandPrice {
			varied = true
		}
	}
	if !varied {
		t.Error("no zone got a spot price below the estimate; the per-zone spread is not applied")
	}
}

func TestOfferingsHelpers(t *testing.T) {
	offs := Offerings{
		{Zone: "z2", CapacityType: "spot", Price: 0.3, Available: true},
		{Zone: "z1", CapacityType: "spot", Price: 0.2, Available: false},
		{Zone: "z1", CapacityType: "on-demand", Price: 1, Available: true},
		{Zone: "z3", CapacityType: "spot", Price: 0.3, Available: true},
	}
	if got := offs.Available(); len(got) != 3 {
		t.Errorf("Available: %v", got)
	}
	if c, ok := offs.Cheapest(); !ok || c.Zone != "z1" || c.CapacityType != "spot" {
		t.Errorf("Cheapest: %+v", c)
	}
	if c, ok := offs.Available().Cheapest(); !ok || c.Zone != "z2" {
		t.Errorf("Cheapest available (tie broken by zone): %+v", c)
	}
	if _, ok := (Offerings{}).Cheapest(); ok {
		t.Error("Cheapest of nothing")
	}
	if got := offs.Compatible(sets.New("z1"), nil); len(got) != 2 {
		t.Errorf("Compatible(z1, any): %v", got)
	}
	if got := offs.Compatible(sets.New("z1", "z3"), sets.New("spot")); len(got) != 2 {
		t.Errorf("Compatible(z1|z3, spot): %v", got)
	}
	if got := offs.Compatible(nil, nil); len(got) != len(offs) {
		t.Errorf("Compatible(any, any): %v", got)
	}
	if o, ok := offs.Get("z1", "on-demand"); !ok || o.Price != 1 {
		t.Errorf("Get: %+v %v", o, ok)
	}
	if _, ok := offs.Get("z9", "spot"); ok {
		t.Error("Get found a missing offering")
	}
	if !offs.HasAvailable() || (Offerings{{Available: false}}).HasAvailable() {
		t.Error("HasAvailable")
	}
	if got := offs.Zones(); !reflect.DeepEqual(got, []string{"z1", "z2", "z3"}) {
		t.Errorf("Zones: %v", got)
	}
	if got := offs.CapacityTypes(); !reflect.DeepEqual(got, []string{"on-demand", "spot"}) {
		t.Errorf("CapacityTypes: %v", got)
	}
	sorted := offs.Sorted()
	want := []string{"z1/spot", "z2/spot", "z3/spot", "z1/on-demand"}
	for i, o := range sorted {
		if o.Zone+"/"+o.CapacityType != want[i] {
			t.Errorf("Sorted[%d] = %s/%s, want %s", i, o.Zone, o.CapacityType, want[i])
		}
	}
	if offs[0].Zone != "z2" {
		t.Error("Sorted reordered its receiver")
	}
}

// TestOfferingRuleGolden pins the rule's output for a few types. The wanted
// values were worked out by hand from the documented rule (FNV-1a of the
// family, missing-zone count and start) with a separate script, not copied
// from this code's output; a change here shifts every simulation, so it
// must be deliberate.
func TestOfferingRuleGolden(t *testing.T) {
	tests := []struct {
		name      string
		zones     []string
		spotIn1c  float64 // 0: no spot offering in us-east-1c
		hasSpot1c bool
	}{
		// m5: h%8 = 7 → 2 missing, start 0 → a, b missing.
		{"m5.large", []string{"us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}, 0.032679, true},
		// c6g: h%8 = 1 → everywhere.
		{"c6g.xlarge", DefaultZones, 0.052526, true},
		// p3dn: h%8 = 2 → 0, +1 GPU; start 4 → e missing.
		{"p3dn.24xlarge", []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"}, 4.181924, true},
		// inf2: h%8 = 6 → 1, +1 accelerator; start 3 → d, e missing.
		{"inf2.xlarge", []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1f"}, 0.163176, true},
		// m6g: h%8 = 7 → 2, +1 metal; start 1 → b, c, d missing.
		{"m6g.metal", []string{"us-east-1a", "us-east-1e", "us-east-1f"}, 0, false},
	}
	c := mustLoad(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := c.Get(tt.name)
			if !ok {
				t.Fatalf("%s not loaded", tt.name)
			}
			if got := it.Offerings.Zones(); !reflect.DeepEqual(got, tt.zones) {
				t.Errorf("zones %v, want %v", got, tt.zones)
			}
			o, ok := it.Offerings.Get("us-east-1c", nsv1.CapacityTypeSpot)
			if ok != tt.hasSpot1c || o.Price != tt.spotIn1c {
				t.Errorf("spot in us-east-1c: %+v (found %v), want price %v", o, ok, tt.spotIn1c)
			}
		})
	}
}
