package aws

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func TestCreateLaunchesAndFillsStatus(t *testing.T) {
	e := newEnv(t, envOpts{})
	got := e.create(newClaim("c1"))
	insts := e.world.Instances()
	if len(insts) != 1 {
		t.Fatalf("world has %d instances, want 1", len(insts))
	}
	in := insts[0]
	if want := "aws:///" + in.Zone + "/" + in.ID; got.Status.ProviderID != want {
		t.Errorf("providerID = %s, want %s", got.Status.ProviderID, want)
	}
	if got.Status.InstanceType != in.Type || got.Status.Zone != in.Zone || got.Status.CapacityType != in.CapacityType {
		t.Errorf("status %s/%s/%s, instance %s/%s/%s", got.Status.InstanceType, got.Status.Zone, got.Status.CapacityType, in.Type, in.Zone, in.CapacityType)
	}
	if got.Status.CapacityType != nsv1.CapacityTypeSpot {
		t.Errorf("capacity type = %s, want spot (the pool allows both)", got.Status.CapacityType)
	}
	if got.Status.ImageID != in.ImageID || got.Status.ImageID == "" {
		t.Errorf("image = %q, instance booted %q", got.Status.ImageID, in.ImageID)
	}
	if p, ok := got.Status.PriceUSD(); !ok || p == 0 {
		t.Error("price missing")
	}
	if got.Status.Allocatable.Cpu().Cmp(*got.Status.Capacity.Cpu()) >= 0 || got.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("allocatable cpu %v should be below capacity %v", got.Status.Allocatable.Cpu(), got.Status.Capacity.Cpu())
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != in.Type || got.Labels[corev1.LabelTopologyZone] != in.Zone {
		t.Errorf("labels %v lack the instance type and zone", got.Labels)
	}
	for k, v := range map[string]string{awsv1.TagCluster: testCluster, awsv1.TagNodePool: "default", awsv1.TagNodeClaim: "c1", "Name": "c1", "team": "infra"} {
		if in.Tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, in.Tags[k], v)
		}
	}
	// Drift's launch facts, checked against what the simulated EC2 recorded.
	if got.Annotations[awsv1.AnnotationSubnetID] != in.SubnetID || in.SubnetID == "" {
		t.Errorf("subnet annotation %q, instance in %q", got.Annotations[awsv1.AnnotationSubnetID], in.SubnetID)
	}
	if want := awsv1.SecurityGroupIDsValue(in.SecurityGroupIDs); got.Annotations[awsv1.AnnotationSecurityGroupIDs] != want || want == "" {
		t.Errorf("security group annotation %q, instance has %q", got.Annotations[awsv1.AnnotationSecurityGroupIDs], want)
	}
	if nc := e.classes[got.Spec.NodeClassRef.Name]; nc == nil || got.Annotations[awsv1.AnnotationEC2NodeClassHash] != nc.Hash() ||
		got.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		t.Errorf("node class hash annotations %v do not match the class", got.Annotations)
	}
	// Exotic (GPU) types are never launched for a claim that does not ask for them.
	if in.Type == "g4dn.xlarge" {
		t.Error("launched a GPU type for a plain claim")
	}
}

func TestCreateFleetRequestShape(t *testing.T) {
	e := newEnv(t, envOpts{specs: snapshotSpecs(t, nil)})
	tests := []struct {
		name     string
		claim    *nsv1.NodeClaim
		wantCT   string
		wantSpot bool
	}{
		{name: "spot", claim: sized(newClaim("spot-1")), wantCT: "spot", wantSpot: true},
		{name: "on-demand", claim: sized(newClaim("od-1", reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand))), wantCT: "on-demand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.fleetCalls())
			e.create(tt.claim)
			calls := e.fleetCalls()
			if len(calls) != before+1 {
				t.Fatalf("CreateFleet calls = %d, want 1", len(calls)-before)
			}
			in := calls[len(calls)-1]
			if in.Type != ec2types.FleetTypeInstant {
				t.Errorf("type = %s, want instant", in.Type)
			}
			if got := aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity); got != 1 {
				t.Errorf("target = %d, want 1", got)
			}
			if string(in.TargetCapacitySpecification.DefaultTargetCapacityType) != tt.wantCT {
				t.Errorf("default capacity type = %s, want %s", in.TargetCapacitySpecification.DefaultTargetCapacityType, tt.wantCT)
			}
			if tt.wantSpot {
				if in.SpotOptions == nil || in.SpotOptions.AllocationStrategy != ec2types.SpotAllocationStrategyPriceCapacityOptimized || in.OnDemandOptions != nil {
					t.Errorf("spot options = %+v, on-demand options = %+v", in.SpotOptions, in.OnDemandOptions)
				}
			} else if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyLowestPrice || in.SpotOptions != nil {
				t.Errorf("on-demand options = %+v, spot options = %+v", in.OnDemandOptions, in.SpotOptions)
			}
			n := 0
			for _, cfg := range in.LaunchTemplateConfigs {
				if !strings.HasPrefix(aws.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName), "nodesmith/") {
					t.Errorf("launch template %s is not ours", aws.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName))
				}
				last := -1.0
				for _, ov := range cfg.Overrides {
					n++
					if p := aws.ToFloat64(ov.Priority); p < last {
						t.Errorf("override %s has priority %v after one with %v: overrides must come in priority order", ov.InstanceType, p, last)
					} else {
						last = p
					}
					if aws.ToString(ov.SubnetId) == "" {
						t.Errorf("override %s has no subnet", ov.InstanceType)
					}
				}
			}
			// The whole snapshot offers far more than 60 options; the cap must bite.
			if n != 60 {
				t.Errorf("overrides = %d, want exactly 60", n)
			}
			if tok := aws.ToString(in.ClientToken); !strings.HasPrefix(tok, "nodesmith-") || len(tok) > 64 {
				t.Errorf("client token = %q", tok)
			}
			kinds := map[ec2types.ResourceType]bool{}
			for _, ts := range in.TagSpecifications {
				kinds[ts.ResourceType] = true
				tags := map[string]string{}
				for _, tg := range ts.Tags {
					tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
				}
				for k, v := range map[string]string{awsv1.TagCluster: testCluster, awsv1.TagNodePool: "default", awsv1.TagNodeClaim: tt.claim.Name, "Name": tt.claim.Name} {
					if tags[k] != v {
						t.Errorf("%s tag %s = %q, want %q", ts.ResourceType, k, tags[k], v)
					}
				}
			}
			for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
				if !kinds[rt] {
					t.Errorf("no tags for %s", rt)
				}
			}
		})
	}
}

// cheapestSpot returns the cheapest spot offering the provider knows among names.
func (e *env) cheapestSpot(names ...string) fakeaws.PoolKey {
	e.t.Helper()
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		e.t.Fatal(err)
	}
	var best fakeaws.PoolKey
	bestPrice := 0.0
	for _, it := range types {
		if !slices.Contains(names, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == nsv1.CapacityTypeSpot && (best.InstanceType == "" || o.Price < bestPrice) {
				best, bestPrice = fakeaws.PoolKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}, o.Price
			}
		}
	}
	return best
}

func TestCheapestSpotPoolICEGoesToAnotherSpotPool(t *testing.T) {
	e := newEnv(t, envOpts{})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	types := []string{"m5.large", "c5.large", "m6i.large"}
	cheap := e.cheapestSpot(types...)
	e.world.InjectICE(cheap.InstanceType, cheap.Zone, cheap.CapacityType, epoch.Add(time.Hour))
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, types...)))
	if got.Status.CapacityType != nsv1.CapacityTypeSpot {
		t.Fatalf("capacity type = %s, want spot from another pool", got.Status.CapacityType)
	}
	if got.Status.InstanceType == cheap.InstanceType && got.Status.Zone == cheap.Zone {
		t.Fatalf("launched in the ICE'd pool %s/%s", cheap.InstanceType, cheap.Zone)
	}
	if !e.ice.IsUnavailable(cheap.InstanceType, cheap.Zone, nsv1.CapacityTypeSpot) {
		t.Error("the ICE'd pool is not marked unavailable")
	}
	if n := len(e.fleetCalls()); n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1 (the fleet itself moves to the next pool)", n)
	}
}

func TestAllSpotOutFallsBackToOnDemandInOneCreate(t *testing.T) {
	var events []string
	e := newEnv(t, envOpts{provider: func(o *Options) {
		o.OnEvent = func(c *nsv1.NodeClaim, reason, _ string) { events = append(events, c.Name+"/"+reason) }
	}})
	types := []string{"m5.large", "c5.large"}
	for _, p := range e.world.Pools() {
		if p.CapacityType == fakeaws.CapacitySpot {
			e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(time.Hour))
		}
	}
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, types...)))
	if got.Status.CapacityType != nsv1.CapacityTypeOnDemand {
		t.Fatalf("capacity type = %s, want on-demand", got.Status.CapacityType)
	}
	calls := e.fleetCalls()
	if len(calls) != 2 {
		t.Fatalf("CreateFleet calls = %d, want 2 (spot, then on-demand)", len(calls))
	}
	if calls[0].TargetCapacitySpecification.DefaultTargetCapacityType != ec2types.DefaultTargetCapacityTypeSpot ||
		calls[1].TargetCapacitySpecification.DefaultTargetCapacityType != ec2types.DefaultTargetCapacityTypeOnDemand {
		t.Errorf("calls asked for %s then %s", calls[0].TargetCapacitySpecification.DefaultTargetCapacityType, calls[1].TargetCapacitySpecification.DefaultTargetCapacityType)
	}
	if aws.ToString(calls[0].ClientToken) == aws.ToString(calls[1].ClientToken) {
		t.Error("the on-demand retry reused the spot call's client token")
	}
	if want := []string{"c1/" + EventCapacityFallback, "c1/" + EventOnDemandFallback}; !slices.Equal(events, want) {
		t.Errorf("events = %v, want %v", events, want)
	}
}

// A launch runs the images the class's status names, which drift compares
// nodes with, whether the provider's own resolution is older (its cache)
// or newer (an image published since the class's last resync).
func TestLaunchRunsTheImagesTheClassStatusNames(t *testing.T) {
	e := newEnv(t, envOpts{})
	publish := func(v int) map[string]string {
		ids := map[string]string{}
		for _, arch := range []string{"x86_64", "arm64"} {
			ids[arch] = e.world.AddImage(fakeaws.Image{Name: fmt.Sprintf("golden-%s-v%d", arch, v), Arch: arch,
				CreationDate: epoch.Add(time.Duration(v) * time.Hour), Tags: map[string]string{"golden": "yes"}})
		}
		return ids
	}
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "yes"}}}
	resync := func() { t.Helper(); e.resyncClass(t, nc) }
	launch := func(name string, want map[string]string, why string) {
		t.Helper()
		got, in := e.launchSized(t, name)
		if img := want[in.Arch]; in.ImageID != img || got.Status.ImageID != img {
			t.Errorf("%s (%s): instance runs %s, claim says %s, want %s", name, why, in.ImageID, got.Status.ImageID, img)
		}
	}
	v1 := publish(1)
	resync()
	launch("c1", v1, "the status names v1")
	v2 := publish(2)
	launch("c2", v1, "v2 is published but the status still names v1")
	resync()
	launch("c3", v2, "the status names v2 while the provider's cached resolution still has v1")
	e.clock.Step(2 * time.Minute) // past the resolve cache
	publish(3)
	launch("c4", v2, "v3 is published, the provider resolves afresh, the status still names v2")
}

// TestLaunchUsesTheSubnetsAndGroupsTheClassStatusNames: a subnet and a
// security group tagged for the cluster between two resyncs are not used
// until the class's status names them, even once the provider's own
// resolution sees them — drift compares with the status, so a launch into
// them would be replaced at once.
func TestLaunchUsesTheSubnetsAndGroupsTheClassStatusNames(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	resync := func() { t.Helper(); e.resyncClass(t, nc) }
	launch := func(name string) fakeaws.Instance {
		t.Helper()
		_, in := e.launchSized(t, name)
		return in
	}
	resync()
	// Far more free addresses than any other subnet, in every zone: a
	// launch that may use it does.
	var fresh []string
	for _, s := range e.world.Subnets() {
		if s.Tags[awsv1.TagDiscovery] != "" {
			fresh = append(fresh, e.world.AddSubnet(fakeaws.Subnet{Zone: s.Zone, CIDR: "10.1.0.0/16", FreeIPs: 65000,
				Tags: map[string]string{awsv1.TagDiscovery: s.Tags[awsv1.TagDiscovery]}}))
		}
	}
	group := e.world.AddSecurityGroup(fakeaws.SecurityGroup{Name: "extra", Description: "added between resyncs",
		Tags: map[string]string{awsv1.TagDiscovery: nc.Spec.SecurityGroupSelectorTerms[0].Tags[awsv1.TagDiscovery]}})
	e.clock.Step(2 * time.Minute) // past the resolve cache: the provider sees them
	in := launch("before")
	if slices.Contains(fresh, in.SubnetID) {
		t.Errorf("launched into subnet %s, which the class's status does not name yet", in.SubnetID)
	}
	if slices.Contains(in.SecurityGroupIDs, group) {
		t.Errorf("launched with security group %s, which the class's status does not name yet", group)
	}
	resync()
	in = launch("after")
	if !slices.Contains(fresh, in.SubnetID) {
		t.Errorf("launched into subnet %s once the status names the roomier %v", in.SubnetID, fresh)
	}
	if !slices.Contains(in.SecurityGroupIDs, group) {
		t.Errorf("launched with security groups %v once the status names %s too", in.SecurityGroupIDs, group)
	}
}

// resyncClass resolves nc as the EC2NodeClass controller's resync does and
// stores it with the status that resolution gives.
func (e *env) resyncClass(t *testing.T, nc *awsv1.EC2NodeClass) {
	t.Helper()
	r, err := e.p.Resolve(e.ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	r.ApplyTo(&nc.Status)
	e.addNodeClass(nc.DeepCopy())
}

// launchSized creates a sized claim named name and returns it with the
// instance the simulated AWS launched for it.
func (e *env) launchSized(t *testing.T, name string) (*nsv1.NodeClaim, fakeaws.Instance) {
	t.Helper()
	got := e.create(sized(newClaim(name)))
	in, ok := e.world.Instance(got.Status.ProviderID[strings.LastIndex(got.Status.ProviderID, "/")+1:])
	if !ok {
		t.Fatalf("%s: no instance for %s", name, got.Status.ProviderID)
	}
	return got, in
}

// A launch works on the types its claim may launch, not on the class's
// whole catalog: each round copies its types (availability, spot risk),
// and a burst of claims each holding the catalog made the heap spike.
func TestLaunchCopiesOnlyTheClaimsTypes(t *testing.T) {
	e := newEnv(t, envOpts{})
	claim := newClaim("narrow", nsv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable,
		Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "c5.large"}})
	l, err := e.p.prepare(e.ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.planLaunch(e.ctx, l, 0); err != nil {
		t.Fatal(err)
	}
	for name, list := range map[string][]*catalog.InstanceType{"base": l.base, "types": l.types} {
		var got []string
		for _, it := range list {
			got = append(got, it.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"c5.large", "m5.large"}) {
			t.Errorf("launch %s holds %d types %v, want the claim's c5.large and m5.large", name, len(got), got[:min(len(got), 5)])
		}
	}
	if out := e.create(claim); !slices.Contains([]string{"c5.large", "m5.large"}, out.Status.InstanceType) {
		t.Errorf("launched %s, not one of the claim's types", out.Status.InstanceType)
	}
}
