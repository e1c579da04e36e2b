package interruption

import (
	"strings"
	"testing"

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

// TestRebalanceModes: off records an Event only; prespin and drain mark
// the claim (the disruption executor launches its replacement and, in
// drain mode, drains it; see e2e_test.go) and taint its node, and the
// Disrupted reconciler deletes nothing.
func TestRebalanceModes(t *testing.T) {
	tests := []struct {
		mode       interruption.RebalanceMode
		wantMarked bool
		wantEvent  string
	}{
		{mode: interruption.RebalanceOff, wantEvent: "no action (rebalance mode off)"},
		{mode: interruption.RebalancePrespin, wantMarked: true, wantEvent: "rebalance recommendation received"},
		{mode: interruption.RebalanceDrain, wantMarked: true, wantEvent: "rebalance recommendation received"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			e := newEnv(t, withMode(tt.mode))
			in := e.launchSpot()
			f := e.claimFor(in, 1)
			if err := e.world.Rebalance(in.ID); err != nil {
				t.Fatal(err)
			}
			e.woken = nil
			e.step()
			if vis, inflight := e.depth(); vis+inflight != 0 {
				t.Fatalf("queue holds %d + %d messages", vis, inflight)
			}
			c := meta.FindStatusCondition(e.get(f.claim).Status.Conditions, nsv1.ConditionDisrupting)
			if marked := c != nil && c.Reason == nsv1.DisruptingReasonRebalanceRecommendation; marked != tt.wantMarked {
				t.Fatalf("marked = %v (%+v), want %v", marked, c, tt.wantMarked)
			}
			if woke := len(e.woken) > 0; woke != tt.wantMarked {
				t.Errorf("woke the executor %v, want %v", e.woken, tt.wantMarked)
			}
			if tt.wantMarked {
				e.woken = nil
				e.decide(f)
				if len(e.woken) == 0 {
					t.Error("the Disrupted reconciler did not wake the executor once the cache showed the mark")
				}
				node := &corev1.Node{}
				if err := h.Direct.Get(e.ctx, client.ObjectKeyFromObject(f.node), node); err != nil {
					t.Fatal(err)
				}
				if !hasTaint(node, nsv1.DisruptedTaint) {
					t.Errorf("the marked node was not tainted: %v", node.Spec.Taints)
				}
			}
			if deleting(t, e, f.claim) {
				t.Fatal("the interruption handler deleted the claim; that is the executor's")
			}
			if evs := strings.Join(e.drainEvents(), "\n"); !strings.Contains(evs, tt.wantEvent) {
				t.Fatalf("events lack %q:\n%s", tt.wantEvent, evs)
			}
		})
	}
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
