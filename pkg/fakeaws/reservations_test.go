package fakeaws_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

// reservedTemplate creates a launch template that targets reservation id
// (or, with id "", only sets the preference).
func (e *env) reservedTemplate(t testing.TB, name, id, preference string, block bool) string {
	t.Helper()
	img := e.image(t, "amazon-eks-node-al2023-x86_64-standard-1.37-*")
	spec := &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{}
	if id != "" {
		spec.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)}
	}
	if preference != "" {
		spec.CapacityReservationPreference = ec2types.CapacityReservationPreference(preference)
	}
	data := &ec2types.RequestLaunchTemplateData{ImageId: aws.String(img), CapacityReservationSpecification: spec}
	if block {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
	out, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return *out.LaunchTemplate.LaunchTemplateId
}

func (e *env) launchIn(t testing.TB, lt, capacityType, itype, zone string, n int) *ec2.CreateFleetOutput {
	t.Helper()
	out, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(itype), SubnetId: aws.String(e.subnets(t)[zone])}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(int32(n)), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	return out
}

func (e *env) available(t testing.TB, id string) int {
	t.Helper()
	out, err := e.ec2.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil || len(out.CapacityReservations) != 1 {
		t.Fatalf("DescribeCapacityReservations %s: %v", id, err)
	}
	return int(aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount))
}

func TestCapacityReservationTargetedLaunchCountsDownAndBack(t *testing.T) {
	e := newEnv(t)
	id, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 5, MatchCriteria: fakeaws.MatchTargeted, Tags: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	// The on-demand pool is empty: the reservation's capacity is its own.
	e.world.SetCapacity("m5.xlarge", "us-east-1a", "on-demand", 0)
	lt := e.reservedTemplate(t, "reserved", id, "", false)
	out := e.launchIn(t, lt, "on-demand", "m5.xlarge", "us-east-1a", 3)
	ids := launched(out)
	if len(ids) != 3 {
		t.Fatalf("launched %d into a reservation of 5: %+v", len(ids), out.Errors)
	}
	if got := e.available(t, id); got != 2 {
		t.Fatalf("available %d after 3 launches, want 2", got)
	}
	di, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("capacity-reservation-id", id)}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range di.Reservations {
		for _, in := range r.Instances {
			n++
			if aws.ToString(in.CapacityReservationId) != id || in.InstanceLifecycle != "" {
				t.Errorf("instance %s: capacityReservationId %q lifecycle %q", aws.ToString(in.InstanceId), aws.ToString(in.CapacityReservationId), in.InstanceLifecycle)
			}
		}
	}
	if n != 3 {
		t.Fatalf("capacity-reservation-id filter found %d instances, want 3", n)
	}
	// Three more: two fit, the third is ReservationCapacityExceeded.
	out = e.launchIn(t, lt, "on-demand", "m5.xlarge", "us-east-1a", 3)
	if len(launched(out)) != 2 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("launched %d, errors %+v; want 2 and ReservationCapacityExceeded", len(launched(out)), out.Errors)
	}
	if got := e.available(t, id); got != 0 {
		t.Fatalf("available %d, want 0", got)
	}
	out = e.launchIn(t, lt, "on-demand", "m5.xlarge", "us-east-1a", 1)
	if len(launched(out)) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("a full reservation: launched %d, errors %+v", len(launched(out)), out.Errors)
	}
	// Terminating gives the instance back once it has terminated.
	if _, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(5 * time.Minute)
	if got := e.available(t, id); got != 1 {
		t.Fatalf("available %d after a termination, want 1", got)
	}
	// A wrong type is refused, naming the reservation.
	out = e.launchIn(t, lt, "on-demand", "m5.large", "us-east-1a", 1)
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterCombination" {
		t.Fatalf("wrong type: errors %+v", out.Errors)
	}
}

func TestCapacityReservationOpenMatching(t *testing.T) {
	e := newEnv(t)
	open, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1b", Total: 2})
	targeted, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1b", Total: 2, MatchCriteria: fakeaws.MatchTargeted})
	plain := e.reservedTemplate(t, "plain", "", "", false)
	optOut := e.reservedTemplate(t, "none", "", "none", false)
	e.launchIn(t, plain, "on-demand", "m5.large", "us-east-1b", 3)
	if got := e.available(t, open); got != 0 {
		t.Errorf("open reservation: %d available after 3 plain launches, want 0", got)
	}
	if got := e.available(t, targeted); got != 2 {
		t.Errorf("targeted reservation: %d available, want 2 (only a target uses it)", got)
	}
	// Spot and opted-out launches never use a reservation.
	e.world.CancelCapacityReservation(open)
	open2, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1b", Total: 2})
	e.launchIn(t, optOut, "on-demand", "m5.large", "us-east-1b", 1)
	e.launchIn(t, plain, "spot", "m5.large", "us-east-1b", 1)
	if got := e.available(t, open2); got != 2 {
		t.Errorf("open reservation: %d available after an opted-out and a spot launch, want 2", got)
	}
}

func TestDescribeCapacityReservationsFilters(t *testing.T) {
	e := newEnv(t)
	end := epoch.Add(48 * time.Hour)
	a, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Tags: map[string]string{"team": "ml"}})
	b, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.2xlarge", Zone: "us-east-1b", Total: 2, Type: fakeaws.ReservationTypeCapacityBlock, End: end})
	c, _ := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1c", Total: 1, OwnerID: "210987654321"})
	_ = e.world.CancelCapacityReservation(c)
	tests := []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"all", nil, []string{a, b, c}},
		{"by tag", []ec2types.Filter{filter("tag:team", "ml")}, []string{a}},
		{"by type", []ec2types.Filter{filter("instance-type", "m5.large")}, []string{a, c}},
		{"active", []ec2types.Filter{filter("state", "active")}, []string{a, b}},
		{"owner", []ec2types.Filter{filter("owner-id", "210987654321")}, []string{c}},
		{"limited end", []ec2types.Filter{filter("end-date-type", "limited")}, []string{b}},
		{"targeted", []ec2types.Filter{filter("instance-match-criteria", "targeted")}, []string{b}},
		{"zone", []ec2types.Filter{filter("availability-zone", "us-east-1b")}, []string{b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.ec2.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{Filters: tt.filters})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cr := range out.CapacityReservations {
				got = append(got, aws.ToString(cr.CapacityReservationId))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
	out, err := e.ec2.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{b}})
	if err != nil {
		t.Fatal(err)
	}
	cr := out.CapacityReservations[0]
	if cr.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || !aws.ToTime(cr.EndDate).Equal(end) || cr.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted || aws.ToInt32(cr.TotalInstanceCount) != 2 || aws.ToInt32(cr.AvailableInstanceCount) != 2 {
		t.Errorf("capacity block answered as %+v", cr)
	}
	for _, bad := range []struct {
		in   *ec2.DescribeCapacityReservationsInput
		code string
	}{
		{&ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-zz"}}, "InvalidCapacityReservationId.Malformed"},
		{&ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0123456789abcdef0"}}, "InvalidCapacityReservationId.NotFound"},
		{&ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{filter("color", "red")}}, "InvalidParameterValue"},
	} {
		_, err := e.ec2.DescribeCapacityReservations(e.ctx, bad.in)
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != bad.code {
			t.Errorf("%+v: error %v, want %s", bad.in, err, bad.code)
		}
	}
}

func TestCapacityBlockLaunchAndReclaim(t *testing.T) {
	e := newEnv(t)
	end := epoch.Add(2 * time.Hour)
	id, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 2, Type: fakeaws.ReservationTypeCapacityBlock, End: end})
	if err != nil {
		t.Fatal(err)
	}
	plain := e.reservedTemplate(t, "plain", "", "", false)
	out := e.launchIn(t, plain, "capacity-block", "m5.xlarge", "us-east-1a", 1)
	if len(launched(out)) != 0 || len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterCombination" {
		t.Fatalf("capacity-block without a target: launched %d, errors %+v", len(launched(out)), out.Errors)
	}
	lt := e.reservedTemplate(t, "block", id, "", true)
	ids := launched(e.launchIn(t, lt, "capacity-block", "m5.xlarge", "us-east-1a", 2))
	if len(ids) != 2 {
		t.Fatalf("launched %d into a block of 2", len(ids))
	}
	di, _ := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: ids[:1]})
	if lc := di.Reservations[0].Instances[0].InstanceLifecycle; lc != ec2types.InstanceLifecycleTypeCapacityBlock {
		t.Errorf("instance lifecycle %q, want capacity-block", lc)
	}
	// 31 minutes before the end the instances are still running; at 30 EC2 reclaims them.
	e.clock.SetTime(end.Add(-31 * time.Minute))
	if in, _ := e.world.Instance(ids[0]); in.State != fakeaws.StateRunning {
		t.Fatalf("state %s 31m before the end, want running", in.State)
	}
	e.clock.SetTime(end.Add(-30 * time.Minute))
	e.world.Tick()
	for _, iid := range ids {
		if in, _ := e.world.Instance(iid); in.State != fakeaws.StateShuttingDown && in.State != fakeaws.StateTerminated {
			t.Errorf("instance %s is %s 30m before the block's end, want reclaimed", iid, in.State)
		}
	}
	e.clock.SetTime(end)
	out2, _ := e.ec2.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if s := out2.CapacityReservations[0].State; s != ec2types.CapacityReservationStateExpired {
		t.Errorf("state %s at the end, want expired", s)
	}
}

// An interruptible reservation's owner takes capacity back: DescribeCapacity-
// Reservations says the reservation is interruptible, the instances reclaimed
// get EC2's warning on the interruption queue — which the product's parser
// reads as a capacity reservation interruption with the warning's
// termination time — and are terminated at it; the others run on.
func TestInterruptibleReservationReclaim(t *testing.T) {
	e := newEnv(t)
	id, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 3, MatchCriteria: fakeaws.MatchTargeted, Interruptible: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 1, MatchCriteria: fakeaws.MatchTargeted})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.ec2.DescribeCapacityReservations(e.ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id, plain}})
	if err != nil || len(out.CapacityReservations) != 2 {
		t.Fatalf("DescribeCapacityReservations: %v", err)
	}
	for _, cr := range out.CapacityReservations {
		if want := aws.ToString(cr.CapacityReservationId) == id; cr.Interruptible == nil || *cr.Interruptible != want {
			t.Errorf("%s: interruptible %v, want %v", aws.ToString(cr.CapacityReservationId), cr.Interruptible, want)
		}
	}
	if _, err := e.world.ReclaimInterruptible(plain, 1); err == nil {
		t.Error("reclaiming from a reservation that is not interruptible succeeded")
	}
	lt := e.reservedTemplate(t, "interruptible", id, "", false)
	ids := launched(e.launchIn(t, lt, "on-demand", "m5.xlarge", "us-east-1a", 3))
	if len(ids) != 3 {
		t.Fatalf("launched %d into a reservation of 3", len(ids))
	}
	e.world.Tick()
	drainParsed(t, e) // the launches' state changes
	e.clock.Step(time.Minute)
	warnedAt := e.clock.Now()
	reclaimed, err := e.world.ReclaimInterruptible(id, 2)
	if err != nil || len(reclaimed) != 2 {
		t.Fatalf("ReclaimInterruptible = %v, %v", reclaimed, err)
	}
	got := drainParsed(t, e)
	if len(got) != 2 {
		t.Fatalf("%d messages on the queue, want a warning per reclaimed instance: %+v", len(got), got)
	}
	for i, m := range got {
		if m.Kind != messages.KindCapacityReservationInterruption || !slices.Equal(m.InstanceIDs, reclaimed[i:i+1]) ||
			!m.Deadline.Equal(warnedAt.Add(fakeaws.InterruptionNotice)) || m.Action != messages.ActionTerminate {
			t.Errorf("message %d: %+v", i, m)
		}
	}
	e.clock.Step(fakeaws.InterruptionNotice - time.Second)
	e.world.Tick()
	for _, iid := range reclaimed {
		if in, _ := e.world.Instance(iid); in.State != fakeaws.StateRunning {
			t.Errorf("%s is %s before its termination time", iid, in.State)
		}
	}
	e.clock.Step(time.Second)
	e.world.Tick()
	for _, iid := range ids {
		in, _ := e.world.Instance(iid)
		gone := in.State == fakeaws.StateShuttingDown || in.State == fakeaws.StateTerminated
		if want := slices.Contains(reclaimed, iid); gone != want {
			t.Errorf("%s is %s at the termination time; reclaimed %v", iid, in.State, want)
		}
	}
	e.clock.Step(5 * time.Minute)
	if got := e.available(t, id); got != 0 {
		t.Errorf("available %d after the reclaim, want 0 (one instance left in a reservation of one)", got)
	}
}

// When an ODCR ends (cancelled, or its end date passed) its instances run
// on as on-demand, and DescribeInstances stops naming the reservation; a
// Capacity Block's are reclaimed instead (TestCapacityBlockLaunchAndReclaim).
func TestEndedReservationLeavesItsInstances(t *testing.T) {
	e := newEnv(t)
	cancelled, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 1, MatchCriteria: fakeaws.MatchTargeted})
	if err != nil {
		t.Fatal(err)
	}
	expiring, err := e.world.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 1, MatchCriteria: fakeaws.MatchTargeted, End: epoch.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	a := launched(e.launchIn(t, e.reservedTemplate(t, "a", cancelled, "", false), "on-demand", "m5.xlarge", "us-east-1a", 1))
	b := launched(e.launchIn(t, e.reservedTemplate(t, "b", expiring, "", false), "on-demand", "m5.xlarge", "us-east-1a", 1))
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("launched %v and %v", a, b)
	}
	reservationOf := func(id string) string {
		t.Helper()
		out, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil || len(out.Reservations) != 1 {
			t.Fatalf("DescribeInstances %s: %v", id, err)
		}
		return aws.ToString(out.Reservations[0].Instances[0].CapacityReservationId)
	}
	if reservationOf(a[0]) != cancelled || reservationOf(b[0]) != expiring {
		t.Fatalf("instances not in their reservations: %q %q", reservationOf(a[0]), reservationOf(b[0]))
	}
	if err := e.world.CancelCapacityReservation(cancelled); err != nil {
		t.Fatal(err)
	}
	if got := reservationOf(a[0]); got != "" {
		t.Errorf("a cancelled reservation's instance still names it: %q", got)
	}
	if reservationOf(b[0]) != expiring {
		t.Error("an active reservation's instance lost it")
	}
	e.clock.SetTime(epoch.Add(time.Hour))
	if got := reservationOf(b[0]); got != "" {
		t.Errorf("an expired reservation's instance still names it: %q", got)
	}
	for _, id := range []string{a[0], b[0]} {
		if in, _ := e.world.Instance(id); in.State != fakeaws.StateRunning {
			t.Errorf("%s is %s once its reservation ended, want running on", id, in.State)
		}
	}
	di, err := e.ec2.DescribeInstances(e.ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{filter("capacity-reservation-id", expiring)}})
	if err != nil || len(di.Reservations) != 0 {
		t.Errorf("the capacity-reservation-id filter still finds the expired reservation's instance: %v %+v", err, di)
	}
}
