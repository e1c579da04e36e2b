package fakeaws_test

import (
	"testing"

	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func TestSpecsFromCatalogMatchTheCatalogMarket(t *testing.T) {
	specs, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	w := fakeaws.NewWorld(fakeaws.Options{Zones: zones, Specs: fakeaws.SpecsFromCatalog(specs, "us-east-1", zones)})
	pools := map[fakeaws.PoolKey]fakeaws.Pool{}
	for _, p := range w.Pools() {
		pools[p.PoolKey] = p
	}
	cat := catalog.FromSpecs(specs, catalog.Options{Region: "us-east-1", Zones: zones})
	checked := 0
	for _, it := range cat.Types() {
		for _, o := range it.Offerings {
			p, ok := pools[fakeaws.PoolKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}]
			if !ok {
				t.Fatalf("catalog offers %s %s %s, the world has no pool", it.Name, o.Zone, o.CapacityType)
			}
			if p.Price != o.Price {
				t.Fatalf("%s %s %s: world price %v, catalog %v", it.Name, o.Zone, o.CapacityType, p.Price, o.Price)
			}
			checked++
		}
	}
	prev := map[string]bool{}
	for _, s := range specs {
		prev[s.Name] = s.PreviousGeneration
	}
	current := 0
	for k := range pools {
		if !prev[k.InstanceType] {
			current++
		}
	}
	if checked < 1000 || current != checked {
		t.Fatalf("checked %d catalog offerings; the world has %d current-generation pools", checked, current)
	}
}
