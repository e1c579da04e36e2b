package aws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

func offering(types []*catalog.InstanceType, name, zone, ct string) (catalog.Offering, bool) {
	for _, it := range types {
		if it.Name == name {
			return it.Offerings.Get(zone, ct)
		}
	}
	return catalog.Offering{}, false
}

func TestICEOfferingsHiddenForTTL(t *testing.T) {
	e := newEnv(t, envOpts{})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	cheap := e.cheapestSpot("m5.large")
	e.world.InjectICE(cheap.InstanceType, cheap.Zone, cheap.CapacityType, epoch.Add(time.Hour))
	e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	steps := []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{2*time.Minute + 59*time.Second, false},
		{3*time.Minute + time.Second, true},
	}
	for _, s := range steps {
		e.clock.SetTime(epoch.Add(s.after))
		types, err := e.p.GetInstanceTypes(e.ctx, testPool())
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offering(types, cheap.InstanceType, cheap.Zone, nsv1.CapacityTypeSpot)
		if !ok {
			t.Fatalf("offering %v missing from the catalog", cheap)
		}
		if o.Available != s.want {
			t.Errorf("after %v: available = %v, want %v", s.after, o.Available, s.want)
		}
	}
}

func TestThrottlingIsRetriedWithBackoff(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.world.InjectThrottle("CreateFleet", 5)
	e.create(newClaim("c1"))
	if got := e.world.Stats()["CreateFleet"]; got != 6 {
		t.Errorf("CreateFleet calls on the wire = %d, want 6 (5 throttled + 1)", got)
	}
	if n := len(e.world.Instances()); n != 1 {
		t.Errorf("instances = %d, want 1", n)
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.world.InjectServerError("DescribeSubnets", 2)
	e.create(newClaim("c1"))
	if got := e.world.Stats()["DescribeSubnets"]; got != 3 {
		t.Errorf("DescribeSubnets calls = %d, want 3", got)
	}
}

func TestRetryWithSameClaimLaunchesOnce(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("c1"))
	b := e.create(newClaim("c1"))
	if a.Status.ProviderID != b.Status.ProviderID {
		t.Errorf("retry got %s, first call %s", b.Status.ProviderID, a.Status.ProviderID)
	}
	if n := len(e.world.Instances()); n != 1 {
		t.Errorf("instances = %d, want 1", n)
	}
	calls := e.fleetCalls()
	if len(calls) != 2 || aws.ToString(calls[0].ClientToken) != aws.ToString(calls[1].ClientToken) {
		t.Errorf("want two calls with one token, got %d calls", len(calls))
	}
	// Another claim is another token, another instance.
	c := e.create(newClaim("c2"))
	if c.Status.ProviderID == a.Status.ProviderID {
		t.Error("a different claim got the same instance")
	}
}

func TestSubnetSelectorMatchingNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: "other-cluster"}}}
	e.addNodeClass(nc)
	_, err := e.p.Create(e.ctx, newClaim("c1"))
	if !cloudprovider.IsNodeClassNotReady(err) {
		t.Fatalf("err = %v, want NodeClassNotReady", err)
	}
	if !strings.Contains(err.Error(), "check the nodesmith.sh/discovery tag on at least one private subnet per zone") {
		t.Errorf("error lacks the hint: %v", err)
	}
	var re *ResolveError
	if !errors.As(err, &re) || re.Condition != awsv1.ConditionSubnetsReady {
		t.Errorf("err = %v, want a ResolveError for %s", err, awsv1.ConditionSubnetsReady)
	}
	if n := len(e.world.Instances()); n != 0 {
		t.Errorf("instances = %d, want 0", n)
	}
}

func TestOrphansAreExactlyTheUntracked(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("a"))
	e.create(newClaim("b"))
	c := e.create(newClaim("c"))
	known := map[string]bool{a.Status.ProviderID: true, "b": true}
	grace := 5 * time.Minute
	orphans, err := e.p.Orphans(e.ctx, known, grace)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 0 {
		t.Errorf("within the grace period: %d orphans, want 0", len(orphans))
	}
	e.clock.Step(grace + time.Second)
	orphans, err = e.p.Orphans(e.ctx, known, grace)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || orphans[0].ProviderID != c.Status.ProviderID || orphans[0].ClaimName() != "c" {
		t.Errorf("orphans = %+v, want only %s", orphans, c.Status.ProviderID)
	}
}

func TestLaunchTemplateReuse(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large", "c5.large")
	e.create(newClaim("a", reqs))
	e.create(newClaim("b", reqs))
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 1 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 1", got)
	}
	// A new provider (a restart) finds the template by name instead of making another.
	p2, err := New(Config{EC2: e.ec2, SSM: e.ssm, Clock: e.clock, Unavailable: e.ice, Cluster: e.p.cluster, NodeClasses: e.getNodeClass, Options: e.p.opts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Create(e.ctx, newClaim("c", reqs)); err != nil {
		t.Fatal(err)
	}
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 1 {
		t.Errorf("after restart CreateLaunchTemplate calls = %d, want 1", got)
	}
	// Different settings (another pool's labels) get their own template.
	other := newClaim("d", reqs)
	other.Labels[nsv1.LabelNodePool] = "batch"
	e.create(other)
	if got := e.world.Stats()["CreateLaunchTemplate"]; got != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2", got)
	}
}

func TestUserDataCarriesLabelsAndTaints(t *testing.T) {
	tests := []struct {
		name   string
		family *string
		alias  string
	}{
		{name: "al2023", alias: "al2023@latest"},
		{name: "bottlerocket", alias: "bottlerocket@latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			nc := defaultNodeClass()
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tt.alias}}
			e.addNodeClass(nc)
			claim := newClaim("c1")
			claim.Spec.StartupTaints = []corev1.Taint{{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}
			got := e.create(claim)
			in := e.world.Instances()[0]
			labels, taints, err := ParseUserData(in.UserData)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{nsv1.LabelNodePool: "default", "team": "a", nsv1.LabelCapacityType: got.Status.CapacityType} {
				if labels[k] != v {
					t.Errorf("label %s = %q, want %q (all: %v)", k, labels[k], v, labels)
				}
			}
			want := map[string]bool{nsv1.UnregisteredTaint.Key: false, "dedicated": false, "cni-not-ready": false}
			for _, tn := range taints {
				if _, ok := want[tn.Key]; ok {
					want[tn.Key] = true
				}
				if tn.Key == nsv1.UnregisteredTaint.Key && tn.Effect != nsv1.UnregisteredTaint.Effect {
					t.Errorf("unregistered taint effect = %s", tn.Effect)
				}
			}
			for k, seen := range want {
				if !seen {
					t.Errorf("taint %s missing from user data", k)
				}
			}
		})
	}
}

func TestDeleteGetList(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("a"))
	b := e.create(newClaim("b"))
	claims, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, c := range claims {
		names[c.Name] = c.Status.ProviderID
	}
	if len(claims) != 2 || names["a"] != a.Status.ProviderID || names["b"] != b.Status.ProviderID {
		t.Errorf("List = %v, want a and b", names)
	}
	got, err := e.p.Get(e.ctx, a.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.Status.InstanceType != a.Status.InstanceType || got.Labels[nsv1.LabelNodePool] != "default" {
		t.Errorf("Get = %s %s %v", got.Name, got.Status.InstanceType, got.Labels)
	}
	if err := e.p.Delete(e.ctx, a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	e.clock.Step(time.Second)
	if err := e.p.Delete(e.ctx, a); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("second Delete = %v, want NodeClaimNotFound", err)
	}
	if _, err := e.p.Get(e.ctx, a.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Get of a terminated instance = %v, want NodeClaimNotFound", err)
	}
	gone := newClaim("ghost")
	gone.Status.ProviderID = "aws:///us-east-1a/i-0000000000000dead"
	if err := e.p.Delete(e.ctx, gone); !cloudprovider.IsNodeClaimNotFound(err) {
		t.Errorf("Delete of an unknown instance = %v, want NodeClaimNotFound", err)
	}
	claims, err = e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Name != "b" {
		t.Errorf("List after delete = %d claims, want only b", len(claims))
	}
}

func TestBatchedClaimsShareOneFleetCall(t *testing.T) {
	e := newEnv(t, envOpts{clock: clock.RealClock{}, provider: func(o *Options) {
		o.BatchIdle, o.BatchMax = 100*time.Millisecond, 2*time.Second
	}})
	const n = 5
	var wg sync.WaitGroup
	got := make([]*nsv1.NodeClaim, n)
	errs := make([]error, n)
	// Warm the caches so every claim reaches the batcher at once.
	if _, err := e.p.GetInstanceTypes(e.ctx, testPool()); err != nil {
		t.Fatal(err)
	}
	e.create(newClaim("warm"))
	before := len(e.fleetCalls())
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = e.p.Create(e.ctx, newClaim(fmt.Sprintf("b%d", i)))
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		ids[got[i].Status.ProviderID] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct instances for %d claims", len(ids), n)
	}
	calls := e.fleetCalls()[before:]
	if len(calls) != 1 || aws.ToInt32(calls[0].TargetCapacitySpecification.TotalTargetCapacity) != n {
		t.Fatalf("calls = %d, want one call for %d", len(calls), n)
	}
	// Every instance carries its own claim's tag.
	byID := map[string]fakeaws.Instance{}
	for _, in := range e.world.Instances() {
		byID[in.ID] = in
	}
	for _, c := range got {
		id, _ := ParseProviderID(c.Status.ProviderID)
		if tag := byID[id].Tags[awsv1.TagNodeClaim]; tag != c.Name {
			t.Errorf("instance %s tagged %q, want %q", id, tag, c.Name)
		}
	}
}

func TestResolve(t *testing.T) {
	e := newEnv(t, envOpts{})
	subnets := e.world.Subnets()
	groups := e.world.SecurityGroups()
	var nodeSG fakeaws.SecurityGroup
	for _, g := range groups {
		if g.Tags[awsv1.TagDiscovery] == testCluster {
			nodeSG = g
		}
	}
	custom := e.world.AddImage(fakeaws.Image{Name: "my-golden-amd64", Arch: "x86_64", Tags: map[string]string{"golden": "yes"}})
	tests := []struct {
		name      string
		mutate    func(*awsv1.EC2NodeClassSpec)
		check     func(t *testing.T, r *Resolved)
		wantError string
	}{
		{name: "tags, alias, role", check: func(t *testing.T, r *Resolved) {
			if len(r.Subnets) != 3 || len(r.Zones()) != 3 {
				t.Errorf("subnets = %d in %d zones, want the 3 tagged private ones", len(r.Subnets), len(r.Zones()))
			}
			if len(r.AMIs) != 2 || r.AMIs[0].Architecture != "amd64" || r.AMIs[1].Architecture != "arm64" {
				t.Errorf("amis = %+v, want one per architecture", r.AMIs)
			}
			if r.InstanceProfile != ManagedInstanceProfileName(testCluster, "NodeRole") || r.Family != "AL2023" {
				t.Errorf("profile %q family %q", r.InstanceProfile, r.Family)
			}
		}},
		{name: "ids and names", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: subnets[0].ID}}
			s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: nodeSG.Name}}
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "yes"}}}
			s.Role, s.InstanceProfile = nil, aws.String("my-profile")
		}, check: func(t *testing.T, r *Resolved) {
			if len(r.Subnets) != 1 || r.Subnets[0].ID != subnets[0].ID {
				t.Errorf("subnets = %+v", r.Subnets)
			}
			if len(r.SecurityGroups) != 1 || r.SecurityGroups[0].ID != nodeSG.ID {
				t.Errorf("groups = %+v, want %s", r.SecurityGroups, nodeSG.ID)
			}
			if len(r.AMIs) != 1 || r.AMIs[0].ID != custom {
				t.Errorf("amis = %+v, want %s", r.AMIs, custom)
			}
			if r.InstanceProfile != "my-profile" {
				t.Errorf("profile = %q", r.InstanceProfile)
			}
		}},
		{name: "no security group", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "nope"}}
		}, wantError: awsv1.ConditionSecurityGroupsReady},
		{name: "no image", mutate: func(s *awsv1.EC2NodeClassSpec) {
			s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"golden": "no"}}}
		}, wantError: awsv1.ConditionAMIsReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := defaultNodeClass()
			if tt.mutate != nil {
				tt.mutate(&nc.Spec)
			}
			r, err := e.p.Resolve(e.ctx, nc)
			if tt.wantError != "" {
				var re *ResolveError
				if !errors.As(err, &re) || re.Condition != tt.wantError {
					t.Fatalf("err = %v, want a ResolveError for %s", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
			var st awsv1.EC2NodeClassStatus
			r.ApplyTo(&st)
			if len(st.Subnets) != len(r.Subnets) || st.InstanceProfile != r.InstanceProfile {
				t.Errorf("ApplyTo wrote %+v", st)
			}
		})
	}
}

func TestDiscoveredOfferings(t *testing.T) {
	specs := snapshotSpecs(t, testTypes)
	e := newEnv(t, envOpts{specs: specs, provider: func(o *Options) { o.DiscoverInstanceTypes = true }})
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	// The world sells every type in every zone; discovery must see all three zones per type.
	for _, it := range types {
		if zs := it.Offerings.Zones(); len(zs) != 3 {
			t.Errorf("%s offered in %v, want 3 zones", it.Name, zs)
		}
	}
	if got := e.world.Stats()["DescribeInstanceTypeOfferings"]; got == 0 {
		t.Error("DescribeInstanceTypeOfferings was never called")
	}
}

func TestSpotPricesRefresh(t *testing.T) {
	e := newEnv(t, envOpts{})
	key := e.cheapestSpot("m5.large")
	e.world.SetPrice(key.InstanceType, key.Zone, key.CapacityType, 0.0123)
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offering(types, key.InstanceType, key.Zone, nsv1.CapacityTypeSpot)
	if !ok || o.Price != 0.0123 {
		t.Errorf("spot price after refresh = %v (%v), want 0.0123", o.Price, ok)
	}
}

func TestNoOfferingIsInsufficientCapacity(t *testing.T) {
	e := newEnv(t, envOpts{})
	_, err := e.p.Create(e.ctx, newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "x9.huge")))
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("err = %v, want InsufficientCapacity", err)
	}
}

func TestEverythingOutIsInsufficientCapacity(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, p := range e.world.Pools() {
		e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(time.Hour))
	}
	_, err := e.p.Create(e.ctx, newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("err = %v, want InsufficientCapacity", err)
	}
	if !strings.Contains(err.Error(), "InsufficientInstanceCapacity") {
		t.Errorf("error does not say what failed: %v", err)
	}
	// Both capacity types were tried and are now hidden.
	for _, ct := range []string{nsv1.CapacityTypeSpot, nsv1.CapacityTypeOnDemand} {
		hidden := 0
		for _, en := range e.ice.Entries() {
			if en.CapacityType == ct && en.InstanceType == "m5.large" {
				hidden++
			}
		}
		if hidden == 0 {
			t.Errorf("no %s offering of m5.large marked unavailable", ct)
		}
	}
	if n := len(e.world.Instances()); n != 0 {
		t.Errorf("instances = %d, want 0", n)
	}
}

func TestSpotQuotaFallsBackToOnDemand(t *testing.T) {
	e2 := newEnv(t, envOpts{world: func(o *fakeaws.Options) { o.SpotVCPUQuota = 1 }})
	got := e2.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	if got.Status.CapacityType != nsv1.CapacityTypeOnDemand {
		t.Errorf("capacity type = %s, want on-demand after the spot quota error", got.Status.CapacityType)
	}
	if !e2.ice.IsUnavailable("m6i.large", "us-east-1b", nsv1.CapacityTypeSpot) {
		t.Error("spot should be hidden account-wide after MaxSpotInstanceCountExceeded")
	}
}

func TestDeletedLaunchTemplateIsRecreated(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large")
	e.create(newClaim("a", reqs))
	out, err := e.ec2.DescribeLaunchTemplates(e.ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(out.LaunchTemplates) != 1 {
		t.Fatalf("templates: %v, %d", err, len(out.LaunchTemplates))
	}
	if _, err := e.ec2.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: out.LaunchTemplates[0].LaunchTemplateName}); err != nil {
		t.Fatal(err)
	}
	got := e.create(newClaim("b", reqs))
	if got.Status.ProviderID == "" {
		t.Fatal("no instance after the template was recreated")
	}
	if n := e.world.Stats()["CreateLaunchTemplate"]; n != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2", n)
	}
}

func TestDiscoveredTypeUnknownToTheSnapshot(t *testing.T) {
	specs := snapshotSpecs(t, testTypes)
	e := newEnv(t, envOpts{specs: specs, provider: func(o *Options) { o.DiscoverInstanceTypes = true }, world: func(o *fakeaws.Options) {
		o.Specs = append(o.Specs, fakeaws.Spec{Name: "z9g.large", Arch: "arm64", VCPU: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10,
			Hypervisor: "nitro", OnDemandPrice: 0.08, SpotPrice: 0.02})
	}})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	var found *catalog.InstanceType
	for _, it := range types {
		if it.Name == "z9g.large" {
			found = it
		}
	}
	if found == nil {
		t.Fatal("z9g.large was not discovered")
	}
	if found.Arch != "arm64" || found.VCPU != 2 || found.Family != "z9g" || found.Generation != 9 {
		t.Errorf("discovered spec: arch %s vcpu %d family %s gen %d", found.Arch, found.VCPU, found.Family, found.Generation)
	}
	// No on-demand price is known for it: spot offerings only, at the market price.
	for _, o := range found.Offerings {
		if o.CapacityType != nsv1.CapacityTypeSpot || o.Price < 0.018 || o.Price > 0.022 {
			t.Errorf("offering %+v, want spot near 0.02", o)
		}
	}
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "z9g.large")))
	if got.Status.InstanceType != "z9g.large" || got.Status.CapacityType != nsv1.CapacityTypeSpot {
		t.Errorf("launched %s %s", got.Status.InstanceType, got.Status.CapacityType)
	}
}

func TestFullSubnetIsAvoided(t *testing.T) {
	e := newEnv(t, envOpts{})
	if err := e.p.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A type sold in more than one zone, so a full subnet leaves somewhere to go.
	types, err := e.p.GetInstanceTypes(e.ctx, testPool())
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, it := range types {
		if len(it.Offerings.Zones()) > 1 && it.GPUCount == 0 {
			name = it.Name
			break
		}
	}
	if name == "" {
		t.Fatal("no test type is offered in two zones")
	}
	cheap := e.cheapestSpot(name)
	var full string
	for _, s := range e.world.Subnets() {
		if s.Zone == cheap.Zone && s.Tags[awsv1.TagDiscovery] == testCluster {
			full = s.ID
		}
	}
	e.world.SetSubnetFreeIPs(full, 0)
	reqs := reqIn(corev1.LabelInstanceTypeStable, name)
	got := e.create(newClaim("a", reqs))
	if got.Status.Zone == cheap.Zone {
		t.Fatalf("launched in %s, whose only subnet is full", got.Status.Zone)
	}
	// The pool itself is fine: the offering stays available; the subnet is what is hidden.
	if e.ice.IsUnavailable(name, cheap.Zone, nsv1.CapacityTypeSpot) {
		t.Error("a full subnet marked the offering unavailable")
	}
	e.create(newClaim("b", reqs))
	for _, ov := range e.fleetCalls()[1].LaunchTemplateConfigs[0].Overrides {
		if aws.ToString(ov.SubnetId) == full {
			t.Errorf("the second launch still offered the full subnet %s", full)
		}
	}
}

// A claim that found no capacity must be able to launch once capacity
// returns, even though its retry asks for exactly what it asked before:
// EC2 answers a repeated client token with the first (failed) result.
func TestRetryAfterCapacityReturnsLaunches(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large")
	for _, p := range e.world.Pools() {
		e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(5*time.Minute))
	}
	if _, err := e.p.Create(e.ctx, newClaim("c1", reqs)); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("err = %v, want InsufficientCapacity", err)
	}
	e.clock.SetTime(epoch.Add(6 * time.Minute))
	got := e.create(newClaim("c1", reqs))
	if got.Status.CapacityType != nsv1.CapacityTypeSpot {
		t.Errorf("capacity type = %s, want spot once capacity is back", got.Status.CapacityType)
	}
}

// With more spot options than one call carries, the last attempt goes to
// on-demand instead of walking the spot list 60 at a time.
func TestLastAttemptIsOnDemand(t *testing.T) {
	e := newEnv(t, envOpts{specs: snapshotSpecs(t, nil)})
	for _, p := range e.world.Pools() {
		if p.CapacityType == fakeaws.CapacitySpot {
			e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(time.Hour))
		}
	}
	got := e.create(sized(newClaim("c1")))
	if got.Status.CapacityType != nsv1.CapacityTypeOnDemand {
		t.Fatalf("capacity type = %s, want on-demand", got.Status.CapacityType)
	}
	calls := e.fleetCalls()
	if len(calls) != 3 {
		t.Fatalf("CreateFleet calls = %d, want 3 (spot, spot, on-demand)", len(calls))
	}
	for i, want := range []string{"spot", "spot", "on-demand"} {
		if got := string(calls[i].TargetCapacitySpecification.DefaultTargetCapacityType); got != want {
			t.Errorf("call %d asked for %s, want %s", i, got, want)
		}
	}
}

func TestLaunchTemplateContent(t *testing.T) {
	e := newEnv(t, envOpts{})
	nc := defaultNodeClass()
	size := resource.MustParse("100Gi")
	iops := int64(4000)
	nc.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &size, VolumeType: aws.String("gp3"), IOPS: &iops, Encrypted: aws.Bool(true)}}}
	e.addNodeClass(nc)
	got := e.create(newClaim("c1", reqIn(corev1.LabelInstanceTypeStable, "m5.large")))
	lts := e.world.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("templates = %d, want 1", len(lts))
	}
	lt := lts[0]
	want := map[string]string{
		"MetadataOptions.HttpTokens":              "required",
		"MetadataOptions.HttpPutResponseHopLimit": "1",
		"MetadataOptions.HttpEndpoint":            "enabled",
		"IamInstanceProfile.Name":                 ManagedInstanceProfileName(testCluster, "NodeRole"),
		"BlockDeviceMapping.1.DeviceName":         "/dev/xvda",
		"BlockDeviceMapping.1.Ebs.VolumeSize":     "100",
		"BlockDeviceMapping.1.Ebs.Iops":           "4000",
		"BlockDeviceMapping.1.Ebs.Encrypted":      "true",
	}
	for k, v := range want {
		if lt.Data[k] != v {
			t.Errorf("template %s = %q, want %q", k, lt.Data[k], v)
		}
	}
	if lt.ImageID != got.Status.ImageID || len(lt.SecurityGroupIDs) != 1 || !strings.HasPrefix(lt.Name, "nodesmith/") {
		t.Errorf("template image %s sgs %v name %s", lt.ImageID, lt.SecurityGroupIDs, lt.Name)
	}
	// The root volume size is the node's ephemeral storage.
	if eph := got.Status.Capacity[corev1.ResourceEphemeralStorage]; eph.Cmp(size) != 0 {
		t.Errorf("ephemeral-storage capacity = %s, want %s", eph.String(), size.String())
	}
}

// denyCreateFleet answers CreateFleet as EC2 does when the instance profile
// cannot be passed.
func denyCreateFleet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "Action=CreateFleet") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation.</Message></Error></Errors><RequestID>r-1</RequestID></Response>`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func TestUnauthorizedCarriesTheHint(t *testing.T) {
	e := newEnv(t, envOpts{wrap: denyCreateFleet})
	_, err := e.p.Create(e.ctx, newClaim("c1"))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, s := range []string{"UnauthorizedOperation", "instance profile", "iam:PassRole"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q: %v", s, err)
		}
	}
	if cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("an authorization error was classed as capacity or node class: %v", err)
	}
	if got := e.world.Stats()["CreateFleet"]; got != 0 {
		t.Errorf("the fake saw %d CreateFleet calls, want 0", got)
	}
}
