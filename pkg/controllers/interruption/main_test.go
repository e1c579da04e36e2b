package interruption

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/fakeaws"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

const queueName = "interruptions"

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// env is a simulated AWS behind the real SDK clients, and the two
// controllers of the package on a fake clock.
type env struct {
	t        *testing.T
	ctx      context.Context
	clk      *clocktesting.FakeClock
	world    *fakeaws.World
	srv      *fakeaws.Server
	url      string
	sqs      *sqs.Client
	ec2      *ec2.Client
	m        *metrics.Metrics
	events   *events.FakeRecorder
	ice      *catalog.UnavailableOfferings
	history  *catalog.InterruptionHistory
	woken    []string
	deps     Deps
	queue    *Queue
	disrupts *Disrupted
	pool     string
}

type envOption func(*Options, *fakeaws.Options)

func withMode(m interruption.RebalanceMode) envOption {
	return func(o *Options, _ *fakeaws.Options) { o.Rebalance = m }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clk: clocktesting.NewFakeClock(epoch), m: controllertest.Metrics()}
	// Every test's world draws other instance ids: the API server is shared.
	seq++
	fo := fakeaws.Options{Clock: e.clk, ClusterName: "lab", InterruptionQueue: queueName, Seed: int64(seq)}
	qo := DefaultOptions(queueName)
	qo.WaitTime = 0 // the fake clock does not move while a long poll waits
	for _, o := range opts {
		o(&qo, &fo)
	}
	e.world = fakeaws.NewWorld(fo)
	e.srv = fakeaws.NewServer(e.world)
	e.url = e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.sqs, e.ec2 = clients(e.url)
	rec, fake := controllertest.Recorder(e.clk)
	e.events = fake
	e.ice = catalog.NewUnavailableOfferings(e.clk, 0)
	e.history = catalog.NewInterruptionHistory(e.clk, 0)
	e.deps = Deps{Kube: h.Client, Fresh: h.Direct, Clock: e.clk, Recorder: rec, Metrics: e.m, Unavailable: e.ice, History: e.history,
		Wake: func(key string) { e.woken = append(e.woken, key) }}
	q, err := NewQueue(e.deps, e.sqs, qo)
	if err != nil {
		t.Fatal(err)
	}
	e.queue = q
	e.disrupts = NewDisrupted(e.deps)
	e.pool = uniq("pool")
	if err := h.Direct.Create(e.ctx, controllertest.NodePool(e.pool)); err != nil {
		t.Fatal(err)
	}
	return e
}

func clients(url string) (*sqs.Client, *ec2.Client) {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) }),
		ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
}

var seq int

func uniq(p string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", p, time.Now().UnixNano()%100000, seq)
}

// launchSpot starts a spot m5.large in the simulated AWS, lets it run, and
// drains the state-change messages its launch published.
func (e *env) launchSpot() fakeaws.Instance {
	e.t.Helper()
	imgs, err := e.ec2.DescribeImages(e.ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"amazon-eks-node-al2023-x86_64-standard-1.37-*"}}}})
	if err != nil || len(imgs.Images) != 1 {
		e.t.Fatalf("DescribeImages: %v", err)
	}
	lt, err := e.ec2.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(uniq("lt")),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId}})
	if err != nil {
		e.t.Fatal(err)
	}
	subnets, err := e.ec2.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		e.t.Fatalf("DescribeSubnets: %v", err)
	}
	out, err := e.ec2.CreateFleet(e.ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: "spot"},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
	})
	if err != nil || len(out.Instances) != 1 {
		e.t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	id := out.Instances[0].InstanceIds[0]
	e.clk.Step(time.Minute)
	e.world.Tick()
	e.purge()
	in, _ := e.world.Instance(id)
	return in
}

// purge empties the interruption queue (the launch's state changes).
func (e *env) purge() {
	if _, err := e.sqs.PurgeQueue(e.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(e.srv.QueueURL(queueName))}); err != nil {
		e.t.Fatal(err)
	}
}

// fixture is a claim for an instance, its registered Node and pods.
type fixture struct {
	claim *nsv1.NodeClaim
	node  *corev1.Node
	ns    string
	pods  []*corev1.Pod
}

// claimFor creates an initialized claim backed by in, its Ready node and
// pods (ReplicaSet pods with 30s grace, one DaemonSet pod).
func (e *env) claimFor(in fakeaws.Instance, pods int) *fixture {
	e.t.Helper()
	f := &fixture{ns: uniq("ns")}
	if err := h.Direct.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		e.t.Fatal(err)
	}
	claim := controllertest.NodeClaim(uniq("claim"), e.pool)
	claim.Finalizers = []string{nsv1.TerminationFinalizer}
	if err := h.Direct.Create(e.ctx, claim); err != nil {
		e.t.Fatal(err)
	}
	pid := fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID)
	node := controllertest.Node(uniq("node"), pid, "2")
	node.Finalizers = []string{nsv1.TerminationFinalizer}
	if err := h.Direct.Create(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
	h.SetNodeReady(e.t, node, corev1.ConditionTrue)
	claim.Status = nsv1.NodeClaimStatus{ProviderID: pid, NodeName: node.Name, InstanceType: in.Type, Zone: in.Zone, CapacityType: in.CapacityType,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	now := metav1.NewTime(e.clk.Now())
	for _, c := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(c, true, "", ""), 1, now)
	}
	if err := h.Direct.Status().Update(e.ctx, claim); err != nil {
		e.t.Fatal(err)
	}
	h.Cached(e.t, claim)
	for i := range pods {
		p := controllertest.Pod(f.ns, fmt.Sprintf("web-%d", i), "100m")
		p.Spec.NodeName = node.Name
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}
		f.pods = append(f.pods, e.create(p))
	}
	ds := controllertest.Pod(f.ns, "logs", "10m")
	ds.Spec.NodeName = node.Name
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "logs", UID: "ds-logs", Controller: ptr.To(true)}}
	e.create(ds)
	f.claim, f.node = claim, node
	return f
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	if err := h.Direct.Create(e.ctx, p); err != nil {
		e.t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	h.Cached(e.t, p)
	return p
}

// step runs one queue step.
func (e *env) step() {
	e.t.Helper()
	if _, err := e.queue.Reconcile(e.ctx); err != nil {
		e.t.Fatalf("queue step: %v", err)
	}
}

// decide runs the Disrupted reconciler on the fixture's claim.
func (e *env) decide(f *fixture) time.Duration {
	e.t.Helper()
	h.Cached(e.t, e.get(f.claim))
	res, err := e.disrupts.Reconcile(e.ctx, reqFor(f.claim))
	if err != nil {
		e.t.Fatalf("disrupted reconcile: %v", err)
	}
	return res.RequeueAfter
}

// get reads the claim fresh from the API server.
func (e *env) get(c *nsv1.NodeClaim) *nsv1.NodeClaim {
	e.t.Helper()
	out := &nsv1.NodeClaim{}
	if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(c), out); err != nil {
		e.t.Fatalf("getting claim %s: %v", c.Name, err)
	}
	return out
}

// depth is the interruption queue's visible and in-flight messages.
func (e *env) depth() (int, int) { return e.world.QueueDepth(queueName) }

// send puts a raw body on the interruption queue, as EventBridge would.
func (e *env) send(body string) {
	e.t.Helper()
	if _, err := e.world.SendMessage(queueName, body); err != nil {
		e.t.Fatal(err)
	}
}

// drainEvents returns the events recorded so far.
func (e *env) drainEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// denyWhile wraps the server: while denied is set, the SQS calls named in
// ops answer AccessDenied as SQS does.
func denyWhile(denied *atomic.Bool, next http.Handler, ops ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, op := range ops {
			if denied.Load() && r.Header.Get("X-Amz-Target") == "AmazonSQS."+op {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Header().Set("x-amzn-query-error", "AccessDenied;Sender")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.service#AccessDeniedException","message":"User: arn:aws:sts::123456789012:assumed-role/nodesmith/x is not authorized to perform: sqs:receivemessage"}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
