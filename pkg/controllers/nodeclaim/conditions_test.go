package nodeclaim

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// TestDisruptionConditions: an initialized claim of a pool with
// consolidateAfter 5m is not Consolidatable while a pod came 1 minute ago,
// is rechecked when the 5 minutes are up and is Consolidatable then; a
// change to the pool's template makes it Drifted, with the reason; a pod
// event takes Consolidatable away again; the interruption handler's
// condition written meanwhile survives every write.
func TestDisruptionConditions(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	pool := controllertest.NodePool(uniq("cond"))
	pool.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("5m")
	if err := h.Direct.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	claim := controllertest.NodeClaim(uniq("cond"), pool.Name)
	claim.Annotations = map[string]string{nsv1.AnnotationNodePoolHash: pool.Hash(), nsv1.AnnotationNodePoolHashVersion: nsv1.NodePoolHashVersion}
	create(t, claim)
	at := metav1.NewTime(clk.Now().Add(-10 * time.Minute))
	for _, c := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
		lifecycle.SetCondition(&claim.Status.Conditions, lifecycle.Condition(c, true, "", ""), 1, at)
	}
	claim.Status.LastPodEventTime = metav1.NewTime(clk.Now().Add(-time.Minute))
	if err := h.Direct.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)

	c := NewConditions(h.Client, clk, false)
	step := func() reconcile.Result {
		t.Helper()
		res, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: claim.Name}})
		if err != nil {
			t.Fatal(err)
		}
		h.Cached(t, get(t, claim.Name))
		return res
	}
	has := func(typ string) *metav1.Condition {
		return meta.FindStatusCondition(get(t, claim.Name).Status.Conditions, typ)
	}

	if res := step(); res.RequeueAfter != 4*time.Minute {
		t.Errorf("requeue after %v, want 4m (consolidateAfter 5m, the last pod a minute ago)", res.RequeueAfter)
	}
	if c := has(nsv1.ConditionConsolidatable); c != nil {
		t.Fatalf("Consolidatable %+v a minute after a pod event", *c)
	}
	clk.Step(4 * time.Minute)
	if res := step(); res.RequeueAfter != 0 {
		t.Errorf("requeue after %v once consolidatable, want none", res.RequeueAfter)
	}
	if c := has(nsv1.ConditionConsolidatable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Consolidatable %+v once consolidateAfter passed, want True", c)
	}
	if c := has(nsv1.ConditionDrifted); c != nil {
		t.Fatalf("Drifted %+v before anything changed", *c)
	}

	// Another writer's condition, then a template change.
	cur := get(t, claim.Name)
	lifecycle.SetCondition(&cur.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
		Reason: nsv1.DisruptingReasonRebalanceRecommendation, Message: "notice"}, 1, metav1.NewTime(clk.Now()))
	if err := h.Direct.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, cur)
	base := pool.DeepCopy()
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"}
	if err := h.Direct.Patch(ctx, pool, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pool)
	// The pool's change reaches the claim through the controller's watch.
	watch := c.Controller().Watches[0]
	if _, ok := watch.Object.(*nsv1.NodePool); !ok {
		t.Fatalf("first watch is of %T, want NodePool", watch.Object)
	}
	if reqs := watch.Map(ctx, pool); len(reqs) != 1 || reqs[0].Name != claim.Name {
		t.Fatalf("the pool's change enqueues %v, want its one claim %s", reqs, claim.Name)
	}
	if reqs := watch.Map(ctx, pool); len(reqs) != 0 {
		t.Fatalf("the pool again with the same spec (a status write) enqueues %v, want nothing", reqs)
	}
	step()
	if c := has(nsv1.ConditionDrifted); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "NodePoolDrifted" {
		t.Fatalf("Drifted %+v after the template changed, want True, NodePoolDrifted", c)
	}
	if has(nsv1.ConditionDisrupting) == nil {
		t.Fatal("the Disrupting condition another controller wrote was erased")
	}

	// A pod arrives: no longer consolidatable, still drifted.
	cur = get(t, claim.Name)
	cur.Status.LastPodEventTime = metav1.NewTime(clk.Now())
	if err := h.Direct.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, cur)
	if res := step(); res.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue after %v after a pod event, want 5m", res.RequeueAfter)
	}
	if c := has(nsv1.ConditionConsolidatable); c != nil {
		t.Errorf("Consolidatable %+v right after a pod event", *c)
	}
	if has(nsv1.ConditionDrifted) == nil || has(nsv1.ConditionDisrupting) == nil {
		t.Errorf("conditions after the pod event: %+v", get(t, claim.Name).Status.Conditions)
	}
}
