package disruptor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// setReady writes the node's Ready condition as the kubelet (False) or
// the node lifecycle controller (Unknown) would, turned since.
func (f *fixture) setReady(name string, status corev1.ConditionStatus, since time.Time) {
	f.t.Helper()
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		f.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
	if err := h.Direct.Status().Update(context.Background(), node); err != nil {
		f.t.Fatal(err)
	}
	h.Cached(f.t, node)
}

// repairFixture is a fixture whose controller runs with the NodeRepair gate.
func repairFixture(t *testing.T, mutate func(*nsv1.NodePool)) *fixture {
	f := newFixture(t, mutate)
	f.c.opts.Plan.NodeRepair = true
	return f
}

// TestRepairReplacesANotReadyNodePastItsToleration: Ready=Unknown is
// tolerated 30 minutes; a minute short nothing happens, past it the node is
// replaced at once (no validation wait) whatever the budget (0) and a
// do-not-disrupt pod say: the replacement is created, the claim deleted
// with its termination timestamp at now, and the Repairing Event names the
// condition and how long.
func TestRepairReplacesANotReadyNodePastItsToleration(t *testing.T) {
	f := repairFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0"}} })
	sick := f.node("small", nil)
	p := f.pod(sick, "1")
	base := p.DeepCopy()
	p.Annotations = map[string]string{nsv1.AnnotationDoNotDisrupt: "true"}
	if err := h.Direct.Patch(context.Background(), p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	f.pod(f.node("small", nil), "1500m") // a healthy node with no room for the pod
	f.setReady(sick, corev1.ConditionUnknown, f.clk.Now().Add(-29*time.Minute))

	f.step()
	if f.deleting(sick) {
		t.Fatal("repaired a minute before the 30m toleration ended")
	}
	f.clk.Step(time.Minute)
	f.step()
	cand := f.claim(sick)
	if cand.DeletionTimestamp.IsZero() {
		t.Fatal("a node NotReady for 30m was not repaired")
	}
	if got, want := cand.Annotations[nsv1.AnnotationTerminationTimestamp], f.clk.Now().UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp %q, want now (%s): repair ends the drain at once", got, want)
	}
	repls := cand.Annotations[nsv1.AnnotationDisruptionReplacements]
	if repls == "" {
		t.Fatal("no replacement launched for the pod")
	}
	repl := f.claim(repls)
	if repl.Annotations[nsv1.AnnotationReplacementFor] != cand.Annotations[nsv1.AnnotationDisruptionCommand] {
		t.Errorf("replacement %s is not protected by the command: %v", repls, repl.Annotations)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Repairs.WithLabelValues(f.pool.Name, "Ready=Unknown")); got != 1 {
		t.Errorf("repairs metric %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("Repair", "Unhealthy", "replace")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "Repairing") || !strings.Contains(ev, "Ready=Unknown for 30m0s") || !strings.Contains(ev, "toleration 30m0s") {
		t.Errorf("no Repairing event naming the condition and how long in:\n%s", ev)
	}
}

// TestRepairWaitsWhileMoreThanAFifthOfThePoolIsUnhealthy: two of five
// nodes NotReady past the toleration is more than 20 % (1 of 5): neither
// is repaired and each says why; once one is Ready again, the other is.
func TestRepairWaitsWhileMoreThanAFifthOfThePoolIsUnhealthy(t *testing.T) {
	// The pool consolidates nothing: no voluntary plan awaits validation.
	f := repairFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration("Never") })
	var nodes []string
	for i := 0; i < 5; i++ {
		n := f.node("small", nil)
		f.pod(n, "1500m")
		nodes = append(nodes, n)
	}
	long := f.clk.Now().Add(-time.Hour)
	f.setReady(nodes[0], corev1.ConditionFalse, long)
	f.setReady(nodes[1], corev1.ConditionUnknown, long)

	f.step()
	for _, n := range nodes {
		if f.deleting(n) {
			t.Fatalf("node %s was disrupted while 2 of 5 nodes are unhealthy", n)
		}
	}
	if ev := f.events(); !strings.Contains(ev, "DisruptionBlocked") || !strings.Contains(ev, "2 of nodepool "+f.pool.Name+"'s 5 nodes are unhealthy, more than 20% (1)") {
		t.Errorf("no event saying repair waits for the pool's health in:\n%s", ev)
	}
	f.setReady(nodes[0], corev1.ConditionTrue, f.clk.Now())
	f.clk.Step(10 * time.Second)
	f.step()
	if !f.deleting(nodes[1]) {
		t.Fatal("with 1 of 5 unhealthy, the NotReady node was not repaired")
	}
	if f.deleting(nodes[0]) {
		t.Fatal("the node that is Ready again was disrupted")
	}
}

// TestRepairDoesNotWaitForAPendingPlan: a consolidation awaits its 15 s
// validation when a node's toleration ends; the repair is carried out in
// the next step, not after the validation.
func TestRepairDoesNotWaitForAPendingPlan(t *testing.T) {
	f := repairFixture(t, nil)
	idle := f.node("large", nil) // empty: its emptiness awaits validation
	sick := f.node("small", nil)
	f.pod(sick, "1")
	f.pod(f.node("small", nil), "1500m")
	f.setReady(sick, corev1.ConditionUnknown, f.clk.Now().Add(-30*time.Minute+5*time.Second))
	f.step()
	if f.c.pending == nil || f.deleting(idle) {
		t.Fatal("no voluntary plan awaits validation: the test needs one")
	}
	f.clk.Step(5 * time.Second)
	f.step()
	if !f.deleting(sick) {
		t.Fatal("the repair waited for the pending plan's validation")
	}
	if f.deleting(idle) {
		t.Error("the pending plan was carried out before its validation")
	}
}
