package lifecycle

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestReservationEnded(t *testing.T) {
	claim := func(ct, rtype string) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{nsv1.LabelCapacityType: ct}}}
		c.Status.CapacityType = ct
		if rtype != "" {
			c.Labels[awsv1.LabelCapacityReservationID] = "cr-1"
			c.Labels[awsv1.LabelCapacityReservationType] = rtype
		}
		return c
	}
	instance := func(ct string) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{}
		c.Status.CapacityType = ct
		return c
	}
	deleting := claim(nsv1.CapacityTypeReserved, awsv1.CapacityReservationTypeDefault)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name            string
		claim, instance *nsv1.NodeClaim
		want            bool
	}{
		{"an ODCR's instance now on-demand", claim(nsv1.CapacityTypeReserved, awsv1.CapacityReservationTypeDefault), instance(nsv1.CapacityTypeOnDemand), true},
		{"still in its reservation", claim(nsv1.CapacityTypeReserved, awsv1.CapacityReservationTypeDefault), instance(nsv1.CapacityTypeReserved), false},
		{"a Capacity Block's instance is reclaimed, not relabelled", claim(nsv1.CapacityTypeReserved, awsv1.CapacityReservationTypeCapacityBlock), instance(nsv1.CapacityTypeOnDemand), false},
		{"an on-demand claim", claim(nsv1.CapacityTypeOnDemand, ""), instance(nsv1.CapacityTypeOnDemand), false},
		{"a spot claim", claim(nsv1.CapacityTypeSpot, ""), instance(nsv1.CapacityTypeSpot), false},
		{"a claim being deleted", deleting, instance(nsv1.CapacityTypeOnDemand), false},
		{"no instance read", claim(nsv1.CapacityTypeReserved, awsv1.CapacityReservationTypeDefault), nil, false},
	}
	for _, tt := range tests {
		if got := ReservationEnded(tt.claim, tt.instance); got != tt.want {
			t.Errorf("%s: ReservationEnded = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOnDemandLabels(t *testing.T) {
	l := map[string]string{nsv1.LabelCapacityType: nsv1.CapacityTypeReserved, awsv1.LabelCapacityReservationID: "cr-1",
		awsv1.LabelCapacityReservationType: "default", awsv1.LabelCapacityReservationInterruptible: "false", "team": "ml"}
	if !OnDemandLabels(l) {
		t.Fatal("nothing changed")
	}
	want := map[string]string{nsv1.LabelCapacityType: nsv1.CapacityTypeOnDemand, "team": "ml"}
	if !maps.Equal(l, want) {
		t.Fatalf("labels %v, want %v", l, want)
	}
	if OnDemandLabels(l) {
		t.Error("relabelling an on-demand node's labels changed them")
	}
}
