package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// The reserved area of the lab: an On-Demand Capacity Reservation the
// account holds, selected by the area's EC2NodeClass.
const (
	reservedPool = "reserved"
	// reservedType is in the spot fleet's families, and the catalog
	// offers it in reservedZone.
	reservedType  = "m5.xlarge"
	reservedZone  = labRegion + "c"
	reservedCount = 5
	reservedTag   = "nodesmith.sh/lab-reservation"
	// reservedPodCPU fills an m5.xlarge alone (3.92 cpu allocatable): one
	// pod per node, so six pods need six nodes.
	reservedPodCPU = "3"
)

// reservedCapacity: an ODCR with 5 free m5.xlarge; a burst of six pods
// lands on it first (five nodes labelled reserved, their instances in the
// reservation), the sixth node is bought as usual; the node class's status
// shows the reservation used up; and when the nodes go, the reservation's
// count comes back, one instance per node deleted.
func reservedCapacity(t *testing.T) {
	id, err := lab.World.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: reservedType, Zone: reservedZone, Total: reservedCount,
		MatchCriteria: fakeaws.MatchTargeted, Tags: map[string]string{reservedTag: "odcr"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lab.World.CancelCapacityReservation(id) })
	c, p := fleetCopy(t, reservedPool, reservedPool, reservedPool, "5s", "xlarge", "2xlarge")
	c.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{reservedTag: "odcr"}}}
	for i, r := range p.Spec.Template.Spec.Requirements {
		// One option per reserved claim cannot meet minValues: a pool that
		// wants its reservations asks for none.
		p.Spec.Template.Spec.Requirements[i].MinValues = nil
		if r.Key == nsv1.LabelCapacityType {
			p.Spec.Template.Spec.Requirements[i].Values = []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeReserved}
		}
	}
	createAreaPool(t, 2*time.Minute, c, p)
	waitFor(t, 2*time.Minute, "the EC2NodeClass listing the reservation", func() error {
		return reservationInStatus(id, reservedCount)
	})

	d := deployment(reservedPool, reservedPool, reservedCount+1, reservedPodCPU, "1Gi")
	if err := kube().Create(ctx(), d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "six pods running", func() error {
		return podsRunning(reservedPool, reservedCount+1)
	})
	claims := claimsOf(t, reservedPool)
	var reserved, other []nsv1.NodeClaim
	for _, cl := range claims {
		if cl.Labels[nsv1.LabelCapacityType] == nsv1.CapacityTypeReserved {
			reserved = append(reserved, cl)
			if cl.Labels[awsv1.LabelCapacityReservationID] != id || cl.Status.InstanceType != reservedType || cl.Status.Zone != reservedZone {
				t.Errorf("reserved nodeclaim %s: reservation %q, %s in %s; want %s, %s in %s", cl.Name, cl.Labels[awsv1.LabelCapacityReservationID],
					cl.Status.InstanceType, cl.Status.Zone, id, reservedType, reservedZone)
			}
		} else {
			other = append(other, cl)
		}
	}
	if len(reserved) != reservedCount || len(other) != 1 {
		t.Fatalf("%d reserved and %d other nodeclaims (%v); want %d and 1", len(reserved), len(other), instanceTypes(claims), reservedCount)
	}
	if ct := other[0].Labels[nsv1.LabelCapacityType]; ct != nsv1.CapacityTypeSpot && ct != nsv1.CapacityTypeOnDemand {
		t.Errorf("the sixth nodeclaim %s is %q, want spot or on-demand", other[0].Name, ct)
	}
	if n := reservationUse(id); n != reservedCount {
		t.Errorf("%d live instances in %s, want %d", n, id, reservedCount)
	}
	if got := worldAvailable(t, id); got != 0 {
		t.Errorf("the reservation has %d free after the burst, want 0", got)
	}
	waitFor(t, 2*time.Minute, "the EC2NodeClass showing the reservation used up", func() error {
		return reservationInStatus(id, 0)
	})

	// The pods go; every empty node is deleted, and each reserved one gives
	// its instance back to the reservation.
	if err := kube().Delete(ctx(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: reservedPool}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 4*time.Minute, "the reservation's count back to 5", func() error {
		free := worldAvailable(t, id)
		if live := reservationUse(id); free != reservedCount-live {
			return fmt.Errorf("%d free with %d instances live in it", free, live)
		}
		if free != reservedCount {
			return fmt.Errorf("%d of %d free", free, reservedCount)
		}
		return nil
	})
	waitFor(t, 2*time.Minute, "the EC2NodeClass showing the reservation free again", func() error {
		return reservationInStatus(id, reservedCount)
	})
	waitFor(t, 2*time.Minute, "the reserved pool drained", drained(t, reservedPool))
}

// reservationInStatus checks the area's EC2NodeClass lists reservation id with avail free.
func reservationInStatus(id string, avail int64) error {
	nc := &awsv1.EC2NodeClass{}
	if err := kube().Get(ctx(), types.NamespacedName{Name: reservedPool}, nc); err != nil {
		return err
	}
	for _, r := range nc.Status.CapacityReservations {
		if r.ID == id {
			if r.AvailableInstanceCount != avail || r.InstanceType != reservedType || r.AvailabilityZone != reservedZone || r.InstanceMatchCriteria != "targeted" {
				return fmt.Errorf("status %+v", r)
			}
			return nil
		}
	}
	return fmt.Errorf("status.capacityReservations %+v lacks %s", nc.Status.CapacityReservations, id)
}

// reservationUse counts the live instances in reservation id.
func reservationUse(id string) int {
	n := 0
	for _, in := range liveInstances() {
		if in.CapacityReservationID == id {
			n++
		}
	}
	return n
}

func worldAvailable(t *testing.T, id string) int {
	t.Helper()
	for _, cr := range lab.World.CapacityReservations() {
		if cr.ID == id {
			return cr.Available
		}
	}
	t.Fatalf("no reservation %s in the simulated AWS", id)
	return 0
}

// podsRunning checks n pods of the app are Running.
func podsRunning(app string, n int) error {
	var pods corev1.PodList
	if err := kube().List(ctx(), &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running != n {
		return fmt.Errorf("%d of %d pods running", running, n)
	}
	return nil
}
