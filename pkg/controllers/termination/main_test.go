package termination

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

type fixture struct {
	c     *Controller
	cloud *fake.CloudProvider
	clk   *clocktesting.FakeClock
	ns    string
	claim *nsv1.NodeClaim
	node  *corev1.Node
	m     *metrics.Metrics
}

var seq int

func uniq(p string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", p, time.Now().UnixNano()%100000, seq)
}

// newFixture launches an instance in the fake cloud and creates its claim
// (finalizer on, status filled) and its registered Node, in a fresh namespace.
func newFixture(t *testing.T, tgp *time.Duration) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{cloud: fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "zone-a")), clk: clocktesting.NewFakeClock(time.Now())}
	rec, _ := controllertest.Recorder(f.clk)
	f.m = controllertest.Metrics()
	f.c = New(h.Client, f.cloud, f.clk, rec, f.m)
	f.ns = uniq("ns")
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	claim := controllertest.NodeClaim(uniq("term"), "pool-a")
	claim.Finalizers = []string{nsv1.TerminationFinalizer}
	if tgp != nil {
		claim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *tgp}
	}
	created, err := f.cloud.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Direct.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	node := controllertest.Node(uniq("node"), created.Status.ProviderID, "2")
	node.Finalizers = []string{nsv1.TerminationFinalizer}
	if err := h.Direct.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	claim.Status = created.Status
	claim.Status.NodeName = node.Name
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	h.Cached(t, node)
	f.claim, f.node = claim, node
	return f
}

// pod creates a pod bound to the fixture's node.
func (f *fixture) pod(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := controllertest.Pod(f.ns, name, "100m")
	p.Spec.NodeName = f.node.Name
	if mutate != nil {
		mutate(p)
	}
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	h.Cached(t, p)
	return p
}

func (f *fixture) deleteClaim(t *testing.T) {
	t.Helper()
	if err := h.Direct.Delete(context.Background(), f.claim); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "cache sees the deletion", func() error {
		c := &nsv1.NodeClaim{}
		if err := h.Client.Get(context.Background(), client.ObjectKeyFromObject(f.claim), c); err != nil {
			return err
		}
		if c.DeletionTimestamp.IsZero() {
			return fmt.Errorf("not deleting yet")
		}
		return nil
	})
}

func (f *fixture) reconcile(t *testing.T) reconcile.Result {
	t.Helper()
	res, err := f.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.claim.Name}})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	// A requeue comes seconds later, when the cache has the step's own
	// writes (the taint); reconciling again at once would patch the node
	// from a stale copy and lose the optimistic lock.
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.node), node); err == nil {
		h.Cached(t, node)
	}
	return res
}

// kubelet plays the kubelet for terminating pods: they go away at once.
// It returns the names of the pods it removed.
func (f *fixture) kubelet(t *testing.T) []string {
	t.Helper()
	var pods corev1.PodList
	if err := h.Direct.List(context.Background(), &pods, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := h.Direct.Delete(context.Background(), p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		gone = append(gone, p.Name)
	}
	controllertest.Eventually(t, "cache drops deleted pods", func() error {
		for _, n := range gone {
			err := h.Client.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: n}, &corev1.Pod{})
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil {
				return fmt.Errorf("pod %s still cached", n)
			}
		}
		return nil
	})
	return gone
}

func (f *fixture) claimGone(t *testing.T) bool {
	t.Helper()
	err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.claim), &nsv1.NodeClaim{})
	return client.IgnoreNotFound(err) == nil && err != nil
}
