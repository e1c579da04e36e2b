package aws

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

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

func TestIdenticalClaimsShareOneFleetCall(t *testing.T) {
	e := newEnv(t, envOpts{clock: clock.RealClock{}})
	const n = 5
	got := make([]*nsv1.NodeClaim, n)
	claims := make([]*nsv1.NodeClaim, n)
	for i := range claims {
		claims[i] = newClaim(fmt.Sprintf("b%d", i))
	}
	before := len(e.fleetCalls())
	ids := map[string]bool{}
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if r.Err != nil {
			t.Fatalf("claim %d: %v", i, r.Err)
		}
		got[i] = r.Claim
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
// EC2 answers a repeated client token with the first (failed) result, so
// the retry is a new launch attempt, as after any rejected launch.
func TestRetryAfterCapacityReturnsLaunches(t *testing.T) {
	e := newEnv(t, envOpts{})
	reqs := reqIn(corev1.LabelInstanceTypeStable, "m5.large")
	for _, p := range e.world.Pools() {
		e.world.InjectICE(p.InstanceType, p.Zone, p.CapacityType, epoch.Add(5*time.Minute))
	}
	claim := newClaim("c1", reqs)
	if _, err := e.p.Create(e.ctx, claim); !cloudprovider.IsInsufficientCapacity(err) {
		t.Fatalf("err = %v, want InsufficientCapacity", err)
	}
	e.clock.SetTime(epoch.Add(6 * time.Minute))
	cloudprovider.NextLaunchAttempt(claim)
	got := e.create(claim)
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
