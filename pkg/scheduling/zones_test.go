package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// unevenType is a 4 vCPU / 16 GiB type offered (spot and on-demand) only
// in the given zones.
func unevenType(name string, price float64, zones ...string) *catalog.InstanceType {
	it := &catalog.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}
	for _, z := range zones {
		it.Offerings = append(it.Offerings,
			catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeSpot, Price: price / 3, Available: true},
			catalog.Offering{Zone: z, CapacityType: nsv1.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return it
}

// TestSolveZoneSpreadOverUnevenOfferings: zones differ in the types they
// offer, and the cheapest type exists in one zone only. Every zone-spread
// pod is still placeable (a dearer type covers every zone), so none may be
// left over, and the spread must hold.
func TestSolveZoneSpreadOverUnevenOfferings(t *testing.T) {
	cases := []struct {
		name  string
		types []*catalog.InstanceType
		pods  []*corev1.Pod
		zones int // zones that must receive pods
	}{
		{
			name:  "cheapest type in one zone of three",
			types: []*catalog.InstanceType{unevenType("cheap", 0.1, "zone-a"), unevenType("dear", 0.3, "zone-a", "zone-b", "zone-c")},
			pods:  pods(9, "s", "500m", "1Gi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil)),
			zones: 3,
		},
		{
			name: "each zone has its own cheapest type",
			types: []*catalog.InstanceType{
				unevenType("a-only", 0.1, "zone-a"), unevenType("b-only", 0.11, "zone-b"),
				unevenType("c-only", 0.12, "zone-c"), unevenType("everywhere", 0.5, "zone-a", "zone-b", "zone-c"),
			},
			pods:  concat(pods(7, "s", "250m", "512Mi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil)), pods(5, "t", "1", "2Gi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil))),
			zones: 3,
		},
		{
			name:  "two shapes of one spread, cheap type in two zones of three",
			types: []*catalog.InstanceType{unevenType("cheap", 0.1, "zone-a", "zone-b"), unevenType("dear", 0.4, "zone-b", "zone-c")},
			pods:  concat(pods(10, "s", "100m", "100Mi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil)), pods(8, "t", "1500m", "4Gi", withSpread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, "web", nil))),
			zones: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pods: tc.pods, NodePools: []*NodePool{{Name: "p", Weight: 1, Requirements: Requirements{}, InstanceTypes: tc.types}}}
			plan, err := Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range plan.Unschedulable {
				t.Errorf("unplaced: %s", u.Reason)
			}
			got := claimZones(plan)
			if len(got) != tc.zones {
				t.Errorf("pods per zone %v, want %d zones", got, tc.zones)
			}
			lo, hi := len(tc.pods), 0
			for _, n := range got {
				lo, hi = min(lo, n), max(hi, n)
			}
			if hi-lo > 1 {
				t.Errorf("pods per zone %v: skew %d > 1", got, hi-lo)
			}
			checkPlan(t, in, plan)
		})
	}
}
