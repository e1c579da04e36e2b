package catalog

import (
	"math"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestAdvisorRisk(t *testing.T) {
	for bucket, want := range map[string]float64{"<5%": 2.5, "5-10%": 7.5, "10-15%": 12.5, "15-20%": 17.5, ">20%": 25, "": UnknownSpotRisk, "weird": UnknownSpotRisk} {
		if got := AdvisorRisk(bucket); got != want {
			t.Errorf("AdvisorRisk(%q) = %v, want %v", bucket, got, want)
		}
	}
}

func TestInterruptionHistoryDecays(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	h := NewInterruptionHistory(clk, 0)
	h.Record("m5.large", "us-east-1a")
	h.Record("m5.large", "us-east-1a")
	tests := []struct {
		step time.Duration
		pool string
		want float64
	}{
		{0, "us-east-1a", 2 * ObservedInterruptionRisk},
		{0, "us-east-1b", 0},
		{ObservedRiskHalfLife, "us-east-1a", ObservedInterruptionRisk},
		{ObservedRiskHalfLife, "us-east-1a", ObservedInterruptionRisk / 2},
		{20 * ObservedRiskHalfLife, "us-east-1a", 0},
	}
	for i, tt := range tests {
		clk.Step(tt.step)
		if got := h.Observed("m5.large", tt.pool); math.Abs(got-tt.want) > 1e-4 {
			t.Errorf("step %d: Observed(%s) = %v, want %v", i, tt.pool, got, tt.want)
		}
	}
	var none *InterruptionHistory
	if none.Observed("m5.large", "us-east-1a") != 0 {
		t.Error("a nil history observed something")
	}
	// A later record forgets pools that decayed to nothing.
	h.Record("c5.large", "us-east-1a")
	if len(h.scores) != 1 {
		t.Errorf("history keeps %d pools, want only the fresh one", len(h.scores))
	}
}

func TestWithSpotRisk(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	h := NewInterruptionHistory(clk, 0)
	h.Record("calm.large", "z2")
	calm := &InstanceType{Name: "calm.large", SpotInterruptionBucket: "<5%", Offerings: Offerings{
		{Zone: "z1", CapacityType: nsv1.CapacityTypeSpot, Price: 1, Available: true},
		{Zone: "z2", CapacityType: nsv1.CapacityTypeSpot, Price: 1, Available: true},
		{Zone: "z1", CapacityType: nsv1.CapacityTypeOnDemand, Price: 3, Available: true},
	}}
	wild := &InstanceType{Name: "wild.large", SpotInterruptionBucket: ">20%", Offerings: Offerings{
		{Zone: "z1", CapacityType: nsv1.CapacityTypeSpot, Price: 0.5, Available: true},
	}}
	odOnly := &InstanceType{Name: "od.large", Offerings: Offerings{{Zone: "z1", CapacityType: nsv1.CapacityTypeOnDemand, Price: 2, Available: true}}}
	types := []*InstanceType{calm, wild, odOnly}

	type want struct {
		risk      float64
		available bool
	}
	tests := []struct {
		name    string
		ceiling *int32
		want    map[string][]want // type → per offering
	}{
		{name: "no ceiling: risks filled, everything available", want: map[string][]want{
			"calm.large": {{2.5, true}, {12.5, true}, {0, true}}, "wild.large": {{25, true}}, "od.large": {{0, true}}}},
		{name: "ceiling 10 drops >20% and the zone that just interrupted", ceiling: ptr.To[int32](10), want: map[string][]want{
			"calm.large": {{2.5, true}, {12.5, false}, {0, true}}, "wild.large": {{25, false}}, "od.large": {{0, true}}}},
		{name: "ceiling 20 keeps the interrupted zone, drops >20%", ceiling: ptr.To[int32](20), want: map[string][]want{
			"calm.large": {{2.5, true}, {12.5, true}, {0, true}}, "wild.large": {{25, false}}, "od.large": {{0, true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithSpotRisk(types, h, tt.ceiling)
			for _, it := range got {
				w := tt.want[it.Name]
				for j, o := range it.Offerings {
					if o.InterruptionRisk != w[j].risk || o.Available != w[j].available {
						t.Errorf("%s %s/%s: risk %v available %v, want %v %v", it.Name, o.Zone, o.CapacityType, o.InterruptionRisk, o.Available, w[j].risk, w[j].available)
					}
				}
			}
			if got[2] != odOnly {
				t.Error("a type without spot offerings was copied")
			}
		})
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.InterruptionRisk != 0 || !o.Available {
				t.Fatalf("input %s modified: %+v", it.Name, o)
			}
		}
	}
	// Already rated and nothing changed: no copy.
	rated := WithSpotRisk(types, h, nil)
	if again := WithSpotRisk(rated, h, nil); again[0] != rated[0] {
		t.Error("re-rating unchanged offerings copied the type")
	}
}
