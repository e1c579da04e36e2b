package interruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/interruption"
)

// interrupted reclaims the fixture's instance in the simulated AWS and runs
// the queue step.
func (e *env) interrupt(in string) {
	e.t.Helper()
	if err := e.world.Interrupt(in); err != nil {
		e.t.Fatal(err)
	}
	e.step()
}

func deleting(t *testing.T, e *env, c *nsv1.NodeClaim) bool {
	t.Helper()
	return !e.get(c).DeletionTimestamp.IsZero()
}

// TestDrainWaitsForTheReplacement: a warned node is not drained while its
// pods have nowhere to go, and is drained as soon as their replacement is
// ready — long before the deadline — with the termination timestamp at the
// instance's end.
func TestDrainWaitsForTheReplacement(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 2)
	e.interrupt(in.ID)
	e.woken = nil

	if after := e.decide(f); deleting(t, e, f.claim) || after <= 0 {
		t.Fatalf("drained with no replacement planned (requeue %v)", after)
	}
	if len(e.woken) == 0 {
		t.Fatal("pods without a planned place did not wake the provisioner")
	}
	repl := e.replacement(f, false)
	e.clk.Step(20 * time.Second)
	e.decide(f)
	if deleting(t, e, f.claim) {
		t.Fatal("drained while the replacement is still booting")
	}
	if testutil.CollectAndCount(e.m.Interruption.ReplacementLatency) != 1 {
		t.Error("no replacement latency observed once the pods were planned")
	}
	e.clk.Step(10 * time.Second)
	e.replacementReady(repl)
	e.decide(f)
	claim := e.get(f.claim)
	if claim.DeletionTimestamp.IsZero() {
		t.Fatal("not drained once the replacement was ready")
	}
	if got, want := claim.Annotations[nsv1.AnnotationTerminationTimestamp], claim.Annotations[nsv1.AnnotationDisruptionDeadline]; got != want || got == "" {
		t.Errorf("termination timestamp %q, want the deadline %q", got, want)
	}
	if !strings.Contains(strings.Join(e.drainEvents(), "\n"), "replacement capacity ready for its 2 pods") {
		t.Error("no drain event saying why")
	}
	// The termination controller evicts the pods; the drain latency is
	// observed once they are gone.
	for _, p := range f.pods {
		if err := h.Direct.Delete(e.ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Eventually(t, "the cache drops the pods", func() error {
		var pods corev1.PodList
		if err := h.Client.List(e.ctx, &pods, client.InNamespace(f.ns)); err != nil {
			return err
		}
		if len(pods.Items) > 1 {
			return errNotYet
		}
		return nil
	})
	e.decide(f)
	if testutil.CollectAndCount(e.m.Interruption.DrainLatency) != 1 {
		t.Error("no drain latency observed")
	}
}

// TestDeadlineForcesTheDrain: with no replacement, the node is drained when
// the deadline minus the longest grace period (30 s) arrives.
func TestDeadlineForcesTheDrain(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	e.interrupt(in.ID)
	after := e.decide(f)
	if deleting(t, e, f.claim) {
		t.Fatal("drained at once")
	}
	e.clk.Step(89 * time.Second)
	if after = e.decide(f); deleting(t, e, f.claim) || after > time.Second {
		t.Fatalf("drained early, or next look in %v rather than at the drain time", after)
	}
	e.clk.Step(time.Second)
	e.decide(f)
	if !deleting(t, e, f.claim) {
		t.Fatal("not drained at deadline minus grace")
	}
}

// TestRebalanceModes: off records an Event only; prespin plans the
// replacement and holds it without draining; drain drains once the
// replacement is ready and the budget allows.
func TestRebalanceModes(t *testing.T) {
	tests := []struct {
		mode        interruption.RebalanceMode
		budget      string
		notReady    bool // another of the pool's nodes is not Ready
		wantMarked  bool
		wantDrained bool
		wantEvent   string
	}{
		{mode: interruption.RebalanceOff, wantEvent: "no action (rebalance mode off)"},
		{mode: interruption.RebalancePrespin, wantMarked: true, wantEvent: "rebalance mode prespin"},
		{mode: interruption.RebalanceDrain, wantMarked: true, wantDrained: true, wantEvent: "rebalance mode drain"},
		{mode: interruption.RebalanceDrain, budget: "0", wantMarked: true, wantEvent: "budget allows no more Rebalance"},
		// A node not Ready uses up the budget, as the planner counts it.
		{mode: interruption.RebalanceDrain, budget: "1", notReady: true, wantMarked: true, wantEvent: "budget allows no more Rebalance"},
	}
	for _, tt := range tests {
		name := string(tt.mode) + tt.budget
		if tt.notReady {
			name += "-notready"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, withMode(tt.mode))
			if tt.budget != "" {
				pool := &nsv1.NodePool{}
				if err := h.Direct.Get(e.ctx, client.ObjectKey{Name: e.pool}, pool); err != nil {
					t.Fatal(err)
				}
				pool.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: tt.budget, Reasons: []nsv1.DisruptionReason{nsv1.DisruptionReasonRebalance}}}
				if err := h.Direct.Update(e.ctx, pool); err != nil {
					t.Fatal(err)
				}
				h.Cached(t, pool)
			}
			in := e.launchSpot()
			f := e.claimFor(in, 1)
			if tt.notReady {
				peer := e.claimFor(e.launchSpot(), 0)
				h.SetNodeReady(t, peer.node, corev1.ConditionFalse)
			}
			if err := e.world.Rebalance(in.ID); err != nil {
				t.Fatal(err)
			}
			e.step()
			if vis, inflight := e.depth(); vis+inflight != 0 {
				t.Fatalf("queue holds %d + %d messages", vis, inflight)
			}
			c := meta.FindStatusCondition(e.get(f.claim).Status.Conditions, nsv1.ConditionDisrupting)
			if marked := c != nil && c.Reason == nsv1.DisruptingReasonRebalanceRecommendation; marked != tt.wantMarked {
				t.Fatalf("marked = %v (%+v), want %v", marked, c, tt.wantMarked)
			}
			if tt.wantMarked {
				e.replacement(f, true)
				e.woken = nil
				e.decide(f)
				if tt.mode == interruption.RebalancePrespin && (len(e.renewed) == 0 || len(e.woken) != 0) {
					t.Errorf("prespin renewed %v and woke %v; want the replacement's nominations renewed without expediting a batch", e.renewed, e.woken)
				}
			}
			if got := deleting(t, e, f.claim); got != tt.wantDrained {
				t.Fatalf("drained = %v, want %v", got, tt.wantDrained)
			}
			if evs := strings.Join(e.drainEvents(), "\n"); !strings.Contains(evs, tt.wantEvent) {
				t.Fatalf("events lack %q:\n%s", tt.wantEvent, evs)
			}
		})
	}
}

// TestPrespunNodeDrainsOnTheWarning: a node marked by a rebalance
// recommendation whose replacement is ready is drained at once when the
// interruption warning follows.
func TestPrespunNodeDrainsOnTheWarning(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	f := e.claimFor(in, 1)
	if err := e.world.Rebalance(in.ID); err != nil {
		t.Fatal(err)
	}
	e.step()
	e.replacement(f, true)
	e.decide(f)
	if deleting(t, e, f.claim) {
		t.Fatal("prespin drained on the recommendation")
	}
	e.clk.Step(5 * time.Minute)
	e.interrupt(in.ID)
	e.decide(f)
	if !deleting(t, e, f.claim) {
		t.Fatal("not drained when the warning found the replacement ready")
	}
}

// replacementReady marks c initialized now.
func (e *env) replacementReady(c *nsv1.NodeClaim) {
	e.t.Helper()
	cur := e.get(c)
	now := e.clk.Now()
	for _, t := range []string{nsv1.ConditionLaunched, nsv1.ConditionRegistered, nsv1.ConditionInitialized} {
		meta.SetStatusCondition(&cur.Status.Conditions, conditionTrue(t, now))
	}
	if err := h.Direct.Status().Update(context.Background(), cur); err != nil {
		e.t.Fatal(err)
	}
	h.Cached(e.t, cur)
}

// TestLateNodeIsTainted: a node that registers after its claim was
// notified is tainted by the reconciler.
func TestLateNodeIsTainted(t *testing.T) {
	e := newEnv(t)
	in := e.launchSpot()
	pid := "aws:///" + in.Zone + "/" + in.ID
	claim := controllertest.NodeClaim(uniq("claim"), e.pool)
	if err := h.Direct.Create(e.ctx, claim); err != nil {
		t.Fatal(err)
	}
	claim.Status = nsv1.NodeClaimStatus{ProviderID: pid, InstanceType: in.Type, Zone: in.Zone, CapacityType: in.CapacityType}
	if err := h.Direct.Status().Update(e.ctx, claim); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, claim)
	e.interrupt(in.ID)
	if c := meta.FindStatusCondition(e.get(claim).Status.Conditions, nsv1.ConditionDisrupting); c == nil {
		t.Fatal("an unregistered claim was not marked")
	}
	node := controllertest.Node(uniq("node"), pid, "2")
	if err := h.Direct.Create(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, node)
	e.decide(&fixture{claim: claim})
	if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if !hasTaint(node, nsv1.DisruptedTaint) {
		t.Fatalf("the late node was not tainted: %v", node.Spec.Taints)
	}
}
