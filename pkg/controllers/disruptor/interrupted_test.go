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
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// markSpot marks a claim as the interruption queue does for a spot
// interruption warning: the Disrupting condition, the deadline.
func (f *fixture) markSpot(name string, deadline time.Time) {
	f.t.Helper()
	ctx := context.Background()
	c := f.claim(name)
	base := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[nsv1.AnnotationDisruptionDeadline] = deadline.UTC().Format(time.RFC3339)
	if err := h.Direct.Patch(ctx, c, client.MergeFrom(base)); err != nil {
		f.t.Fatal(err)
	}
	lifecycle.SetCondition(&c.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
		Reason: nsv1.DisruptingReasonSpotInterruption, Message: "spot interruption warning"}, 1, metav1.NewTime(f.clk.Now()))
	if err := h.Direct.Status().Update(ctx, c); err != nil {
		f.t.Fatal(err)
	}
	h.Cached(f.t, c)
}

// TestInterruptionIsCarriedOutAtOnce: a marked node is planned and its
// command started in the first step, without the validation wait and
// whatever the budget (0 here) or a do-not-disrupt pod say.
func TestInterruptionIsCarriedOutAtOnce(t *testing.T) {
	f := newFixture(t, func(p *nsv1.NodePool) { p.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "0"}} })
	n := f.node("small", nil)
	p := f.pod(n, "1")
	base := p.DeepCopy()
	p.Annotations = map[string]string{nsv1.AnnotationDoNotDisrupt: "true"}
	if err := h.Direct.Patch(context.Background(), p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, p)
	f.markSpot(n, f.clk.Now().Add(2*time.Minute))
	f.step()
	cand := f.claim(n)
	repls := cand.Annotations[nsv1.AnnotationDisruptionReplacements]
	if cand.Annotations[nsv1.AnnotationDisruptionCommand] == "" || repls == "" || !cand.DeletionTimestamp.IsZero() {
		t.Fatalf("no command started at once, or deleted before its replacement: deleting=%v %v", !cand.DeletionTimestamp.IsZero(), cand.Annotations)
	}
	if got := cand.Annotations[nsv1.AnnotationDisruptionReason]; got != string(nsv1.DisruptionReasonInterrupted) {
		t.Errorf("command reason %q, want Interrupted", got)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("Interruption", "Interrupted", "replace")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "ReplacementPlanned") || !strings.Contains(ev, "1 on "+repls) {
		t.Errorf("no ReplacementPlanned event naming the replacement in:\n%s", ev)
	}
}

// TestInterruptedCommandReleasedWhenItsReplacementFails: the replacement is
// removed before it initialized; the command is released (the mark and
// taint stay: the node still goes) and the next plan launches another.
func TestInterruptedCommandReleasedWhenItsReplacementFails(t *testing.T) {
	f := newFixture(t, nil)
	n := f.node("small", nil)
	f.pod(n, "1")
	f.markSpot(n, f.clk.Now().Add(2*time.Minute))
	f.step()
	first := f.claim(n).Annotations[nsv1.AnnotationDisruptionReplacements]
	if first == "" {
		t.Fatal("no command started")
	}
	if err := h.Direct.Delete(context.Background(), &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: first}}); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.step()
	cand := f.claim(n)
	if !cand.DeletionTimestamp.IsZero() {
		t.Fatal("the candidate was deleted although its deadline is 2 minutes away")
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: n}, node); err != nil {
		t.Fatal(err)
	}
	if !tainted(node) {
		t.Error("releasing the command took the interruption's taint off")
	}
	if ev := f.events(); !strings.Contains(ev, "planning its replacement again") {
		t.Errorf("no event saying the replacement is planned again in:\n%s", ev)
	}
	// Once the cache shows the release, the next plan launches another
	// replacement.
	f.settle()
	f.clk.Step(10 * time.Second)
	f.step()
	second := f.claim(n).Annotations[nsv1.AnnotationDisruptionReplacements]
	if second == "" || second == first {
		t.Fatalf("no new replacement after the release: %q (first %q)", second, first)
	}
}

// TestUnregisteredInterruptedClaimIsDeleted: a claim marked before its
// Node registered has nothing to move: it is deleted in the next step.
func TestUnregisteredInterruptedClaimIsDeleted(t *testing.T) {
	f := newFixture(t, nil)
	name := uniq(f.pool.Name)
	c := controllertest.NodeClaim(name, f.pool.Name)
	if err := h.Direct.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, c)
	f.markSpot(name, f.clk.Now().Add(2*time.Minute))
	f.step()
	if err := h.Direct.Get(context.Background(), client.ObjectKey{Name: name}, &nsv1.NodeClaim{}); err == nil && !f.deleting(name) {
		t.Fatal("an interrupted claim without a Node was not deleted")
	}
}
