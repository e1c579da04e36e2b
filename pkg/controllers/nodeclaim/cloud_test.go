package nodeclaim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	awsprovider "github.com/nodesmith/nodesmith/pkg/providers/aws"
)

// simulatedAWS is a simulated AWS behind a wire the test can break: a
// CreateFleet can reach the world and lose its answer, be refused before
// the world sees it (503), or be rejected (a 400 EC2 error). Each
// controller() is a new controller process (a restart, or the next leader)
// with the real AWS provider over the real SDK.
type simulatedAWS struct {
	world *fakeaws.World
	url   string
	specs []catalog.Spec

	mu                   sync.Mutex
	lose, refuse, reject int      // CreateFleet calls still to break so
	tokens               []string // ClientToken of every CreateFleet on the wire
}

const simCluster = "faults"

func newSimulatedAWS(t *testing.T) *simulatedAWS {
	t.Helper()
	all, err := catalog.Specs()
	if err != nil {
		t.Fatal(err)
	}
	s := &simulatedAWS{}
	for _, sp := range all {
		if sp.Name == "m5.large" || sp.Name == "m5.xlarge" {
			s.specs = append(s.specs, sp)
		}
	}
	s.world = fakeaws.NewWorld(fakeaws.Options{ClusterName: simCluster, Seed: 1, Specs: fakeaws.SpecsFromCatalog(s.specs, "us-east-1", nil)})
	srv := httptest.NewServer(s.wrap(fakeaws.NewServer(s.world)))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *simulatedAWS) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		if form.Get("Action") != "CreateFleet" {
			next.ServeHTTP(rw, r)
			return
		}
		s.mu.Lock()
		s.tokens = append(s.tokens, form.Get("ClientToken"))
		lose, refuse, reject := s.lose > 0, s.refuse > 0, s.reject > 0
		switch {
		case reject:
			s.reject--
		case refuse:
			s.refuse--
		case lose:
			s.lose--
		}
		s.mu.Unlock()
		switch {
		case reject:
			ec2Error(rw, http.StatusBadRequest, "UnauthorizedOperation", "You are not authorized to perform this operation.")
		case refuse:
			ec2Error(rw, http.StatusServiceUnavailable, "Unavailable", "the service is unavailable")
		case lose:
			next.ServeHTTP(httptest.NewRecorder(), r) // the world launches; the answer is lost
			ec2Error(rw, http.StatusServiceUnavailable, "Unavailable", "the answer was lost")
		default:
			next.ServeHTTP(rw, r)
		}
	})
}

func ec2Error(rw http.ResponseWriter, status int, code, msg string) {
	rw.Header().Set("Content-Type", "text/xml")
	rw.WriteHeader(status)
	_, _ = io.WriteString(rw, `<Response><Errors><Error><Code>`+code+`</Code><Message>`+msg+`</Message></Error></Errors><RequestID>r</RequestID></Response>`)
}

func (s *simulatedAWS) set(lose, refuse, reject int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose, s.refuse, s.reject = lose, refuse, reject
}

func (s *simulatedAWS) wireTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

func (s *simulatedAWS) live() []fakeaws.Instance {
	var out []fakeaws.Instance
	for _, in := range s.world.Instances() {
		if in.State == "pending" || in.State == "running" {
			out = append(out, in)
		}
	}
	return out
}

// controller is a freshly started controller process: a new provider (no
// ICE cache, no memory of earlier calls) and a new cluster state.
func (s *simulatedAWS) controller(t *testing.T) *Controller {
	t.Helper()
	cfg := aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
		BaseEndpoint: aws.String(s.url), Retryer: awsprovider.NewRetryer(3, time.Millisecond),
	}
	class := &awsv1.EC2NodeClass{}
	class.Name = "default"
	class.Spec = awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: simCluster}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{awsv1.TagDiscovery: simCluster}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       aws.String("NodeRole"),
	}
	p, err := awsprovider.New(awsprovider.Config{
		EC2: ec2.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Clock: clock.RealClock{},
		Cluster:     awsprovider.Cluster{Name: simCluster, Endpoint: "https://api.faults.example", CABundle: "Q0E="},
		NodeClasses: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return class.DeepCopy(), nil },
		Options:     awsprovider.Options{Region: "us-east-1", Specs: s.specs},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.RealClock{}
	rec, _ := controllertest.Recorder(clk)
	return New(h.Client, p, state.NewCluster(h.Client, clk, time.Minute), clk, rec, controllertest.Metrics(), Options{})
}

func reconcileWith(t *testing.T, c *Controller, name string) error {
	t.Helper()
	_, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	latest := get(t, name)
	h.Cached(t, latest)
	return err
}

func launchedCondition(t *testing.T, name string) (*nsv1.NodeClaim, string) {
	t.Helper()
	got := get(t, name)
	c := meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionLaunched)
	if c == nil {
		return got, ""
	}
	return got, c.Reason
}

// The controller dies (or loses the answer) after CreateFleet launched the
// instance: the next controller takes that instance instead of launching a
// second one.
func TestRestartAfterALostLaunchAnswerLaunchesNothingNew(t *testing.T) {
	s := newSimulatedAWS(t)
	claim := create(t, controllertest.NodeClaim(uniq("lost"), "pool-a"))
	s.set(100, 0, 0)
	if err := reconcileWith(t, s.controller(t), claim.Name); err == nil {
		t.Fatal("a launch whose every answer was lost succeeded")
	}
	if _, reason := launchedCondition(t, claim.Name); reason != lifecycle.ReasonCloudUnavailable {
		t.Fatalf("Launched reason %q, want %s", reason, lifecycle.ReasonCloudUnavailable)
	}
	launched := s.live()
	if len(launched) != 1 || launched[0].Tags[awsv1.TagNodeClaim] != claim.Name {
		t.Fatalf("the lost call should have launched one instance tagged %s: %+v", claim.Name, launched)
	}
	s.set(0, 0, 0)
	onWire := len(s.wireTokens())
	if err := reconcileWith(t, s.controller(t), claim.Name); err != nil {
		t.Fatalf("restarted controller: %v", err)
	}
	got, reason := launchedCondition(t, claim.Name)
	if reason != nsv1.ConditionLaunched || !strings.HasSuffix(got.Status.ProviderID, "/"+launched[0].ID) {
		t.Errorf("claim launched as %q (%s), want the lost call's %s", got.Status.ProviderID, reason, launched[0].ID)
	}
	if n := len(s.wireTokens()) - onWire; n != 0 {
		t.Errorf("the restarted controller made %d CreateFleet calls, want 0", n)
	}
	if n := len(s.live()); n != 1 {
		t.Errorf("%d live instances, want 1", n)
	}
}

// A restarted controller retries an unanswered launch with the token the
// first controller used, and a rejected launch with a new one: the launch
// attempt it reads from the claim says which.
func TestRestartedControllerReusesTheTokenOfTheSameAttempt(t *testing.T) {
	s := newSimulatedAWS(t)
	claim := create(t, controllertest.NodeClaim(uniq("token"), "pool-a"))

	s.set(0, 0, 1) // EC2 rejects the first launch
	if err := reconcileWith(t, s.controller(t), claim.Name); err == nil {
		t.Fatal("a rejected launch succeeded")
	}
	if a := get(t, claim.Name).Annotations[nsv1.AnnotationLaunchAttempt]; a != "1" {
		t.Fatalf("launch attempt after a rejection = %q, want 1", a)
	}
	s.set(0, 100, 0) // then AWS does not answer at all: nothing launches
	if err := reconcileWith(t, s.controller(t), claim.Name); err == nil {
		t.Fatal("a launch with no answer succeeded")
	}
	if a := get(t, claim.Name).Annotations[nsv1.AnnotationLaunchAttempt]; a != "1" {
		t.Fatalf("launch attempt after no answer = %q, want still 1", a)
	}
	s.set(0, 0, 0)
	if err := reconcileWith(t, s.controller(t), claim.Name); err != nil {
		t.Fatalf("third controller: %v", err)
	}
	tokens := s.wireTokens()
	if len(tokens) < 3 {
		t.Fatalf("CreateFleet calls on the wire: %d, want at least 3", len(tokens))
	}
	first, last := tokens[0], tokens[len(tokens)-1]
	if first == tokens[1] {
		t.Error("the launch after a rejection reused the rejected attempt's token")
	}
	for i, tok := range tokens[1:] {
		if tok != last {
			t.Errorf("call %d of attempt 1 used token %s, the launch used %s: a restart must keep the attempt's token", i+1, tok, last)
		}
	}
	if n := len(s.live()); n != 1 {
		t.Errorf("%d live instances, want 1", n)
	}
	if _, reason := launchedCondition(t, claim.Name); reason != nsv1.ConditionLaunched {
		t.Errorf("Launched reason %q", reason)
	}
}
