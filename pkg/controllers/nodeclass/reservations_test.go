package nodeclass

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// reservationResolver resolves every class with the reservations it holds.
type reservationResolver struct{ rs []awsv1.CapacityReservation }

func (r *reservationResolver) Resolve(_ context.Context, nc *awsv1.EC2NodeClass) (*aws.Resolved, error) {
	return &aws.Resolved{
		Subnets:        []aws.ResolvedSubnet{{Subnet: awsv1.Subnet{ID: "subnet-1", Zone: "us-east-1a"}}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}}, AMIs: []awsv1.AMI{{ID: "ami-1", Architecture: "amd64"}},
		InstanceProfile: "profile-" + nc.Name, CapacityReservations: r.rs,
	}, nil
}

func (r *reservationResolver) DeleteInstanceProfile(context.Context, *awsv1.EC2NodeClass) error {
	return nil
}

// TestReservationsInStatusAndMetrics: the resolved reservations are written
// to status.capacityReservations, the class is Ready with
// CapacityReservationsReady, and each reservation's free count is a gauge;
// a reservation that is gone loses its series.
func TestReservationsInStatusAndMetrics(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	rec, _ := controllertest.Recorder(clk)
	m := controllertest.Metrics()
	end := metav1.NewTime(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	res := &reservationResolver{rs: []awsv1.CapacityReservation{
		{ID: "cr-0a", ReservationType: "default", InstanceType: "m5.xlarge", AvailabilityZone: "us-east-1a", AvailableInstanceCount: 3, InstanceMatchCriteria: "targeted"},
		{ID: "cr-0b", ReservationType: "capacity-block", InstanceType: "p5.48xlarge", AvailabilityZone: "us-east-1a", AvailableInstanceCount: 1, EndTime: &end},
	}}
	c := New(h.Client, res, clk, rec, m)
	name := fmt.Sprintf("reserved-%d", time.Now().UnixNano()%1000000)
	nc := nodeClass(name)
	if err := h.Direct.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, nc)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	got := &awsv1.EC2NodeClass{}
	if err := h.Direct.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.CapacityReservations) != 2 || got.Status.CapacityReservations[1].EndTime == nil || !got.Status.CapacityReservations[1].EndTime.Equal(&end) {
		t.Fatalf("status.capacityReservations = %+v", got.Status.CapacityReservations)
	}
	for _, ct := range []string{awsv1.ConditionCapacityReservationsReady, awsv1.ConditionReady} {
		if !hasTrue(got.Status.Conditions, ct) {
			t.Errorf("condition %s not True: %+v", ct, got.Status.Conditions)
		}
	}
	if v := testutil.ToFloat64(m.CapacityReservationAvailable.WithLabelValues(name, "cr-0a", "default", "m5.xlarge", "us-east-1a")); v != 3 {
		t.Errorf("cr-0a gauge %v, want 3", v)
	}
	res.rs = res.rs[:1]
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.CapacityReservationAvailable); n != 1 {
		t.Errorf("%d reservation series after cr-0b went, want 1", n)
	}
}

func hasTrue(cs []metav1.Condition, t string) bool {
	for _, c := range cs {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
