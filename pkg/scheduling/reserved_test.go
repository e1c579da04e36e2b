package scheduling

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// reservedCatalog is smallCatalog with reservations of m.4x: available
// instances by reservation id, cr-a in zone-b, cr-b in zone-a.
func reservedCatalog(avail map[string]int) []*catalog.InstanceType {
	var rs []catalog.Reservation
	for id, n := range avail {
		zone := "zone-b"
		if id == "cr-b" {
			zone = "zone-a"
		}
		rs = append(rs, catalog.Reservation{ID: id, Type: awsv1.CapacityReservationTypeDefault, InstanceType: "m.4x", Zone: zone, Available: n})
	}
	return catalog.WithReservations(smallCatalog(), rs, time.Unix(0, 0))
}

func reservedPool(name string, avail map[string]int, opts ...func(*NodePool)) *NodePool {
	np := mkPool(name, 1, opts...)
	np.InstanceTypes = reservedCatalog(avail)
	return np
}

func TestSolveReserved(t *testing.T) {
	// Each pod fills an m.4x alone (3.5 of its 3.9 allocatable cpu), so
	// a reservation of n m.4x holds n of them.
	big := func(n int, opts ...podOpt) []*corev1.Pod { return pods(n, "w", "3500m", "1Gi", opts...) }
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		pool     *NodePool
		reserved map[string]int // want: reserved claims by reservation id
		others   int            // want: claims that are not reserved
		unsched  int
		reason   string
	}{
		{name: "reservation taken first, counted down, the rest on spot", pods: big(8), pool: reservedPool("p", map[string]int{"cr-a": 5}),
			reserved: map[string]int{"cr-a": 5}, others: 3},
		{name: "fewer pods than the reservation holds", pods: big(2), pool: reservedPool("p", map[string]int{"cr-a": 5}),
			reserved: map[string]int{"cr-a": 2}},
		{name: "two reservations are both used before spot", pods: big(6), pool: reservedPool("p", map[string]int{"cr-a": 2, "cr-b": 3}),
			reserved: map[string]int{"cr-a": 2, "cr-b": 3}, others: 1},
		{name: "a used-up reservation is ignored", pods: big(3), pool: reservedPool("p", map[string]int{"cr-a": 0}), others: 3},
		{name: "a pool that excludes reserved launches none", pods: big(3), pool: reservedPool("p", map[string]int{"cr-a": 5}, poolReq(nsv1.LabelCapacityType, corev1.NodeSelectorOpNotIn, nsv1.CapacityTypeReserved)),
			others: 3},
		{name: "a pool that requires reserved stops at the count", pods: big(7), pool: reservedPool("p", map[string]int{"cr-a": 5}, poolReq(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeReserved)),
			reserved: map[string]int{"cr-a": 5}, unsched: 2, reason: "no capacity reservation it may use has an instance free"},
		{name: "pods that require reserved", pods: big(6, withSelector(nsv1.LabelCapacityType, nsv1.CapacityTypeReserved)), pool: reservedPool("p", map[string]int{"cr-a": 4}),
			reserved: map[string]int{"cr-a": 4}, unsched: 2},
		{name: "a zone the pods exclude keeps them off its reservation", pods: big(2, withNodeAffinity([]corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a")})), pool: reservedPool("p", map[string]int{"cr-a": 5}),
			others: 2},
		{name: "small pods still go to the reservation", pods: pods(3, "s", "500m", "512Mi"), pool: reservedPool("p", map[string]int{"cr-a": 5}),
			reserved: map[string]int{"cr-a": 3}},
		// Three of these fill an m.4x. The pods that require on-demand
		// must not fill a reservation's bin: that bin would become an
		// on-demand claim while its instance, counted as taken, idles.
		{name: "pods that require on-demand stay out of the reservation's bins", pods: append(pods(2, "od", "1", "1Gi", withSelector(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)), pods(6, "s", "1", "1Gi")...),
			pool: reservedPool("p", map[string]int{"cr-a": 2}), reserved: map[string]int{"cr-a": 6}, others: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Solve(Input{Pods: tt.pods, NodePools: []*NodePool{tt.pool}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			others := 0
			for _, c := range plan.NewClaims {
				if c.Options[0].CapacityType != nsv1.CapacityTypeReserved {
					others += len(c.Pods)
					for _, o := range c.Options {
						if o.CapacityType == nsv1.CapacityTypeReserved || o.Reservation != nil {
							t.Errorf("claim %s mixes a reserved option into %s options", c.Name, c.Options[0].CapacityType)
						}
					}
					continue
				}
				if len(c.Options) != 1 || c.Options[0].Price != 0 || c.Options[0].Reservation == nil {
					t.Fatalf("reserved claim %s: options %+v, want one at price 0 naming its reservation", c.Name, c.Options)
				}
				id := c.Options[0].Reservation.ID
				got[id] += len(c.Pods)
				if r := c.Requirements.Get(awsv1.LabelCapacityReservationID); r == nil || !r.Has(id) {
					t.Errorf("claim %s lacks the requirement %s In [%s]", c.Name, awsv1.LabelCapacityReservationID, id)
				}
				if r := c.Requirements.Get(nsv1.LabelCapacityType); r == nil || r.String() != NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeReserved).String() {
					t.Errorf("claim %s capacity type requirement %v", c.Name, r)
				}
				if c.Labels[awsv1.LabelCapacityReservationID] != id || c.Labels[awsv1.LabelCapacityReservationType] != awsv1.CapacityReservationTypeDefault {
					t.Errorf("claim %s labels %v", c.Name, c.Labels)
				}
				if c.Price() != 0 {
					t.Errorf("claim %s price %v, want 0", c.Name, c.Price())
				}
			}
			if len(got) != len(tt.reserved) {
				t.Errorf("reserved claims %v, want %v", got, tt.reserved)
			}
			for id, n := range tt.reserved {
				if got[id] != n {
					t.Errorf("reserved claims %v, want %v", got, tt.reserved)
				}
			}
			if others != tt.others {
				t.Errorf("%d pods on claims not reserved, want %d", others, tt.others)
			}
			if len(plan.Unschedulable) != tt.unsched {
				t.Errorf("%d unschedulable, want %d: %v", len(plan.Unschedulable), tt.unsched, plan.Unschedulable)
			}
			if tt.reason != "" && len(plan.Unschedulable) > 0 && !strings.Contains(plan.Unschedulable[0].Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", plan.Unschedulable[0].Reason, tt.reason)
			}
		})
	}
}

// On the embedded catalog, a burst fills every reserved instance to what it
// holds before anything is bought: an ODCR of 10 m6i.xlarge (3 one-CPU 2Gi
// pods each) and a Capacity Block of 3 c7i.2xlarge (6 each, memory-bound),
// 48 pods, and the rest is bought as usual, with no reserved option.
func TestSolveFillsReservationsFirstOnTheCatalog(t *testing.T) {
	c, err := catalog.Load(catalog.Options{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	types := catalog.WithReservations(c.Types(), []catalog.Reservation{
		{ID: "cr-odcr", Type: awsv1.CapacityReservationTypeDefault, InstanceType: "m6i.xlarge", Zone: "us-east-1a", Available: 10},
		{ID: "cr-block", Type: awsv1.CapacityReservationTypeCapacityBlock, InstanceType: "c7i.2xlarge", Zone: "us-east-1b", Available: 3, End: now.Add(6 * time.Hour)},
	}, now)
	np := &NodePool{Name: "general", Requirements: Requirements{}, InstanceTypes: types, Labels: map[string]string{}}
	np.Requirements.Add(NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeReserved))
	np.Requirements.Add(NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"))
	plan, err := Solve(Input{Pods: pods(80, "w", "1", "2Gi"), NodePools: []*NodePool{np}})
	if err != nil {
		t.Fatal(err)
	}
	onRes := map[string]int{}
	claims := map[string]int{}
	placed := 0
	for _, cl := range plan.NewClaims {
		placed += len(cl.Pods)
		if r := cl.Options[0].Reservation; r != nil {
			onRes[r.ID] += len(cl.Pods)
			claims[r.ID]++
		}
	}
	if placed != 80 || len(plan.Unschedulable) != 0 {
		t.Fatalf("placed %d of 80, %d unschedulable", placed, len(plan.Unschedulable))
	}
	if claims["cr-odcr"] != 10 || claims["cr-block"] != 3 || onRes["cr-odcr"] != 30 || onRes["cr-block"] != 18 {
		t.Errorf("reserved claims %v holding %v pods; want 10 and 3 claims holding 30 and 18", claims, onRes)
	}
}
