package staticpool

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider/fake"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
)

var h *controllertest.Harness

func TestMain(m *testing.M) {
	os.Exit(controllertest.Main(m, func(harness *controllertest.Harness) { h = harness }))
}

func staticPool(t *testing.T, name string, replicas int64, nodeLimit int64) *nsv1.NodePool {
	t.Helper()
	p := controllertest.NodePool(name)
	p.Spec.Replicas = &replicas
	if nodeLimit > 0 {
		p.Spec.Limits = nsv1.Limits{nsv1.ResourceNodes: *resource.NewQuantity(nodeLimit, resource.DecimalSI)}
	}
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	return p
}

func reconcileOnce(t *testing.T, c *Controller, pool string) {
	t.Helper()
	if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}}); err != nil {
		t.Fatal(err)
	}
}

func liveClaims(t *testing.T, pool string) []nsv1.NodeClaim {
	t.Helper()
	var list nsv1.NodeClaimList
	if err := h.Direct.List(context.Background(), &list, client.MatchingLabels{nsv1.LabelNodePool: pool}); err != nil {
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

func condition(t *testing.T, pool string) *metav1.Condition {
	t.Helper()
	got := &nsv1.NodePool{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: pool}, got); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(got.Status.Conditions, nsv1.ConditionReplicasSatisfied)
}

func newController() (*Controller, *fake.CloudProvider) {
	cloud := fake.New(fake.InstanceType("m5.large", 2, 8, 0.096, "us-east-1a"), fake.InstanceType("m5.xlarge", 4, 16, 0.192, "us-east-1a"))
	rec, _ := controllertest.Recorder(clock.RealClock{})
	return New(h.Client, cloud, clock.RealClock{}, rec, controllertest.Metrics(), Options{}), cloud
}

// The controller launches a static pool up to its replicas once, even when
// it reconciles again before the cache shows its claims; scaling down
// deletes the claims with the fewest pods.
func TestScaleUpAndDown(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("static-%d", time.Now().UnixNano()%100000)
	pool := staticPool(t, name, 3, 0)
	c, _ := newController()
	reconcileOnce(t, c, name)
	reconcileOnce(t, c, name) // before the cache shows the claims: no second launch
	claims := liveClaims(t, name)
	if len(claims) != 3 {
		t.Fatalf("%d claims after scaling up, want 3", len(claims))
	}
	for _, cl := range claims {
		if !strings.HasPrefix(cl.Name, name+"-") || cl.Annotations[nsv1.AnnotationNodePoolHash] == "" || len(cl.OwnerReferences) != 1 {
			t.Errorf("claim %s: want a claim of the pool, hashed and owned by it: %+v", cl.Name, cl.ObjectMeta)
		}
	}
	controllertest.Eventually(t, "cache shows 3 claims", func() error {
		var list nsv1.NodeClaimList
		if err := h.Client.List(ctx, &list, client.MatchingLabels{nsv1.LabelNodePool: name}); err != nil || len(list.Items) != 3 {
			return fmt.Errorf("%d claims cached (%v)", len(list.Items), err)
		}
		return nil
	})
	reconcileOnce(t, c, name)
	if cond := condition(t, name); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("ReplicasSatisfied %+v, want True at 3 of 3", cond)
	}

	// Give two claims nodes with pods; scaling to 2 removes the third,
	// which runs none.
	for i, cl := range claims[:2] {
		node := fmt.Sprintf("%s-node-%d", name, i)
		cl.Status.NodeName = node
		if err := h.Direct.Status().Update(ctx, &cl); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, &cl)
		p := controllertest.Pod("default", fmt.Sprintf("%s-pod-%d", name, i), "100m")
		p.Spec.NodeName = node
		if err := h.Direct.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		h.Cached(t, p)
	}
	base := pool.DeepCopy()
	two := int64(2)
	pool.Spec.Replicas = &two
	if err := h.Direct.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	reconcileOnce(t, c, name)
	reconcileOnce(t, c, name) // no second deletion before the cache shows the first
	left := liveClaims(t, name)
	if len(left) != 2 {
		t.Fatalf("%d claims after scaling to 2, want 2", len(left))
	}
	for _, cl := range left {
		if cl.Name == claims[2].Name {
			t.Errorf("scale-down kept %s, the claim without pods, and removed one with a pod", cl.Name)
		}
	}
}

// replicas above limits.nodes: the pool launches up to the limit and says
// why it stops there.
func TestNodeLimit(t *testing.T) {
	name := fmt.Sprintf("limited-%d", time.Now().UnixNano()%100000)
	staticPool(t, name, 5, 2)
	c, _ := newController()
	reconcileOnce(t, c, name)
	if n := len(liveClaims(t, name)); n != 2 {
		t.Fatalf("%d claims, want 2 (limits.nodes)", n)
	}
	cond := condition(t, name)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "NodeLimitExceeded" || !strings.Contains(cond.Message, "limits.nodes is 2") {
		t.Fatalf("ReplicasSatisfied %+v, want False NodeLimitExceeded naming the limit", cond)
	}
}

// A dynamic pool is none of this controller's business.
func TestDynamicPoolUntouched(t *testing.T) {
	name := fmt.Sprintf("dynamic-%d", time.Now().UnixNano()%100000)
	p := controllertest.NodePool(name)
	if err := h.Direct.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	c, _ := newController()
	reconcileOnce(t, c, name)
	if n := len(liveClaims(t, name)); n != 0 || condition(t, name) != nil {
		t.Fatalf("%d claims and a ReplicasSatisfied condition on a dynamic pool", n)
	}
}

// The API server refuses what a static pool may not have.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano() % 100000)
	three := int64(3)
	var w int32 = 10
	tests := []struct {
		name   string
		mutate func(*nsv1.NodePool)
		want   string
	}{
		{name: "cpu limit", mutate: func(p *nsv1.NodePool) {
			p.Spec.Limits = nsv1.Limits{corev1.ResourceCPU: resource.MustParse("10"), nsv1.ResourceNodes: resource.MustParse("5")}
		}, want: "may only limit nodes: remove cpu"},
		{name: "weight", mutate: func(p *nsv1.NodePool) { p.Spec.Weight = &w }, want: "has no weight"},
		{name: "negative", mutate: func(p *nsv1.NodePool) { n := int64(-1); p.Spec.Replicas = &n }, want: "spec.replicas"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := controllertest.NodePool(fmt.Sprintf("invalid-%s-%d", suffix, i))
			p.Spec.Replicas = &three
			tt.mutate(p)
			err := h.Direct.Create(ctx, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("create: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// replicas cannot be removed, nor added to a dynamic pool.
	static := staticPool(t, "switch-static-"+suffix, 1, 0)
	base := static.DeepCopy()
	static.Spec.Replicas = nil
	if err := h.Direct.Patch(ctx, static, client.MergeFrom(base)); err == nil || !strings.Contains(err.Error(), "replicas cannot be added to or removed from") {
		t.Errorf("removing replicas: %v", err)
	}
	dynamic := controllertest.NodePool("switch-dynamic-" + suffix)
	if err := h.Direct.Create(ctx, dynamic); err != nil {
		t.Fatal(err)
	}
	base = dynamic.DeepCopy()
	dynamic.Spec.Replicas = &three
	if err := h.Direct.Patch(ctx, dynamic, client.MergeFrom(base)); err == nil || !strings.Contains(err.Error(), "replicas cannot be added to or removed from") {
		t.Errorf("adding replicas: %v", err)
	}
}

// kubectl scale nodepool goes through the scale subresource: it reads the
// pool's nodes and sets spec.replicas.
func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	name := fmt.Sprintf("scaled-%d", time.Now().UnixNano()%100000)
	pool := staticPool(t, name, 2, 0)
	scale := &autoscalingv1.Scale{}
	if err := h.Direct.SubResource("scale").Get(ctx, pool, scale); err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if scale.Spec.Replicas != 2 {
		t.Fatalf("scale spec.replicas %d, want 2", scale.Spec.Replicas)
	}
	scale.Spec.Replicas = 4
	if err := h.Direct.SubResource("scale").Update(ctx, pool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling: %v", err)
	}
	got := &nsv1.NodePool{}
	if err := h.Direct.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 4 {
		t.Fatalf("spec.replicas %v after scaling to 4", got.Spec.Replicas)
	}
}
