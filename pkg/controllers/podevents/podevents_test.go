package podevents

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

var seq int

func uniq(p string) string {
	seq++
	return fmt.Sprintf("%s-%d-%d", p, time.Now().UnixNano()%100000, seq)
}

type fixture struct {
	clk   *clocktesting.FakeClock
	claim *nsv1.NodeClaim
	node  string
	ns    string
}

// newFixture creates a registered claim, its node and a namespace.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clk: clocktesting.NewFakeClock(time.Now().Truncate(time.Second)), ns: uniq("ns")}
	if err := h.Direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	f.node = uniq("node")
	if err := h.Direct.Create(ctx, controllertest.Node(f.node, "fake:///"+f.node, "4")); err != nil {
		t.Fatal(err)
	}
	claim := controllertest.NodeClaim(uniq("claim"), "pool")
	if err := h.Direct.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status.NodeName = f.node
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	f.claim = claim
	return f
}

func (f *fixture) pod(t *testing.T, name string, daemon bool) *corev1.Pod {
	t.Helper()
	p := controllertest.Pod(f.ns, name, "100m")
	p.Spec.NodeName = f.node
	if daemon {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: &yes}}
	}
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	return p
}

func (f *fixture) deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := h.Direct.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "cache drops the pod", func() error {
		err := h.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{})
		if err == nil {
			return fmt.Errorf("still cached")
		}
		return client.IgnoreNotFound(err)
	})
}

// reconcile runs c on the fixture's claim and returns the claim as the API
// server has it (read directly, not through the cache the controller used).
func (f *fixture) reconcile(t *testing.T, c *Controller) (reconcile.Result, *nsv1.NodeClaim) {
	t.Helper()
	res, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.claim.Name}})
	if err != nil {
		t.Fatal(err)
	}
	got := &nsv1.NodeClaim{}
	if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.claim), got); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, got)
	return res, got
}

func TestPodEvents(t *testing.T) {
	f := newFixture(t)
	c := New(h.Client, f.clk)

	// First sight of an empty node: no pod event, the pod set is recorded.
	_, got := f.reconcile(t, c)
	if !got.Status.LastPodEventTime.IsZero() || got.Annotations[nsv1.AnnotationPodSet] == "" {
		t.Fatalf("first sight: lastPodEventTime %v, pod set %q", got.Status.LastPodEventTime, got.Annotations[nsv1.AnnotationPodSet])
	}

	// A DaemonSet pod is no workload: no event.
	f.pod(t, "agent", true)
	f.clk.Step(time.Minute)
	if _, got = f.reconcile(t, c); !got.Status.LastPodEventTime.IsZero() {
		t.Fatalf("a DaemonSet pod stamped %v", got.Status.LastPodEventTime)
	}

	// A workload pod binds: stamped now.
	web := f.pod(t, "web", false)
	f.clk.Step(time.Minute)
	bound := f.clk.Now()
	if _, got = f.reconcile(t, c); !got.Status.LastPodEventTime.Time.Equal(bound) {
		t.Fatalf("bind stamped %v, want %v", got.Status.LastPodEventTime, bound)
	}

	// Nothing changed: nothing is written.
	f.clk.Step(time.Minute)
	if _, got = f.reconcile(t, c); !got.Status.LastPodEventTime.Time.Equal(bound) {
		t.Fatalf("an unchanged pod set restamped %v", got.Status.LastPodEventTime)
	}

	// A second pod within Dedupe of the last stamp waits for the window.
	f.clk.Step(time.Minute)
	second := f.clk.Now()
	f.pod(t, "web-2", false)
	if _, got = f.reconcile(t, c); !got.Status.LastPodEventTime.Time.Equal(second) {
		t.Fatalf("second bind stamped %v, want %v", got.Status.LastPodEventTime, second)
	}
	f.clk.Step(2 * time.Second)
	worker := f.pod(t, "worker", false)
	res, got := f.reconcile(t, c)
	if res.RequeueAfter != Dedupe-2*time.Second || !got.Status.LastPodEventTime.Time.Equal(second) {
		t.Fatalf("within the dedupe window: requeue %v, stamp %v", res.RequeueAfter, got.Status.LastPodEventTime)
	}
	f.clk.Step(res.RequeueAfter)
	if _, got = f.reconcile(t, c); !got.Status.LastPodEventTime.Time.Equal(f.clk.Now()) {
		t.Fatalf("after the window: stamp %v, want %v", got.Status.LastPodEventTime, f.clk.Now())
	}

	// A leader change: a new controller, with no memory, sees pods leave
	// while it was not running, and stamps the emptying.
	f.deletePod(t, web)
	f.deletePod(t, worker)
	f.clk.Step(time.Hour)
	successor := New(h.Client, f.clk)
	if _, got = f.reconcile(t, successor); !got.Status.LastPodEventTime.Time.Equal(f.clk.Now()) {
		t.Fatalf("the successor stamped %v, want %v", got.Status.LastPodEventTime, f.clk.Now())
	}
}

func TestDeclaration(t *testing.T) {
	d := New(h.Client, clocktesting.NewFakeClock(time.Now())).Declaration()
	registered := &nsv1.NodeClaim{Status: nsv1.NodeClaimStatus{NodeName: "n"}}
	unbound := &corev1.Pod{}
	tests := []struct {
		name string
		ok   bool
	}{
		{name: "registered claims are reconciled", ok: d.ForPredicate(registered)},
		{name: "unregistered claims are not", ok: !d.ForPredicate(&nsv1.NodeClaim{})},
		{name: "unbound pods are not watched", ok: len(d.Watches) == 1 && !d.Watches[0].Predicate(unbound)},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: declaration %+v", tt.name, d)
		}
	}
}

func TestFingerprint(t *testing.T) {
	pod := func(uid string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
		for _, o := range opts {
			o(p)
		}
		return p
	}
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	terminating := func(p *corev1.Pod) { ts := metav1.Now(); p.DeletionTimestamp = &ts }
	a, na := Fingerprint([]*corev1.Pod{pod("a"), pod("b")})
	b, nb := Fingerprint([]*corev1.Pod{pod("b"), pod("a"), pod("c", finished), pod("d", terminating)})
	c, _ := Fingerprint([]*corev1.Pod{pod("a")})
	if a != b || na != 2 || nb != 2 {
		t.Errorf("order, finished and terminating pods changed the fingerprint: %s/%d vs %s/%d", a, na, b, nb)
	}
	if a == c {
		t.Errorf("a pod leaving did not change the fingerprint")
	}
}
