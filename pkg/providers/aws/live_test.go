package aws

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/providers/aws/plan"
)

// liveTypes are snapshot types sold by a drifted world in the live tests.
var liveTypes = []string{"m5.large", "m5.xlarge", "m6i.large", "m6i.xlarge", "c5.large", "c5.xlarge", "c6i.large", "r5.large", "m6g.large", "c6g.large", "c7g.large", "m7i.large"}

var worldZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// driftedEnv is a world whose offerings and prices depart from the
// snapshot's rule (fakeaws.DriftMarket) and a provider that reads the live
// market: offerings, spot price history, and on-demand prices from the
// Pricing API.
func driftedEnv(t *testing.T) *env {
	t.Helper()
	specs := snapshotSpecs(t, liveTypes)
	return newEnv(t, envOpts{
		specs:   specs,
		pricing: true,
		provider: func(o *Options) {
			o.DiscoverInstanceTypes = true
		},
		world: func(o *fakeaws.Options) {
			o.Zones = worldZones
			o.Specs = fakeaws.DriftMarket(fakeaws.SpecsFromCatalog(specs, "us-east-1", worldZones), worldZones, 7)
		},
	})
}

type offerKey struct{ typ, zone, ct string }

func offeringsOf(types []*catalog.InstanceType) map[offerKey]float64 {
	out := map[offerKey]float64{}
	for _, it := range types {
		for _, o := range it.Offerings {
			out[offerKey{it.Name, o.Zone, o.CapacityType}] = o.Price
		}
	}
	return out
}

// TestLiveCatalogFollowsTheMarket checks the provider's offerings against
// the world's own pools (read from the world, not through the provider)
// once it has refreshed, and that they differ from the snapshot's rule
// that the provider used before: otherwise the test could not tell live
// data from the snapshot.
func TestLiveCatalogFollowsTheMarket(t *testing.T) {
	e := driftedEnv(t)
	e.p.opts.DiscoverInstanceTypes = false // the snapshot view first
	before, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	e.p.opts.DiscoverInstanceTypes = true
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	after, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	want := map[offerKey]float64{}
	for _, pl := range e.world.Pools() {
		want[offerKey{pl.InstanceType, pl.Zone, pl.CapacityType}] = pl.Price
	}
	got := offeringsOf(after)
	for k, price := range want {
		if g, ok := got[k]; !ok || math.Abs(g-price) > 1e-9 {
			t.Errorf("%v: provider has %v (%v), the market %v", k, g, ok, price)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%v: the provider offers a pool the market does not have", k)
		}
	}
	snap := offeringsOf(before)
	var withdrawn, added, repriced int
	for k, p := range snap {
		g, ok := got[k]
		switch {
		case !ok:
			withdrawn++
		case math.Abs(g-p) > 1e-9:
			repriced++
		}
	}
	for k := range got {
		if _, ok := snap[k]; !ok {
			added++
		}
	}
	if withdrawn == 0 || added == 0 || repriced == 0 {
		t.Fatalf("the drifted market must differ from the snapshot: %d pools withdrawn, %d added, %d repriced", withdrawn, added, repriced)
	}
	st := e.p.CatalogStatus()
	if !st.OnDemandAt.Equal(epoch) || !st.SpotPricesAt.Equal(epoch) || !st.OfferingsAt.Equal(epoch) {
		t.Errorf("catalog status %+v, want every part read at %v", st, epoch)
	}
}

// TestLaunchFollowsLiveData launches a type that the market withdrew from
// a zone the snapshot offers it in: the CreateFleet request must leave that
// zone out and carry the live spot prices.
func TestLaunchFollowsLiveData(t *testing.T) {
	e := driftedEnv(t)
	e.p.opts.DiscoverInstanceTypes = false
	before, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	e.p.opts.DiscoverInstanceTypes = true
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	market := map[offerKey]float64{}
	for _, pl := range e.world.Pools() {
		market[offerKey{pl.InstanceType, pl.Zone, pl.CapacityType}] = pl.Price
	}
	// A type with a spot pool the snapshot offers and the market withdrew.
	var typ, gone string
	for k := range offeringsOf(before) {
		if _, ok := market[k]; !ok && k.ct == nsv1.CapacityTypeSpot && (typ == "" || k.typ+k.zone < typ+gone) {
			typ, gone = k.typ, k.zone
		}
	}
	if typ == "" {
		t.Fatal("the drifted market withdrew no spot pool of the snapshot")
	}
	claim := sized(newClaim("live", reqIn(corev1.LabelInstanceTypeStable, typ), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeSpot)))
	claim.Spec.Resources.Requests = nil
	got := e.create(claim)
	zoneOf := map[string]string{}
	for _, s := range e.world.Subnets() {
		zoneOf[s.ID] = s.Zone
	}
	after, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	risk := map[offerKey]float64{}
	for _, it := range catalog.WithSpotRisk(after, e.p.history, nil) {
		for _, o := range it.Offerings {
			risk[offerKey{it.Name, o.Zone, o.CapacityType}] = o.InterruptionRisk
		}
	}
	calls := e.fleetCalls()
	if len(calls) == 0 {
		t.Fatal("no CreateFleet call")
	}
	var zones []string
	for _, cfg := range calls[0].LaunchTemplateConfigs {
		for _, ov := range cfg.Overrides {
			z := zoneOf[aws.ToString(ov.SubnetId)]
			zones = append(zones, z)
			price, ok := market[offerKey{string(ov.InstanceType), z, nsv1.CapacityTypeSpot}]
			if !ok {
				t.Errorf("override %s in %s: the market has no spot pool there", ov.InstanceType, z)
			}
			// Priority is the risk-weighted price the overrides are ordered by.
			key := offerKey{string(ov.InstanceType), z, nsv1.CapacityTypeSpot}
			want := plan.Option{Price: price, Risk: risk[key]}.Cost()
			if p := aws.ToFloat64(ov.Priority); math.Abs(p-want) > 1e-9 {
				t.Errorf("override %s in %s has priority %v, want the market's price %v weighted by its risk %v: %v", ov.InstanceType, z, p, price, risk[key], want)
			}
		}
	}
	if slices.Contains(zones, gone) {
		t.Errorf("the request asks for %s in %s, which the market withdrew (zones %v)", typ, gone, zones)
	}
	if got.Status.InstanceType != typ || got.Status.Zone == gone {
		t.Errorf("launched %s in %s", got.Status.InstanceType, got.Status.Zone)
	}
	want := market[offerKey{typ, got.Status.Zone, nsv1.CapacityTypeSpot}]
	if p, _ := got.Status.PriceUSD(); math.Abs(p-want) > 1e-6 {
		t.Errorf("claim priced %v, the market's price in %s is %v", p, got.Status.Zone, want)
	}
}

// TestSpotPriceChangeMovesThePlan raises the cheapest spot pool of a type
// above the others: after the next refresh the plan orders it last.
func TestSpotPriceChangeMovesThePlan(t *testing.T) {
	e := driftedEnv(t)
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A type the market sells as spot in more than one zone.
	zones := map[string]int{}
	for _, pl := range e.world.Pools() {
		if pl.CapacityType == nsv1.CapacityTypeSpot {
			zones[pl.InstanceType]++
		}
	}
	typ := ""
	for _, n := range liveTypes {
		if zones[n] > 1 {
			typ = n
			break
		}
	}
	if typ == "" {
		t.Fatal("no type is sold as spot in two zones")
	}
	cheap := e.cheapestSpot(typ)
	e.world.SetPrice(cheap.InstanceType, cheap.Zone, cheap.CapacityType, 5)
	if err := e.p.RefreshSpotPrices(e.ctx); err != nil {
		t.Fatal(err)
	}
	if now := e.cheapestSpot(typ); now.Zone == cheap.Zone {
		t.Fatalf("after the price rose, %s is still the cheapest spot zone of %s", cheap.Zone, typ)
	}
	got := e.create(newClaim("moved", reqIn(corev1.LabelInstanceTypeStable, typ), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeSpot)))
	if got.Status.Zone == cheap.Zone {
		t.Errorf("launched %s in %s, whose spot price rose to 5", typ, got.Status.Zone)
	}
}

// TestOnDemandPricesFromThePricingAPI: the drifted world raised some
// on-demand prices; the provider must price on-demand offerings as the
// Pricing API says, and keep the snapshot's until it first answers.
func TestOnDemandPricesFromThePricingAPI(t *testing.T) {
	e := driftedEnv(t)
	snap := map[string]float64{}
	for _, s := range snapshotSpecs(t, liveTypes) {
		snap[s.Name] = s.OnDemandPrice
	}
	e.world.InjectServerError("pricing:GetProducts", 6) // every attempt of the SDK retryer
	if err := e.p.RefreshOnDemandPrices(e.ctx); err == nil || !strings.Contains(err.Error(), "pricing:GetProducts") {
		t.Fatalf("refresh with the Pricing API failing: %v, want an error naming pricing:GetProducts", err)
	}
	if at := e.p.CatalogStatus().OnDemandAt; !at.IsZero() {
		t.Fatalf("OnDemandAt = %v after a failed refresh", at)
	}
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	for k, p := range offeringsOf(types) {
		if k.ct == nsv1.CapacityTypeOnDemand && p != snap[k.typ] {
			t.Errorf("before the Pricing API answered, %v is priced %v, want the snapshot's %v", k, p, snap[k.typ])
		}
	}
	if err := e.p.RefreshOnDemandPrices(e.ctx); err != nil {
		t.Fatal(err)
	}
	types, err = e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, pl := range e.world.Pools() {
		if pl.CapacityType != nsv1.CapacityTypeOnDemand {
			continue
		}
		got, ok := offeringsOf(types)[offerKey{pl.InstanceType, pl.Zone, pl.CapacityType}]
		if !ok {
			continue // not in this node class's zones
		}
		if math.Abs(got-pl.Price) > 1e-9 {
			t.Errorf("%s on-demand priced %v, the Pricing API says %v", pl.InstanceType, got, pl.Price)
		}
		if math.Abs(got-snap[pl.InstanceType]) > 1e-9 {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("the drifted world changed no on-demand price: the test cannot tell the Pricing API from the snapshot")
	}
}

func TestParsePriceListEntry(t *testing.T) {
	tests := []struct {
		name, doc, wantType string
		want                float64
		wantErr             string
	}{
		{"hourly USD", `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A.B":{"priceDimensions":{"A.B.C":{"unit":"Hrs","pricePerUnit":{"USD":"0.0960000000"}}}}}}}`, "m5.large", 0.096, ""},
		{"no instance type", `{"product":{"attributes":{}},"terms":{}}`, "", 0, "no product.attributes.instanceType"},
		{"not hourly", `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"unit":"Quantity","pricePerUnit":{"USD":"700"}}}}}}}`, "", 0, "no hourly on-demand USD price"},
		{"bad number", `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"unit":"Hrs","pricePerUnit":{"USD":"cheap"}}}}}}}`, "", 0, `USD price "cheap"`},
		{"not JSON", `{`, "", 0, "decoding a price list entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, price, err := ParsePriceListEntry(tt.doc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || typ != tt.wantType || price != tt.want {
				t.Fatalf("got %s %v %v, want %s %v", typ, price, err, tt.wantType, tt.want)
			}
		})
	}
}

func TestPricingRegion(t *testing.T) {
	for region, want := range map[string]string{"us-west-2": "us-east-1", "eu-west-1": "eu-central-1", "ap-northeast-1": "ap-south-1", "sa-east-1": "us-east-1", "me-south-1": "eu-central-1"} {
		if got := PricingRegion(region); got != want {
			t.Errorf("PricingRegion(%s) = %s, want %s", region, got, want)
		}
	}
}
