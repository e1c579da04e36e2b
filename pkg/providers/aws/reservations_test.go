package aws

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// reservedEnv is an env whose default node class selects the reservations
// tagged team=ml, with one such ODCR of n m5.large in the first zone that
// sells m5.large on demand; it returns the reservation's id and zone.
func reservedEnv(t *testing.T, n int, opts ...fakeaws.CapacityReservation) (*env, string, string) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}
	e.addNodeClass(nc)
	for _, z := range e.world.Options().Zones {
		id, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: z, Total: n, MatchCriteria: fakeaws.MatchTargeted, Tags: map[string]string{"team": "ml"}})
		if err == nil {
			return e, id, z
		}
	}
	t.Fatal("no zone sells m5.large")
	return nil, "", ""
}

func reservedOffering(t *testing.T, e *env, id string) (catalog.Offering, bool) {
	t.Helper()
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.Reservation != nil && o.Reservation.ID == id {
				if it.Name != "m5.large" || o.CapacityType != nsv1.CapacityTypeReserved || o.Price != 0 {
					t.Errorf("reserved offering %+v of %s", o, it.Name)
				}
				return o, true
			}
		}
	}
	return catalog.Offering{}, false
}

func reservedClaim(name, id string) *nsv1.NodeClaim {
	return newClaim(name, reqIn(corev1.LabelInstanceTypeStable, "m5.large"), reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeReserved),
		reqIn(awsv1.LabelCapacityReservationID, id))
}

func TestReservedLaunchTargetsTheReservation(t *testing.T) {
	e, id, zone := reservedEnv(t, 2)
	nc, _ := e.getNodeClass(e.ctx, "default")
	res, err := e.p.Resolve(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CapacityReservations) != 1 || res.CapacityReservations[0].ID != id || res.CapacityReservations[0].AvailableInstanceCount != 2 ||
		res.CapacityReservations[0].AvailabilityZone != zone || res.CapacityReservations[0].InstanceMatchCriteria != "targeted" ||
		res.CapacityReservations[0].ReservationType != awsv1.CapacityReservationTypeDefault {
		t.Fatalf("resolved reservations %+v", res.CapacityReservations)
	}
	o, ok := reservedOffering(t, e, id)
	if !ok || o.Reservation.Available != 2 || o.Zone != zone {
		t.Fatalf("reserved offering %+v (found %v), want 2 available in %s", o, ok, zone)
	}
	c := e.create(reservedClaim("r1", id))
	if c.Status.CapacityType != nsv1.CapacityTypeReserved || c.Labels[nsv1.LabelCapacityType] != nsv1.CapacityTypeReserved ||
		c.Labels[awsv1.LabelCapacityReservationID] != id || c.Labels[awsv1.LabelCapacityReservationType] != awsv1.CapacityReservationTypeDefault ||
		c.Status.Price != nsv1.FormatPrice(0) {
		t.Errorf("reserved claim: capacity type %q, labels %v, price %q", c.Status.CapacityType, c.Labels, c.Status.Price)
	}
	// The instance read back (Get, as garbage collection and restarts do)
	// is reserved too.
	got, err := e.p.Get(e.ctx, c.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.CapacityType != nsv1.CapacityTypeReserved || got.Labels[awsv1.LabelCapacityReservationID] != id || got.Status.Price != nsv1.FormatPrice(0) {
		t.Errorf("Get: capacity type %q, labels %v, price %q", got.Status.CapacityType, got.Labels, got.Status.Price)
	}
	calls := e.fleetCalls()
	last := calls[len(calls)-1]
	if last.TargetCapacitySpecification.DefaultTargetCapacityType != ec2types.DefaultTargetCapacityTypeOnDemand {
		t.Errorf("fleet capacity type %s, want on-demand", last.TargetCapacitySpecification.DefaultTargetCapacityType)
	}
	inst := e.world.Instances()
	if got := inst[len(inst)-1].CapacityReservationID; got != id {
		t.Errorf("instance launched into %q, want %s", got, id)
	}
	// The launch is counted at once, before the class is read again.
	if o, _ := reservedOffering(t, e, id); o.Reservation.Available != 1 {
		t.Errorf("after one launch: %d available, want 1", o.Reservation.Available)
	}
	e.create(reservedClaim("r2", id))
	if _, ok := reservedOffering(t, e, id); ok {
		t.Error("a used-up reservation is still offered")
	}
	// The ledger said nothing is left; EC2 agrees: a third reserved claim
	// has no capacity, and is not launched as on-demand.
	_, err = e.p.Create(e.ctx, reservedClaim("r3", id))
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("third launch into a reservation of 2: %v, want insufficient capacity", err)
	}
	// Deleting a node gives the instance back once the class is read again.
	if err := e.p.Delete(e.ctx, c); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(e.world.Options().ShutdownDelay + 1)
	e.world.Tick()
	if _, err := e.p.Resolve(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if o, ok := reservedOffering(t, e, id); !ok || o.Reservation.Available != 1 {
		t.Errorf("after a termination: offering %+v (found %v), want 1 available", o, ok)
	}
}

func TestAReservationGoneSinceItWasReadIsMarked(t *testing.T) {
	e, id, _ := reservedEnv(t, 1)
	if _, ok := reservedOffering(t, e, id); !ok {
		t.Fatal("the reservation is not offered")
	}
	// The reservation is cancelled after the class was read (its read is
	// cached for a minute): EC2 refuses the launch.
	if err := e.world.CancelCapacityReservation(id); err != nil {
		t.Fatal(err)
	}
	_, err := e.p.Create(e.ctx, reservedClaim("r1", id))
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("launch into a cancelled reservation: %v, want insufficient capacity", err)
	}
	if !e.ice.IsUnavailable("m5.large", e.world.CapacityReservations()[0].Zone, nsv1.CapacityTypeReserved) {
		t.Error("the reserved offering is not in the ICE cache")
	}
	if _, ok := reservedOffering(t, e, id); ok {
		t.Error("the reservation is still offered after EC2 refused it")
	}
}

func TestCapacityBlockLaunchUsesTheBlockMarket(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0b10c000000000001"}}
	e.addNodeClass(nc)
	var zone string
	for _, z := range e.world.Options().Zones {
		if _, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{ID: "cr-0b10c000000000001", InstanceType: "m5.large", Zone: z, Total: 1,
			Type: fakeaws.ReservationTypeCapacityBlock, End: epoch.Add(6 * 3600e9)}); err == nil {
			zone = z
			break
		}
	}
	c := e.create(reservedClaim("b1", "cr-0b10c000000000001"))
	if c.Labels[awsv1.LabelCapacityReservationType] != awsv1.CapacityReservationTypeCapacityBlock || c.Status.Zone != zone {
		t.Errorf("block claim labels %v zone %s", c.Labels, c.Status.Zone)
	}
	calls := e.fleetCalls()
	if ct := calls[len(calls)-1].TargetCapacitySpecification.DefaultTargetCapacityType; ct != ec2types.DefaultTargetCapacityTypeCapacityBlock {
		t.Errorf("fleet capacity type %s, want capacity-block", ct)
	}
	lts := e.world.LaunchTemplates()
	found := false
	for _, lt := range lts {
		if lt.Data["CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"] == "cr-0b10c000000000001" &&
			lt.Data["InstanceMarketOptions.MarketType"] == "capacity-block" {
			found = true
		}
	}
	if !found {
		t.Errorf("no launch template targets the block with the capacity-block market (%d templates)", len(lts))
	}
	_ = aws.String
}

// An interruptible reservation is resolved as one into the class's status
// (DescribeCapacityReservations' interruptible), and its nodes say so.
func TestInterruptibleReservationInStatusAndLabels(t *testing.T) {
	e, plain, zone := reservedEnv(t, 1)
	id, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: zone, Total: 1,
		MatchCriteria: fakeaws.MatchTargeted, Interruptible: true, Tags: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := e.getNodeClass(e.ctx, "default")
	res, err := e.p.Resolve(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res.CapacityReservations {
		got[r.ID] = r.Interruptible
	}
	if len(got) != 2 || !got[id] || got[plain] {
		t.Fatalf("resolved interruptible: %v, want %s only", got, id)
	}
	c := e.create(reservedClaim("ir", id))
	if c.Labels[awsv1.LabelCapacityReservationID] != id || c.Labels[awsv1.LabelCapacityReservationInterruptible] != "true" {
		t.Errorf("claim in the interruptible reservation: labels %v", c.Labels)
	}
	c = e.create(reservedClaim("pr", plain))
	if c.Labels[awsv1.LabelCapacityReservationInterruptible] != "false" {
		t.Errorf("claim in the plain reservation: labels %v", c.Labels)
	}
}

// When an ODCR ends, EC2 takes its instances out of it and bills them as
// on-demand: the instance read back (Get, List) is on-demand at the
// on-demand price, without the reservation's labels.
func TestAnEndedReservationsInstanceReadsAsOnDemand(t *testing.T) {
	e, id, _ := reservedEnv(t, 1)
	c := e.create(reservedClaim("r1", id))
	if err := e.world.CancelCapacityReservation(id); err != nil {
		t.Fatal(err)
	}
	got, err := e.p.Get(e.ctx, c.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	price, _ := got.Status.PriceUSD()
	if got.Status.CapacityType != nsv1.CapacityTypeOnDemand || got.Labels[nsv1.LabelCapacityType] != nsv1.CapacityTypeOnDemand ||
		got.Labels[awsv1.LabelCapacityReservationID] != "" || got.Labels[awsv1.LabelCapacityReservationType] != "" || price <= 0 {
		t.Errorf("Get after the reservation ended: capacity type %q, labels %v, price %q", got.Status.CapacityType, got.Labels, got.Status.Price)
	}
}
