package cost

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// A node costs its offering's price in its pool's (overlaid) types, else
// its launch price; covered on-demand costs what the commitments leave,
// charged in claim name order.
func TestPrices(t *testing.T) {
	m5 := &catalog.InstanceType{Name: "m5.large", Family: "m5", OnDemandPrice: 0.096,
		Labels: map[string]string{corev1.LabelTopologyRegion: "us-east-1"},
		Offerings: catalog.Offerings{
			{Zone: "us-east-1a", CapacityType: nsv1.CapacityTypeOnDemand, Price: 0.0864, PricedBy: "ten-percent-off", Available: true},
			{Zone: "us-east-1a", CapacityType: nsv1.CapacityTypeSpot, Price: 0.03, Available: true},
		}}
	withZone := func(c *nsv1.NodeClaim) *nsv1.NodeClaim { c.Status.Zone = "us-east-1a"; return c }
	od1 := withZone(claim("a-od", "p", nsv1.CapacityTypeOnDemand, "m5.large", "0.096", ""))
	od2 := withZone(claim("b-od", "p", nsv1.CapacityTypeOnDemand, "m5.large", "0.096", ""))
	spot := withZone(claim("c-spot", "p", nsv1.CapacityTypeSpot, "m5.large", "0.041", ""))
	elsewhere := withZone(claim("d-other", "q", nsv1.CapacityTypeOnDemand, "m5.large", "0.096", ""))
	types := map[string][]*catalog.InstanceType{"p": {m5}}
	claims := []*nsv1.NodeClaim{od2, spot, elsewhere, od1} // not in name order: the ledger charges a-od first

	got := Prices(claims, PoolTypes(types), nil)
	for i, want := range []float64{0.0864, 0.03, 0.096, 0.0864} {
		if !got[i].OK || !near(got[i].PerHour, want) || got[i].Covered != 0 {
			t.Errorf("without commitments, %s = %+v, want %v (the overlaid offering, else the launch price)", claims[i].Name, got[i], want)
		}
	}
	plan := []catalog.Commitment{{Name: "sp", Type: "EC2InstanceSavingsPlan", Family: "m5", Region: "us-east-1", Hourly: 0.1}}
	got = Prices(claims, PoolTypes(types), plan)
	// a-od takes 0.0864 of the 0.1, b-od the 0.0136 left; spot is never covered;
	// d-other's pool does not hold its type, so its family and region are unknown.
	for i, want := range []struct{ perHour, covered float64 }{{0.0864 - 0.0136, 0.0136}, {0.03, 0}, {0.096, 0}, {0, 0.0864}} {
		if !near(got[i].PerHour, want.perHour) || !near(got[i].Covered, want.covered) {
			t.Errorf("with a commitment, %s = %+v, want %v/h, %v covered", claims[i].Name, got[i], want.perHour, want.covered)
		}
	}
}
