package disruptor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

var seq int

func uniq(p string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", p, time.Now().UnixNano()%100000, seq)
}

// fixture is one test's cluster: a pool, its nodes and claims, a namespace,
// the fake cloud, and the controller on a fake clock. Everything it made
// is removed when the test ends: the controller plans the whole cluster.
type fixture struct {
	t     *testing.T
	clk   *clocktesting.FakeClock
	cloud *fake.CloudProvider
	pool  *nsv1.NodePool
	ns    string
	c     *Controller
	rec   *events.FakeRecorder
	m     *metrics.Metrics
	nodes []string
}

func newFixture(t *testing.T, mutate func(*nsv1.NodePool)) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, clk: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), ns: uniq("ns")}
	f.cloud = fake.New(fake.InstanceType("small", 2, 8, 0.10, "zone-a"), fake.InstanceType("large", 8, 32, 0.40, "zone-a"))
	pool := controllertest.NodePool(uniq("pool"))
	pool.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "100%"}}
	if mutate != nil {
		mutate(pool)
	}
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	f.pool = pool
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	r, fakeRec := controllertest.Recorder(f.clk)
	f.rec, f.m = fakeRec, controllertest.Metrics()
	f.c = New(h.Client, f.cloud, state.NewCluster(h.Client, f.clk, time.Minute), f.clk, r, f.m, Options{})
	t.Cleanup(f.cleanup)
	return f
}

// node creates an initialized claim of the pool running it (a fake type)
// on-demand in zone-a, and its Node; it returns the claim's name (the node
// has the same name).
func (f *fixture) node(it string, mutate func(*nsv1.NodeClaim)) string {
	f.t.Helper()
	ctx := context.Background()
	name := uniq(f.pool.Name)
	typ := f.cloud.InstanceTypes[0]
	for _, t := range f.cloud.InstanceTypes {
		if t.Name == it {
			typ = t
		}
	}
	labels := map[string]string{nsv1.LabelNodePool: f.pool.Name, corev1.LabelInstanceTypeStable: it,
		corev1.LabelTopologyZone: "zone-a", nsv1.LabelCapacityType: nsv1.CapacityTypeOnDemand}
	node := controllertest.Node(name, "fake:///zone-a/"+name, fmt.Sprint(typ.VCPU))
	for k, v := range labels {
		node.Labels[k] = v
	}
	node.Status.Allocatable[corev1.ResourceMemory] = typ.Capacity[corev1.ResourceMemory]
	if err := h.Direct.Create(ctx, node); err != nil {
		f.t.Fatal(err)
	}
	f.nodes = append(f.nodes, name)
	claim := controllertest.NodeClaim(name, f.pool.Name)
	claim.Finalizers = []string{nsv1.TerminationFinalizer}
	for k, v := range labels {
		claim.Labels[k] = v
	}
	claim.Annotations = map[string]string{nsv1.AnnotationNodePoolHash: f.pool.Hash(), nsv1.AnnotationNodePoolHashVersion: nsv1.NodePoolHashVersion}
	claim.Spec.NodeClassRef = f.pool.Spec.Template.Spec.NodeClassRef
	if mutate != nil {
		mutate(claim) // the spec is immutable: set it at creation (the status is set below)
	}
	if err := h.Direct.Create(ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	claim.Status = nsv1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: name, InstanceType: it, Zone: "zone-a",
		CapacityType: nsv1.CapacityTypeOnDemand, Price: nsv1.FormatPrice(typ.OnDemandPrice), ImageID: "ami-old", Allocatable: node.Status.Allocatable}
	lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(f.clk.Now().Add(-time.Hour)))
	if mutate != nil {
		mutate(claim)
	}
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		f.t.Fatal(err)
	}
	h.Cached(f.t, claim)
	h.Cached(f.t, node)
	return name
}

func (f *fixture) pod(node, cpu string) *corev1.Pod {
	f.t.Helper()
	p := controllertest.Pod(f.ns, uniq("p"), cpu)
	p.Spec.NodeName = node
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: &yes}}
	if err := h.Direct.Create(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
	h.Cached(f.t, p)
	return p
}

// step runs one Reconcile at the fake clock's now.
func (f *fixture) step() time.Duration {
	f.t.Helper()
	res, err := f.c.Reconcile(context.Background())
	if err != nil {
		f.t.Fatalf("Reconcile: %v", err)
	}
	return res.RequeueAfter
}

// claim reads a claim from the API server (not the controller's cache).
func (f *fixture) claim(name string) *nsv1.NodeClaim {
	f.t.Helper()
	c := &nsv1.NodeClaim{}
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		f.t.Fatalf("getting nodeclaim %s: %v", name, err)
	}
	return c
}

func (f *fixture) deleting(name string) bool {
	f.t.Helper()
	return !f.claim(name).DeletionTimestamp.IsZero()
}

// claimsOfPool lists the pool's claims from the API server.
func (f *fixture) claimsOfPool() []nsv1.NodeClaim {
	f.t.Helper()
	var list nsv1.NodeClaimList
	if err := h.Direct.List(context.Background(), &list, client.MatchingLabels{nsv1.LabelNodePool: f.pool.Name}); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// settle waits until the cache shows every claim of the pool as the API
// server has it, so the next step sees the last one's writes.
func (f *fixture) settle() {
	f.t.Helper()
	claims := f.claimsOfPool()
	for i := range claims {
		h.Cached(f.t, &claims[i])
	}
	for _, n := range f.nodes {
		node := &corev1.Node{}
		if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: n}, node); err == nil {
			h.Cached(f.t, node)
		}
	}
}

// events are the events recorded so far.
func (f *fixture) events() string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// cleanup removes the test's objects (finalizers first) and waits for the
// cache to forget them.
func (f *fixture) cleanup() {
	ctx := context.Background()
	for _, c := range f.claimsOfPool() {
		c := c
		base := c.DeepCopy()
		c.Finalizers = nil
		_ = h.Direct.Patch(ctx, &c, client.MergeFrom(base))
		_ = client.IgnoreNotFound(h.Direct.Delete(ctx, &c))
	}
	for _, n := range f.nodes {
		_ = client.IgnoreNotFound(h.Direct.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	_ = h.Direct.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(f.ns), client.GracePeriodSeconds(0))
	_ = h.Direct.Delete(ctx, f.pool)
	controllertest.Eventually(f.t, "the cache forgets the test's objects", func() error {
		var claims nsv1.NodeClaimList
		if err := h.Client.List(ctx, &claims, client.MatchingLabels{nsv1.LabelNodePool: f.pool.Name}); err != nil {
			return err
		}
		var pods corev1.PodList
		if err := h.Client.List(ctx, &pods, client.InNamespace(f.ns)); err != nil {
			return err
		}
		var pools nsv1.NodePoolList
		if err := h.Client.List(ctx, &pools); err != nil {
			return err
		}
		for _, p := range pools.Items {
			if p.Name == f.pool.Name {
				return fmt.Errorf("pool still cached")
			}
		}
		if len(claims.Items)+len(pods.Items) > 0 {
			return fmt.Errorf("%d claims and %d pods still cached", len(claims.Items), len(pods.Items))
		}
		return nil
	})
}

func nodeClass(name string, amis ...string) *awsv1.EC2NodeClass {
	role := "node-role"
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		Role:                       &role,
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"nodesmith.sh/discovery": "test"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"nodesmith.sh/discovery": "test"}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
	}}
	for _, id := range amis {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{ID: id, Architecture: "amd64"})
	}
	return nc
}
