package disruptor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// startReturn makes an on-demand node that fell back from spot and runs
// the controller until its return to spot has started; it returns the
// fixture, the node and the spot replacement claim.
func startReturn(t *testing.T) (*fixture, string, *nsv1.NodeClaim) {
	f := newFixture(t, nil)
	n := f.node("large", nil)
	claim := f.claim(n)
	base := claim.DeepCopy()
	claim.Annotations[nsv1.AnnotationSpotFallback] = f.clk.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if err := h.Direct.Patch(context.Background(), claim, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	f.pod(n, "500m")
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	cand := f.claim(n)
	cmd := cand.Annotations[nsv1.AnnotationDisruptionCommand]
	if cmd == "" || cand.Annotations[nsv1.AnnotationDisruptionReason] != string(nsv1.DisruptionReasonReturnToSpot) {
		t.Fatalf("candidate not marked for ReturnToSpot: %v", cand.Annotations)
	}
	var repl *nsv1.NodeClaim
	for _, c := range f.claimsOfPool() {
		if c.Annotations[nsv1.AnnotationReplacementFor] == cmd {
			c := c
			repl = &c
		}
	}
	if repl == nil {
		t.Fatalf("no replacement claim for command %s", cmd)
	}
	for _, r := range repl.Spec.Requirements {
		if r.Key == nsv1.LabelCapacityType && (len(r.Values) != 1 || r.Values[0] != nsv1.CapacityTypeSpot) {
			t.Fatalf("replacement capacity types %v, want spot only", r.Values)
		}
	}
	f.settle()
	return f, n, repl
}

func TestAReturnToSpotReplacesTheNodeAndSaysSo(t *testing.T) {
	f, n, repl := startReturn(t)
	node := controllertest.Node(repl.Name, "fake:///zone-a/"+repl.Name, "2")
	node.Labels[nsv1.LabelNodePool] = f.pool.Name
	if err := h.Direct.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	f.nodes = append(f.nodes, node.Name)
	repl.Status.NodeName, repl.Status.ProviderID = node.Name, node.Spec.ProviderID
	repl.Status.InstanceType, repl.Status.Zone, repl.Status.CapacityType = "small", "zone-a", nsv1.CapacityTypeSpot
	lifecycle.SetCondition(&repl.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(f.clk.Now()))
	if err := h.Direct.Status().Update(context.Background(), repl); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, repl)
	h.Cached(t, node)
	f.step()
	if !f.deleting(n) {
		t.Fatal("the fallback node was not deleted once its spot replacement initialized")
	}
	if got := testutil.ToFloat64(f.m.Disruption.ReturnsToSpot.WithLabelValues(f.pool.Name, metrics.OutcomeReturned)); got != 1 {
		t.Errorf("returns-to-spot metric (returned) %v, want 1", got)
	}
	if got := testutil.ToFloat64(f.m.Disruption.Decisions.WithLabelValues("ReturnToSpot", "ReturnToSpot", "replace")); got != 1 {
		t.Errorf("decisions metric %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "ReturnedToSpot") {
		t.Errorf("no ReturnedToSpot event in:\n%s", ev)
	}
}

func TestAFailedReturnToSpotBacksOff(t *testing.T) {
	f, n, repl := startReturn(t)
	// The spot launch ran out of capacity: the launcher deleted the claim.
	if err := h.Direct.Delete(context.Background(), repl); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.step()
	cand := f.claim(n)
	if !cand.DeletionTimestamp.IsZero() || cand.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
		t.Fatalf("candidate after the failed return: deleting=%v annotations %v", !cand.DeletionTimestamp.IsZero(), cand.Annotations)
	}
	if got := cand.Annotations[nsv1.AnnotationReturnToSpotAttempts]; got != "1" {
		t.Errorf("attempts %q, want 1", got)
	}
	next, err := time.Parse(time.RFC3339, cand.Annotations[nsv1.AnnotationReturnToSpotNotBefore])
	if want := f.clk.Now().Add(time.Minute).UTC().Truncate(time.Second); err != nil || !next.Equal(want) {
		t.Errorf("not before %v (%v), want %s", next, err, want)
	}
	if got := testutil.ToFloat64(f.m.Disruption.ReturnsToSpot.WithLabelValues(f.pool.Name, metrics.OutcomeFailed)); got != 1 {
		t.Errorf("returns-to-spot metric (failed) %v, want 1", got)
	}
	if ev := f.events(); !strings.Contains(ev, "ReturnToSpotBackoff") {
		t.Errorf("no ReturnToSpotBackoff event in:\n%s", ev)
	}
	// Within the backoff (a minute) neither the return nor consolidation
	// tries again.
	h.Cached(t, cand)
	f.clk.Step(30 * time.Second)
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if c := f.claim(n); c.Annotations[nsv1.AnnotationDisruptionCommand] != "" {
		t.Fatalf("a new disruption started within the backoff: %v", c.Annotations)
	}
	// After it, the return is tried again.
	f.clk.Step(time.Minute)
	f.step()
	f.clk.Step(DefaultValidationDelay)
	f.step()
	if c := f.claim(n); c.Annotations[nsv1.AnnotationDisruptionReason] != string(nsv1.DisruptionReasonReturnToSpot) {
		t.Fatalf("no return to spot after the backoff: %v", c.Annotations)
	}
}
