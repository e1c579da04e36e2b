package fakeaws_test

import (
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// poolsUsed counts launched instances per pool key "type/zone".
func poolsUsed(t *testing.T, e *env, ids []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range ids {
		in, ok := e.world.Instance(id)
		if !ok {
			t.Fatalf("instance %s unknown to the world", id)
		}
		out[in.Type+"/"+in.Zone]++
	}
	return out
}

// marketWorld sets up five spot pools of m5.large/m5.xlarge in two zones:
// the cheapest holds 30, the others 60 each, at rising prices.
func marketWorld(t *testing.T) (*env, string) {
	e := newEnv(t, func(o *fakeaws.Options) { o.Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"} })
	for _, p := range e.world.Pools() {
		e.world.SetCapacity(p.InstanceType, p.Zone, p.CapacityType, 0)
	}
	pools := []struct {
		typ, zone string
		cap       int
		price     float64
	}{
		{"m5.large", "us-east-1a", 30, 0.030},
		{"m5.large", "us-east-1b", 60, 0.031},
		{"m5.large", "us-east-1c", 60, 0.032},
		{"m5.xlarge", "us-east-1a", 60, 0.033},
		{"m5.xlarge", "us-east-1b", 60, 0.034},
	}
	for _, p := range pools {
		e.world.SetCapacity(p.typ, p.zone, "spot", p.cap)
		e.world.SetPrice(p.typ, p.zone, "spot", p.price)
	}
	return e, e.launchTemplate(t, "nodes", "x86_64", "")
}

func TestAllocationStrategies(t *testing.T) {
	tests := []struct {
		strategy     string
		minPools     int
		cheapestWant func(n int) bool
		desc         string
	}{
		{"price-capacity-optimized", 3, func(n int) bool { return n < 30 }, "spreads over the deep pools and leaves the shallow cheapest pool undrained"},
		{"lowest-price", 3, func(n int) bool { return n == 30 }, "drains the cheapest pool first"},
		{"capacity-optimized", 3, func(n int) bool { return n < 30 }, "follows spare capacity"},
		{"diversified", 5, func(n int) bool { return n == 20 }, "round robin over every pool"},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			e, lt := marketWorld(t)
			out := e.fleet(t, lt, "spot", tt.strategy, 100, "m5.large", "m5.xlarge")
			ids := launched(out)
			if len(ids) != 100 {
				t.Fatalf("launched %d of 100: %+v", len(ids), out.Errors)
			}
			used := poolsUsed(t, e, ids)
			t.Logf("%s: %v", tt.strategy, used)
			if len(used) < tt.minPools {
				t.Fatalf("%s: used %d pools %v, want ≥ %d", tt.desc, len(used), used, tt.minPools)
			}
			if n := used["m5.large/us-east-1a"]; !tt.cheapestWant(n) {
				t.Fatalf("%s: cheapest pool got %d (%v)", tt.desc, n, used)
			}
		})
	}
}

func TestCreateFleetPartialFulfilmentAndErrors(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		e.world.SetCapacity("m5.large", z, "spot", 0)
	}
	e.world.SetCapacity("m5.large", "us-east-1b", "spot", 2)
	e.world.InjectICE("m5.large", "us-east-1c", "spot", epoch.Add(time.Minute))
	out := e.fleet(t, lt, "spot", "price-capacity-optimized", 5, "m5.large")
	if n := len(launched(out)); n != 2 {
		t.Fatalf("launched %d, want 2 (partial fulfilment)", n)
	}
	codes := map[string][]string{}
	for _, er := range out.Errors {
		zone := ""
		if er.LaunchTemplateAndOverrides != nil && er.LaunchTemplateAndOverrides.Overrides != nil {
			zone = aws.ToString(er.LaunchTemplateAndOverrides.Overrides.AvailabilityZone)
		}
		if er.Lifecycle != ec2types.InstanceLifecycleSpot {
			t.Errorf("error lifecycle %q", er.Lifecycle)
		}
		codes[aws.ToString(er.ErrorCode)] = append(codes[aws.ToString(er.ErrorCode)], zone)
	}
	for _, zs := range codes {
		sort.Strings(zs)
	}
	want := map[string][]string{
		"InsufficientInstanceCapacity": {"us-east-1a", "us-east-1b", "us-east-1c"},
		"UnfulfillableCapacity":        {""},
	}
	for code, zones := range want {
		if !equal(codes[code], zones) {
			t.Errorf("%s for zones %v, want %v (all errors %v)", code, codes[code], zones, codes)
		}
	}
	// The ICE window ends; that pool sells again.
	e.clock.Step(time.Minute)
	e.world.SetCapacity("m5.large", "us-east-1c", "spot", 5)
	if n := len(launched(e.fleet(t, lt, "spot", "price-capacity-optimized", 1, "m5.large"))); n != 1 {
		t.Fatalf("after the ICE window: launched %d", n)
	}
}

func TestCreateFleetOverrideErrors(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	subnets := e.subnets(t)
	type ov = ec2types.FleetLaunchTemplateOverridesRequest
	tests := []struct {
		name     string
		override ov
		ltName   string
		quota    int
		want     string
	}{
		{name: "arm type with x86 image", override: ov{InstanceType: "m6g.large", SubnetId: aws.String(subnets["us-east-1a"])}, want: "InvalidParameterValue"},
		{name: "unknown subnet", override: ov{InstanceType: "m5.large", SubnetId: aws.String("subnet-00000000")}, want: "InvalidSubnetID.NotFound"},
		{name: "malformed subnet", override: ov{InstanceType: "m5.large", SubnetId: aws.String("subnet-0000")}, want: "InvalidSubnetID.Malformed"},
		{name: "malformed image", override: ov{InstanceType: "m5.large", ImageId: aws.String("ami-xyz")}, want: "InvalidAMIID.Malformed"},
		{name: "max price too low", override: ov{InstanceType: "m5.large", SubnetId: aws.String(subnets["us-east-1a"]), MaxPrice: aws.String("0.001")}, want: "SpotMaxPriceTooLow"},
		{name: "missing template", override: ov{InstanceType: "m5.large", SubnetId: aws.String(subnets["us-east-1a"])}, ltName: "nope", want: "InvalidLaunchTemplateName.NotFoundException"},
		{name: "spot quota", override: ov{InstanceType: "m5.large", SubnetId: aws.String(subnets["us-east-1a"])}, quota: 1, want: "MaxSpotInstanceCountExceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e
			if tt.quota > 0 {
				e = newEnv(t, func(o *fakeaws.Options) { o.SpotVCPUQuota = tt.quota })
				lt = e.launchTemplate(t, "nodes", "x86_64", "")
				tt.override.SubnetId = aws.String(e.subnets(t)["us-east-1a"])
			}
			spec := &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")}
			if tt.ltName != "" {
				spec = &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(tt.ltName), Version: aws.String("$Latest")}
			}
			out, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
				Type:                        ec2types.FleetTypeInstant,
				LaunchTemplateConfigs:       []ec2types.FleetLaunchTemplateConfigRequest{{LaunchTemplateSpecification: spec, Overrides: []ov{tt.override}}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Instances) != 0 {
				t.Fatalf("launched %+v", out.Instances)
			}
			var codes []string
			for _, er := range out.Errors {
				codes = append(codes, aws.ToString(er.ErrorCode))
			}
			if len(codes) == 0 || codes[0] != tt.want {
				t.Fatalf("errors %v, want first %s", codes, tt.want)
			}
		})
	}
}

func TestCreateFleetIdempotentByClientToken(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	in := &ec2.CreateFleetInput{
		Type:        ec2types.FleetTypeInstant,
		ClientToken: aws.String("claim-default-abcde"),
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("us-east-1b")}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications:           []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("nodesmith.sh/nodeclaim"), Value: aws.String("default-abcde")}}}},
	}
	first, err := e.ec2.CreateFleet(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.ec2.CreateFleet(e.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(first.FleetId) != aws.ToString(second.FleetId) || launched(first)[0] != launched(second)[0] {
		t.Fatalf("retry launched again: %v vs %v", launched(first), launched(second))
	}
	if n := len(e.world.Instances()); n != 1 {
		t.Fatalf("%d instances, want 1", n)
	}
	inst, _ := e.world.Instance(launched(first)[0])
	if inst.Zone != "us-east-1b" || inst.Tags["nodesmith.sh/nodeclaim"] != "default-abcde" || inst.Tags["nodesmith.sh/cluster"] != cluster {
		t.Fatalf("instance zone %s tags %v", inst.Zone, inst.Tags)
	}
	fi := first.Instances[0]
	if fi.LaunchTemplateAndOverrides == nil || aws.ToString(fi.LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != "us-east-1b" || fi.InstanceType != "m5.large" || fi.Lifecycle != ec2types.InstanceLifecycleOnDemand {
		t.Fatalf("fleet instance %+v", fi)
	}
}

func TestCreateFleetRejectsNonInstant(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	_, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("1")},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
	})
	if apiCode(err) != "InvalidParameterValue" {
		t.Fatalf("maintain fleet: %v", err)
	}
}

func TestBootDelayAndUserData(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.BootDelay = 45 * time.Second })
	var events []fakeaws.EventKind
	e.world.Subscribe(func(ev fakeaws.Event) { events = append(events, ev.Kind) })
	lt := e.launchTemplate(t, "nodes", "x86_64", "[settings.kubernetes]\ncluster-name = \"lab\"")
	ids := launched(e.fleet(t, lt, "on-demand", "", 1, "m5.large"))
	state := func() string { in, _ := e.world.Instance(ids[0]); return in.State }
	e.clock.Step(44 * time.Second)
	e.world.Tick()
	if state() != "pending" {
		t.Fatalf("at 44s state %s", state())
	}
	e.clock.Step(time.Second)
	e.world.Tick()
	if state() != "running" {
		t.Fatalf("at 45s state %s", state())
	}
	in, _ := e.world.Instance(ids[0])
	if in.UserData != "[settings.kubernetes]\ncluster-name = \"lab\"" {
		t.Fatalf("user data %q", in.UserData)
	}
	if !equal([]string{string(events[0]), string(events[1])}, []string{"Launched", "Running"}) {
		t.Fatalf("events %v", events)
	}
}

// TestBootJitter: with BootJitter each instance of one request boots at
// its own time in [BootDelay, BootDelay+BootJitter), and becomes running
// then, not before.
func TestBootJitter(t *testing.T) {
	e := newEnv(t, func(o *fakeaws.Options) { o.BootDelay, o.BootJitter = 30*time.Second, 60*time.Second })
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	ids := launched(e.fleet(t, lt, "on-demand", "", 20, "m5.large"))
	if len(ids) != 20 {
		t.Fatalf("launched %d of 20", len(ids))
	}
	start := e.clock.Now()
	boots := map[time.Duration]bool{}
	for _, id := range ids {
		in, _ := e.world.Instance(id)
		d := in.BootAt.Sub(start)
		if d < 30*time.Second || d >= 90*time.Second {
			t.Fatalf("%s boots %s after launch, want within [30s, 90s)", id, d)
		}
		boots[d.Truncate(time.Second)] = true
	}
	if len(boots) < 10 {
		t.Fatalf("20 instances boot at only %d distinct seconds: no jitter", len(boots))
	}
	for elapsed := time.Duration(0); elapsed <= 90*time.Second; elapsed += time.Second {
		for _, id := range ids {
			in, _ := e.world.Instance(id)
			if want := !e.clock.Now().Before(in.BootAt); (in.State == "running") != want {
				t.Fatalf("at +%s %s is %s, boots at +%s", elapsed, id, in.State, in.BootAt.Sub(start))
			}
		}
		e.clock.Step(time.Second)
		e.world.Tick()
	}
}

// Two overrides naming the same pool (one type, two subnets of one zone)
// must not sell the pool's last instance twice.
func TestCreateFleetSharedPoolIsNotOversold(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	second := e.world.AddSubnet(fakeaws.Subnet{Zone: "us-east-1a", CIDR: "10.0.200.0/24", FreeIPs: 100})
	e.world.SetCapacity("m5.large", "us-east-1a", "on-demand", 1)
	out, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m5.large", SubnetId: aws.String(e.subnets(t)["us-east-1a"])},
				{InstanceType: "m5.large", SubnetId: aws.String(second)},
			},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(2), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(launched(out)); n != 1 {
		t.Fatalf("launched %d from a pool of 1", n)
	}
	for _, p := range e.world.Pools() {
		if p.Spare < 0 {
			t.Fatalf("pool %v oversold: spare %d", p.PoolKey, p.Spare)
		}
	}
}

func TestCreateFleetSubnetOutOfAddresses(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	sn := e.subnets(t)["us-east-1a"]
	e.world.SetSubnetFreeIPs(sn, 2)
	out, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m5.large", SubnetId: aws.String(sn)},
				{InstanceType: "c5.large", SubnetId: aws.String(sn)},
			},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(3), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(launched(out)); n != 2 {
		t.Fatalf("launched %d into a subnet with 2 free addresses", n)
	}
	if len(out.Errors) == 0 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientFreeAddressesInSubnet" {
		t.Fatalf("errors %+v", out.Errors)
	}
	for _, s := range e.world.Subnets() {
		if s.ID == sn && s.FreeIPs != 0 {
			t.Fatalf("subnet has %d free addresses left, want 0", s.FreeIPs)
		}
	}
}

// EC2 answers a reused client token with different parameters with
// IdempotentParameterMismatch and launches nothing; the same parameters get
// the first answer back, even after the first answer's instances changed.
func TestCreateFleetReusedTokenWithOtherParameters(t *testing.T) {
	e := newEnv(t)
	lt := e.launchTemplate(t, "nodes", "x86_64", "")
	base := func() *ec2.CreateFleetInput {
		in := e.fleetInput(t, lt, "on-demand", "", 1, "m5.large")
		in.ClientToken = aws.String("claim-uid-1-attempt-0")
		return in
	}
	first, err := e.ec2.CreateFleet(e.ctx, base())
	if err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		name   string
		mutate func(in *ec2.CreateFleetInput)
	}{
		{"target capacity", func(in *ec2.CreateFleetInput) { in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(2) }},
		{"capacity type", func(in *ec2.CreateFleetInput) {
			in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
		}},
		{"one override fewer", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides = in.LaunchTemplateConfigs[0].Overrides[1:]
		}},
		{"an instance tag", func(in *ec2.CreateFleetInput) {
			in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{tag("k", aws.String("v"))}}}
		}},
		{"a parameter the fake does not simulate", func(in *ec2.CreateFleetInput) { in.Context = aws.String("other") }},
	}
	for _, c := range changes {
		in := base()
		c.mutate(in)
		if _, err := e.ec2.CreateFleet(e.ctx, in); apiCode(err) != "IdempotentParameterMismatch" {
			t.Errorf("%s changed under the same token: %v, want IdempotentParameterMismatch", c.name, err)
		}
	}
	if _, err := e.ec2.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: launched(first)}); err != nil {
		t.Fatal(err)
	}
	again, err := e.ec2.CreateFleet(e.ctx, base())
	if err != nil || launched(again)[0] != launched(first)[0] {
		t.Fatalf("same token and parameters: %v %v, want the first answer %v", err, launched(again), launched(first))
	}
	if n := len(e.world.Instances()); n != 1 {
		t.Fatalf("%d instances launched under one token, want 1", n)
	}
}
