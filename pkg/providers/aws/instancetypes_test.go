package aws

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func offering(types []*catalog.InstanceType, name, zone, ct string) (catalog.Offering, bool) {
	for _, it := range types {
		if it.Name == name {
			return it.Offerings.Get(zone, ct)
		}
	}
	return catalog.Offering{}, false
}

func TestICEOfferingsHiddenForTTL(t *testing.T) {
	e := newEnv(t, envOpts{})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	cheap := e.cheapestSpot("m5.large")
	e.world.InjectICE(cheap.InstanceType, cheap.Zone, cheap.CapacityType, epoch.Add(time.Hour))
	e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	steps := []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{2*time.Minute + 59*time.Second, false},
		{3*time.Minute + time.Second, true},
	}
	for _, s := range steps {
		e.clock.SetTime(epoch.Add(s.after))
		types, err := e.p.GetInstanceTypes(e.ctx, testPool())
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offering(types, cheap.InstanceType, cheap.Zone, nsv1.CapacityTypeSpot)
		if !ok {
			t.Fatalf("offering %v missing from the catalog", cheap)
		}
		if o.Available != s.want {
			t.Errorf("after %v: available = %v, want %v", s.after, o.Available, s.want)
		}
	}
}

func TestDiscoveredOfferings(t *testing.T) {
	specs := snapshotSpecs(t, testTypes)
	e := newEnv(t, envOpts{specs: specs, provider: func(o *Options) { o.DiscoverInstanceTypes = true }})
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	// The world sells every type in every zone; discovery must see all three zones per type.
	for _, it := range types {
		if zs := it.Offerings.Zones(); len(zs) != 3 {
			t.Errorf("%s offered in %v, want 3 zones", it.Name, zs)
		}
	}
	if got := e.world.Stats()["DescribeInstanceTypeOfferings"]; got == 0 {
		t.Error("DescribeInstanceTypeOfferings was never called")
	}
}

func TestSpotPricesRefresh(t *testing.T) {
	e := newEnv(t, envOpts{})
	key := e.cheapestSpot("m5.large")
	e.world.SetPrice(key.InstanceType, key.Zone, key.CapacityType, 0.0123)
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offering(types, key.InstanceType, key.Zone, nsv1.CapacityTypeSpot)
	if !ok || o.Price != 0.0123 {
		t.Errorf("spot price after refresh = %v (%v), want 0.0123", o.Price, ok)
	}
}

func TestDiscoveredTypeUnknownToTheSnapshot(t *testing.T) {
	specs := snapshotSpecs(t, testTypes)
	e := newEnv(t, envOpts{specs: specs, provider: func(o *Options) { o.DiscoverInstanceTypes = true }, world: func(o *fakeaws.Options) {
		o.Specs = append(o.Specs, fakeaws.Spec{Name: "z9g.large", Arch: "arm64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10,
			Hypervisor: "nitro", OnDemandPrice: 0.08, SpotPrice: 0.02})
	}})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	var found *catalog.InstanceType
	for _, it := range types {
		if it.Name == "z9g.large" {
			found = it
		}
	}
	if found == nil {
		t.Fatal("z9g.large was not discovered")
	}
	if found.Arch != "arm64" || found.VCPU != 2 || found.Family != "z9g" || found.Generation != 9 {
		t.Errorf("discovered spec: arch %s vcpu %d family %s gen %d", found.Arch, found.VCPU, found.Family, found.Generation)
	}
	// No on-demand price is known for it: spot offerings only, at the market price.
	for _, o := range found.Offerings {
		if o.CapacityType != nsv1.CapacityTypeSpot || o.Price < 0.018 || o.Price > 0.022 {
			t.Errorf("offering %+v, want spot near 0.02", o)
		}
	}
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "z9g.large")))
	if got.Status.InstanceType != "z9g.large" || got.Status.CapacityType != nsv1.CapacityTypeSpot {
		t.Errorf("launched %s %s", got.Status.InstanceType, got.Status.CapacityType)
	}
}
