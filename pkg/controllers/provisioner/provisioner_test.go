package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/controllers/nodeclaim"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

type fixture struct {
	p       *Provisioner
	cluster *state.Cluster
	clk     *clocktesting.FakeClock
	cloud   *fake.CloudProvider
	pool    *nsv1.NodePool
	ns      string
	events  *kevents.FakeRecorder
	metrics *metrics.Metrics
}

var seq int

// newFixture makes a pool (limited to the fixture's claims by a label the
// pods select) and a namespace of pending pods.
func newFixture(t *testing.T, pods int, cpu string) *fixture {
	t.Helper()
	return newFixtureWith(t, pods, cpu, Options{})
}

func newFixtureWith(t *testing.T, pods int, cpu string, opts Options) *fixture {
	t.Helper()
	return newFixtureIn(t, pods, cpu, opts, "zone-a", "zone-b")
}

// newFixtureIn is newFixtureWith with the instance types offered in zones.
func newFixtureIn(t *testing.T, pods int, cpu string, opts Options, zones ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	seq++
	id := fmt.Sprintf("%d-%d", time.Now().UnixNano()%100000, seq)
	f := &fixture{cloud: fake.New(
		fake.InstanceType("m5.large", 2, 8, 0.096, zones...),
		fake.InstanceType("m5.2xlarge", 8, 32, 0.384, zones...),
	), ns: "prov-" + id}
	clk := clocktesting.NewFakeClock(time.Now())
	// As cmd/controller builds it: snapshots read the informers' stores.
	cluster := state.NewCluster(h.Client, clk, time.Minute).ListSharedFrom(state.InformerLister{Cache: h.Mgr.GetCache()})
	rec, fakeRec := controllertest.Recorder(clk)
	f.events = fakeRec
	m := controllertest.Metrics()
	f.metrics = m
	launcher := nodeclaim.NewLauncher(h.Client, f.cloud, cluster, clk, rec, m, nil)
	f.p = New(h.Client, f.cloud, cluster, launcher, clk, rec, m, opts)
	f.cluster, f.clk = cluster, clk

	f.pool = controllertest.NodePool("pool-" + id)
	f.pool.Spec.Template.ObjectMeta.Labels = map[string]string{"fixture": id}
	if err := h.Direct.Create(ctx, f.pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, f.pool)
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < pods; i++ {
		f.pendingPod(t, fmt.Sprintf("p%d", i), cpu)
	}
	return f
}

// pendingPod creates a pod of the fixture's pool that kube-scheduler has
// marked Unschedulable, and waits for the cache to hold it.
func (f *fixture) pendingPod(t *testing.T, name, cpu string) {
	t.Helper()
	ctx := context.Background()
	p := controllertest.Pod(f.ns, name, cpu)
	p.Spec.NodeSelector = f.pool.Spec.Template.ObjectMeta.Labels
	if err := h.Direct.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := h.Direct.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
}

func (f *fixture) claims(t *testing.T) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := h.Direct.List(context.Background(), &list, client.MatchingLabels{nsv1.LabelNodePool: f.pool.Name}); err != nil {
		t.Fatal(err)
	}
	var out []nsv1.NodeClaim
	for _, c := range list.Items {
		if c.DeletionTimestamp.IsZero() {
			out = append(out, c)
		}
	}
	return out
}

func TestProvisionCreatesAndLaunchesClaims(t *testing.T) {
	f := newFixture(t, 6, "1500m")
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	if len(claims) == 0 {
		t.Fatal("no nodeclaims created for six pending pods")
	}
	for _, c := range claims {
		if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionLaunched) || c.Status.ProviderID == "" {
			t.Errorf("nodeclaim %s not launched in the same cycle: %+v", c.Name, c.Status)
		}
		if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].Name != f.pool.Name {
			t.Errorf("nodeclaim %s owners = %v, want the pool", c.Name, c.OwnerReferences)
		}
		if c.Labels["fixture"] == "" || c.Spec.Resources.Requests.Cpu().IsZero() || len(c.Spec.Requirements) == 0 {
			t.Errorf("nodeclaim %s lacks template labels, requests or requirements: %+v", c.Name, c.Spec)
		}
		if !hasFinalizer(&c) {
			t.Errorf("nodeclaim %s created without the termination finalizer", c.Name)
		}
	}
	// The pods are nominated: a second batch must not launch for them again.
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again := f.claims(t); len(again) != len(claims) {
		t.Fatalf("second cycle created %d more claims for already-planned pods", len(again)-len(claims))
	}
	if n := len(f.cloud.Instances()); n != len(claims) {
		t.Fatalf("%d instances for %d claims", n, len(claims))
	}
}

// TestProvisionCreatesClaimsTogether: a cycle's claims are written in
// parallel; one the API server refuses (its name is taken) leaves the others
// created, nominated and launched, and its pods are planned again by the
// next cycle.
func TestProvisionCreatesClaimsTogether(t *testing.T) {
	var names []string
	opts := Options{NewName: func(pool string) string {
		names = append(names, fmt.Sprintf("%s-c%d", pool, len(names)+1))
		return names[len(names)-1]
	}}
	f := newFixtureWith(t, 4, "7", opts) // one m5.2xlarge per pod
	taken := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: f.pool.Name + "-c2"}}
	taken.Spec.NodeClassRef = f.pool.Spec.Template.Spec.NodeClassRef
	if err := h.Direct.Create(context.Background(), taken); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	if len(claims) != 3 || len(names) != 4 {
		t.Fatalf("first cycle: %d claims created of %d named %v, want 3 of 4 (the second name is taken)", len(claims), len(names), names)
	}
	for _, c := range claims {
		if c.Name == taken.Name || !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionLaunched) {
			t.Errorf("claim %s: launched %v", c.Name, lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionLaunched))
		}
	}
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if claims = f.claims(t); len(claims) != 4 || len(names) != 5 {
		t.Fatalf("second cycle: %d claims, names %v; want the refused claim's pod planned again on a fifth name", len(claims), names)
	}
	if n := len(f.cloud.Instances()); n != 4 {
		t.Fatalf("%d instances for 4 pods on 4 claims", n)
	}
}

// TestNominatedPodsDoNotHoldTheWindowOpen: after a cycle nominated a burst,
// kube-scheduler keeps re-marking those pods Unschedulable while their
// nodes boot; those events must not stretch the idle window a new pod
// opened.
func TestNominatedPodsDoNotHoldTheWindowOpen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, "1")
	if err := f.p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.cluster.Nominated(podUID(t, f.ns, "p0")); !ok {
		t.Fatal("p0 was not nominated by the cycle")
	}
	f.pendingPod(t, "fresh", "1")
	// The pending pods left would be planned by the next test's cycles.
	t.Cleanup(func() {
		for _, name := range []string{"fresh", "p0", "p1"} {
			_ = h.Direct.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}, client.GracePeriodSeconds(0))
		}
	})
	pc := NewPodController(h.Client, f.cluster, f.p)
	reconcile := func(name string) {
		t.Helper()
		if _, err := pc.Reconcile(ctx, reconcileRequest(f.ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	reconcile("fresh") // opens the window: due 1 s from now
	f.clk.Step(800 * time.Millisecond)
	reconcile("p0") // nominated: re-checked by the cycle, but quietly
	reconcile("p1")
	res, err := f.p.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 200*time.Millisecond {
		t.Fatalf("the window closes %s from now, want 200ms: the nominated pods' events held it open", res.RequeueAfter)
	}
	// A pod that was not planned yet still extends it.
	f.cluster.Forget(podUID(t, f.ns, "p1"))
	f.clk.Step(100 * time.Millisecond)
	if _, err := pc.Reconcile(ctx, reconcileRequest(f.ns, "p1")); err != nil {
		t.Fatal(err)
	}
	if res, _ = f.p.Reconcile(ctx); res.RequeueAfter != time.Second {
		t.Fatalf("after an unplanned pod's event the window closes %s from now, want 1s", res.RequeueAfter)
	}
}

func podUID(t *testing.T, ns, name string) types.UID {
	t.Helper()
	var p corev1.Pod
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return p.UID
}

func reconcileRequest(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func TestProvisionReplansAfterInsufficientCapacity(t *testing.T) {
	f := newFixture(t, 1, "1")
	f.cloud.NextCreateErrs = []error{cloudprovider.NewInsufficientCapacityError(errors.New("every offered pool is out"))}
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	if len(claims) != 1 || !lifecycle.IsTrue(claims[0].Status.Conditions, nsv1.ConditionLaunched) {
		t.Fatalf("want one launched claim after re-planning in the same cycle, got %d: %+v", len(claims), claims)
	}
	if n := len(f.cloud.Calls("Create")); n != 2 {
		t.Fatalf("Create called %d times, want 2 (the failed claim and its replacement)", n)
	}
}

func TestProvisionIgnoresPodsNotMarkedUnschedulable(t *testing.T) {
	f := newFixture(t, 0, "1")
	p := controllertest.Pod(f.ns, "fresh", "1")
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	if err := f.p.Provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.claims(t)); n != 0 {
		t.Fatalf("%d claims for a pod kube-scheduler has not rejected yet", n)
	}
}

func hasFinalizer(c *nsv1.NodeClaim) bool {
	for _, f := range c.Finalizers {
		if f == nsv1.TerminationFinalizer {
			return true
		}
	}
	return false
}
