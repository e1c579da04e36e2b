package aws

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// wire intercepts EC2 actions on their way to the simulated AWS: it can let
// an action reach the world and then lose its answer (the client sees a
// 503), or fail it before the world sees it.
type wire struct {
	mu sync.Mutex
	// lose counts answers of an action still to be lost after the world ran it.
	lose map[string]int
	// refuse counts calls of an action still to be refused before the world sees them.
	refuse map[string]int
	// reject counts calls of an action still to be rejected with a client
	// error (UnauthorizedOperation) before the world sees them.
	reject map[string]int
}

func newWire() *wire {
	return &wire{lose: map[string]int{}, refuse: map[string]int{}, reject: map[string]int{}}
}

func (w *wire) set(m map[string]int, action string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m[action] = n
}

func (w *wire) take(m map[string]int, action string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m[action] > 0 {
		m[action]--
		return true
	}
	return false
}

func (w *wire) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		action := form.Get("Action")
		if w.take(w.refuse, action) {
			unavailableAnswer(rw)
			return
		}
		if w.take(w.reject, action) {
			rw.Header().Set("Content-Type", "text/xml")
			rw.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(rw, `<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>not authorized</Message></Error></Errors><RequestID>x</RequestID></Response>`)
			return
		}
		if w.take(w.lose, action) {
			next.ServeHTTP(httptest.NewRecorder(), r) // the world acts; the answer is dropped
			unavailableAnswer(rw)
			return
		}
		next.ServeHTTP(rw, r)
	})
}

func unavailableAnswer(rw http.ResponseWriter) {
	rw.Header().Set("Content-Type", "text/xml")
	rw.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(rw, `<Response><Errors><Error><Code>Unavailable</Code><Message>the answer was lost</Message></Error></Errors><RequestID>x</RequestID></Response>`)
}

// restarted is a provider as a restarted controller (or the new leader)
// builds it: the same AWS, nothing remembered, an empty ICE cache.
func (e *env) restarted() *Provider {
	e.t.Helper()
	p, err := New(Config{EC2: e.ec2, SSM: e.ssm, Clock: e.p.clock, Cluster: e.p.cluster, NodeClasses: e.getNodeClass, Options: e.p.opts})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func liveIn(w *fakeaws.World) []fakeaws.Instance {
	var out []fakeaws.Instance
	for _, in := range w.Instances() {
		if in.State == "pending" || in.State == "running" {
			out = append(out, in)
		}
	}
	return out
}

func TestCreateAgainTakesTheInstanceItLaunched(t *testing.T) {
	e := newEnv(t, envOpts{})
	a := e.create(newClaim("c1"))
	// The status write was lost, or the cache had not caught up: Create again.
	b := e.create(newClaim("c1"))
	if a.Status.ProviderID != b.Status.ProviderID {
		t.Errorf("second Create got %s, first %s", b.Status.ProviderID, a.Status.ProviderID)
	}
	if b.Status.InstanceType != a.Status.InstanceType || b.Status.Zone != a.Status.Zone || b.Status.Price == "" || b.Status.Capacity.Cpu().IsZero() {
		t.Errorf("adopted status %+v lacks what the launch reported (%+v)", b.Status, a.Status)
	}
	if n := len(e.fleetCalls()); n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1: the second Create must find the instance by its tag", n)
	}
	if n := len(liveIn(e.world)); n != 1 {
		t.Errorf("instances = %d, want 1", n)
	}
	// Another claim is another instance.
	if c := e.create(newClaim("c2")); c.Status.ProviderID == a.Status.ProviderID {
		t.Error("a different claim got the same instance")
	}
}

func TestLostAnswerIsRetriedWithTheSameToken(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{wrap: w.wrap})
	w.set(w.lose, "CreateFleet", 2)
	got := e.create(newClaim("c1"))
	calls := e.fleetCalls()
	if st := e.world.Stats()["CreateFleet"]; st != 3 {
		t.Fatalf("CreateFleet on the wire = %d, want 3 (two answers lost, then the replay)", st)
	}
	if len(calls) != 1 {
		t.Fatalf("operations = %d, want one, retried by the SDK", len(calls))
	}
	live := liveIn(e.world)
	if len(live) != 1 || !strings.HasSuffix(got.Status.ProviderID, live[0].ID) {
		t.Fatalf("live instances %v, claim got %s: the retries must replay the first launch", live, got.Status.ProviderID)
	}
}

func TestLostAnswerIsAdoptedAfterARestart(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{wrap: w.wrap})
	w.set(w.lose, "CreateFleet", 100)
	_, err := e.p.Create(e.ctx, newClaim("c1"))
	if !cloudprovider.IsCloudUnavailable(err) || cloudprovider.IsLaunchRejected(err) {
		t.Fatalf("Create with every answer lost = %v, want CloudUnavailable (the outcome is unknown)", err)
	}
	w.set(w.lose, "CreateFleet", 0)
	launched := liveIn(e.world)
	if len(launched) != 1 || launched[0].Tags[awsv1.TagNodeClaim] != "c1" {
		t.Fatalf("the lost call should have launched one instance tagged c1, got %+v", launched)
	}
	wire := e.world.Stats()["CreateFleet"]
	got, err := e.restarted().Create(e.ctx, newClaim("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got.Status.ProviderID, launched[0].ID) {
		t.Errorf("after the restart the claim got %s, want the instance the lost call launched (%s)", got.Status.ProviderID, launched[0].ID)
	}
	if n := e.world.Stats()["CreateFleet"]; n != wire {
		t.Errorf("the restarted provider called CreateFleet %d more times", n-wire)
	}
	if n := len(liveIn(e.world)); n != 1 {
		t.Errorf("live instances = %d, want 1", n)
	}
}

func identical(n int) []*nsv1.NodeClaim {
	claims := make([]*nsv1.NodeClaim, n)
	for i := range claims {
		claims[i] = newClaim(fmt.Sprintf("b%02d", i))
	}
	return claims
}

// checkOnePerClaim asserts that the world has exactly one live instance per
// claim, tagged with it, and that each claim's status names its own.
func checkOnePerClaim(t *testing.T, e *env, got []*nsv1.NodeClaim) {
	t.Helper()
	live := liveIn(e.world)
	if len(live) != len(got) {
		t.Fatalf("%d live instances for %d claims", len(live), len(got))
	}
	byID := map[string]fakeaws.Instance{}
	for _, in := range live {
		byID[in.ID] = in
	}
	seen := map[string]string{}
	for _, c := range got {
		id, err := ParseProviderID(c.Status.ProviderID)
		if err != nil {
			t.Fatalf("claim %s: %v", c.Name, err)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("claims %s and %s both got %s", other, c.Name, id)
		}
		seen[id] = c.Name
		if tag := byID[id].Tags[awsv1.TagNodeClaim]; tag != c.Name {
			t.Errorf("instance %s is tagged %q, want %q", id, tag, c.Name)
		}
	}
}

func TestMergedLaunchWithLostAnswerIsAdopted(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{clock: clock.RealClock{}, wrap: w.wrap})
	claims := identical(5)
	w.set(w.lose, "CreateFleet", 100)
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if !cloudprovider.IsCloudUnavailable(r.Err) {
			t.Fatalf("claim %d: %v, want CloudUnavailable", i, r.Err)
		}
	}
	w.set(w.lose, "CreateFleet", 0)
	launched := liveIn(e.world)
	if len(launched) != 5 {
		t.Fatalf("the lost merged call launched %d instances, want 5", len(launched))
	}
	for _, in := range launched {
		if in.Tags[awsv1.TagNodeClaim] != "" || len(strings.Fields(in.Tags[awsv1.TagLaunchBatch])) != 5 {
			t.Fatalf("instance %s tags %v: want no claim yet and the batch's 5 launch keys", in.ID, in.Tags)
		}
	}
	wire := e.world.Stats()["CreateFleet"]
	p := e.restarted()
	got := make([]*nsv1.NodeClaim, len(claims))
	for i, r := range p.CreateAll(e.ctx, claims) {
		if r.Err != nil {
			t.Fatalf("claim %d after the restart: %v", i, r.Err)
		}
		got[i] = r.Claim
	}
	if n := e.world.Stats()["CreateFleet"]; n != wire {
		t.Errorf("CreateFleet called %d more times; every claim should take an instance of its batch", n-wire)
	}
	checkOnePerClaim(t, e, got)
}

func TestCrashBetweenMergedLaunchAndTagging(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{clock: clock.RealClock{}, wrap: w.wrap})
	claims := identical(4)
	// The launching controller dies after CreateFleet: no claim tag is written.
	w.set(w.refuse, "CreateTags", 1000)
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if r.Err == nil || r.Claim != nil {
			t.Fatalf("claim %d recorded an instance its tag was never written on: %+v", i, r)
		}
		// The instance exists: not a rejection, so the attempt stays.
		if !cloudprovider.IsCloudUnavailable(r.Err) || cloudprovider.IsLaunchRejected(r.Err) {
			t.Fatalf("claim %d: %v, want CloudUnavailable (the tagging got no answer)", i, r.Err)
		}
	}
	w.set(w.refuse, "CreateTags", 0)
	wire := e.world.Stats()["CreateFleet"]
	// Garbage collection sees untagged instances that these claims may take.
	p := e.restarted()
	listed, err := p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 4 {
		t.Fatalf("List = %d instances, want 4", len(listed))
	}
	for _, in := range listed {
		if in.Name != "" {
			t.Errorf("instance %s already belongs to %s", in.Status.ProviderID, in.Name)
		}
		for _, c := range claims {
			if !cloudprovider.LaunchedFor(in, c) {
				t.Errorf("instance %s does not name claim %s as a member of its launch", in.Status.ProviderID, c.Name)
			}
		}
	}
	// The claims come back one at a time, in another order, as the
	// lifecycle controller's workers would retry them.
	got := make([]*nsv1.NodeClaim, 0, len(claims))
	for i := len(claims) - 1; i >= 0; i-- {
		c, err := p.Create(e.ctx, claims[i])
		if err != nil {
			t.Fatalf("claim %s: %v", claims[i].Name, err)
		}
		got = append(got, c)
	}
	if n := e.world.Stats()["CreateFleet"]; n != wire {
		t.Errorf("CreateFleet called %d more times after the crash", n-wire)
	}
	checkOnePerClaim(t, e, got)
	// A claim that was never part of the batch finds nothing to take.
	other, err := p.Create(e.ctx, newClaim("outsider"))
	if err != nil {
		t.Fatal(err)
	}
	if e.world.Stats()["CreateFleet"] != wire+1 {
		t.Error("a claim outside the batch must launch its own instance")
	}
	checkOnePerClaim(t, e, append(got, other))
}

func TestMergedCallsHoldAtMostMaxBatchClaims(t *testing.T) {
	e := newEnv(t, envOpts{clock: clock.RealClock{}})
	claims := identical(maxBatch + 3)
	got := make([]*nsv1.NodeClaim, len(claims))
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if r.Err != nil {
			t.Fatalf("claim %d: %v", i, r.Err)
		}
		got[i] = r.Claim
	}
	var sizes []int32
	for _, c := range e.fleetCalls() {
		sizes = append(sizes, aws.ToInt32(c.TargetCapacitySpecification.TotalTargetCapacity))
	}
	if len(sizes) != 2 || sizes[0] != maxBatch || sizes[1] != 3 {
		t.Errorf("calls of %v claims, want [%d 3]", sizes, maxBatch)
	}
	for _, in := range liveIn(e.world) {
		if v := in.Tags[awsv1.TagLaunchBatch]; len(v) > 256 {
			t.Errorf("batch tag of %d characters exceeds EC2's 256", len(v))
		}
	}
	checkOnePerClaim(t, e, got)
}

func TestRejectedLaunchNeedsANewAttempt(t *testing.T) {
	// 2 vCPUs of on-demand: an xlarge (4) is over the quota, a large (2) is not.
	e := newEnv(t, envOpts{world: func(o *fakeaws.Options) { o.OnDemandVCPUQuota = 2 }})
	onDemand := reqIn(nsv1.LabelCapacityType, nsv1.CapacityTypeOnDemand)
	big := newClaim("q1", onDemand, reqIn(corev1.LabelInstanceTypeStable, "m5.xlarge"))
	_, err := e.p.Create(e.ctx, big)
	if !cloudprovider.IsLaunchRejected(err) || !strings.Contains(err.Error(), "VcpuLimitExceeded") {
		t.Fatalf("over the quota: %v, want a rejected launch naming VcpuLimitExceeded", err)
	}
	// The same attempt asking the same thing only replays EC2's first answer.
	if _, err := e.p.Create(e.ctx, big); !cloudprovider.IsLaunchRejected(err) {
		t.Fatalf("same attempt again: %v, want the replayed rejection", err)
	}
	// The same attempt asking something else is refused by EC2.
	small := newClaim("q1", onDemand, reqIn(corev1.LabelInstanceTypeStable, "m5.large"))
	_, err = e.p.Create(e.ctx, small)
	if !cloudprovider.IsLaunchRejected(err) || !strings.Contains(err.Error(), codeIdempotentMismatch) {
		t.Fatalf("same token, other request: %v, want a rejection naming %s", err, codeIdempotentMismatch)
	}
	if n := len(liveIn(e.world)); n != 0 {
		t.Fatalf("%d instances after rejected launches", n)
	}
	// The caller raises the attempt: a new token, a real launch.
	cloudprovider.NextLaunchAttempt(small)
	got, err := e.p.Create(e.ctx, small)
	if err != nil {
		t.Fatalf("attempt 1: %v", err)
	}
	if got.Status.InstanceType != "m5.large" || len(liveIn(e.world)) != 1 {
		t.Errorf("attempt 1 launched %s; %d live instances", got.Status.InstanceType, len(liveIn(e.world)))
	}
}

func TestUnansweredCallsLeaveTheOutcomeUnknown(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*fakeaws.World)
		// wantFleet is how many CreateFleet calls reach AWS.
		wantFleet int
	}{
		{name: "CreateFleet throttled through every retry", inject: func(w *fakeaws.World) { w.InjectThrottle("CreateFleet", 6) }, wantFleet: 6},
		{name: "CreateFleet failing with 5xx through every retry", inject: func(w *fakeaws.World) { w.InjectServerError("CreateFleet", 6) }, wantFleet: 6},
		// Without the lookup no launch may happen: it could be the second.
		{name: "the lookup before launching fails", inject: func(w *fakeaws.World) { w.InjectServerError("DescribeInstances", 6) }, wantFleet: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			tt.inject(e.world)
			_, err := e.p.Create(e.ctx, newClaim("u1"))
			if !cloudprovider.IsCloudUnavailable(err) || cloudprovider.IsLaunchRejected(err) {
				t.Fatalf("Create = %v, want CloudUnavailable", err)
			}
			if n := e.world.Stats()["CreateFleet"]; n != tt.wantFleet {
				t.Errorf("CreateFleet calls = %d, want %d", n, tt.wantFleet)
			}
			// AWS is back: the claim launches once.
			if _, err := e.p.Create(e.ctx, newClaim("u1")); err != nil {
				t.Fatal(err)
			}
			if n := len(liveIn(e.world)); n != 1 {
				t.Errorf("live instances = %d, want 1", n)
			}
		})
	}
}

// A merged launch whose per-claim tagging is refused outright (a missing
// permission) launched the instances all the same: the claims are told
// neither that the launch was rejected (which would move their attempt on)
// nor that AWS did not answer (which would keep them forever).
func TestMergedLaunchWithRefusedTaggingIsNotARejection(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{clock: clock.RealClock{}, wrap: w.wrap})
	w.set(w.reject, "CreateTags", 1000)
	for i, r := range e.p.CreateAll(e.ctx, identical(3)) {
		if r.Err == nil || cloudprovider.IsLaunchRejected(r.Err) || cloudprovider.IsCloudUnavailable(r.Err) {
			t.Errorf("claim %d: %v, want an untyped error naming the tagging", i, r.Err)
		}
		if r.Err != nil && !strings.Contains(r.Err.Error(), "UnauthorizedOperation") {
			t.Errorf("claim %d: %v does not say why", i, r.Err)
		}
	}
	if n := len(liveIn(e.world)); n != 3 {
		t.Errorf("%d live instances, want the 3 launched", n)
	}
}

// A burst of throttles and server errors on every API is absorbed by the
// SDK's retries: each claim still gets exactly one instance.
func TestFaultBurstOnEveryAPILaunchesEachClaimOnce(t *testing.T) {
	w := newWire()
	e := newEnv(t, envOpts{clock: clock.RealClock{}, wrap: w.wrap})
	e.world.InjectThrottle("*", 2)
	e.world.InjectServerError("*", 2)
	e.world.InjectThrottle("DescribeInstances", 2)
	e.world.InjectServerError("CreateTags", 2)
	// The first CreateFleet is refused twice (503 before EC2 acts), then
	// launches with its answer lost; the SDK's next retry gets the replay.
	w.set(w.refuse, "CreateFleet", 2)
	w.set(w.lose, "CreateFleet", 1)
	claims := append(identical(4), newClaim("solo", reqIn(corev1.LabelInstanceTypeStable, "c5.large")))
	got := make([]*nsv1.NodeClaim, len(claims))
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if r.Err != nil {
			t.Fatalf("claim %s: %v", claims[i].Name, r.Err)
		}
		got[i] = r.Claim
	}
	checkOnePerClaim(t, e, got)
	w.mu.Lock()
	left := w.refuse["CreateFleet"] + w.lose["CreateFleet"]
	w.mu.Unlock()
	// Refused calls never reach EC2; the lost one does and its retry is replayed.
	if ops, reached := len(e.fleetCalls()), e.world.Stats()["CreateFleet"]; left != 0 || reached != ops+1 {
		t.Errorf("CreateFleet: %d operations reached EC2 %d times with %d wire faults unmet; want %d times, none unmet", ops, reached, left, ops+1)
	}
	// Again, as after a lost status write: nothing new.
	for i, r := range e.p.CreateAll(e.ctx, claims) {
		if r.Err != nil || r.Claim.Status.ProviderID != got[i].Status.ProviderID {
			t.Fatalf("claim %s again: %v, %v", claims[i].Name, r.Err, r.Claim)
		}
	}
	checkOnePerClaim(t, e, got)
}
