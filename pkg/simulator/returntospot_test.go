package simulator

import (
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// spotBack is when return-to-spot.yaml's ICE window ends.
const spotBack = 5 * time.Minute

// Every node that fell back to on-demand during the spot ICE window is back
// on spot within ten minutes of spot's return, each replaced once, and the
// spot nodes stay: no return is undone.
func TestReturnToSpot(t *testing.T) {
	sc := loadExample(t, "return-to-spot.yaml")
	res := runCached(t, "return-to-spot.yaml")
	launchesAllowed(t, sc, res)
	var fallbacks, spotAfter int
	var last time.Duration
	for _, l := range res.Launches {
		switch l.CapacityType {
		case nsv1.CapacityTypeOnDemand:
			fallbacks++
			if l.LaunchedAt >= spotBack {
				t.Errorf("%s launched on-demand at %s, after spot came back", l.NodeClaim, l.LaunchedAt)
			}
			if !l.Terminated || l.Reason != "returned to spot" {
				t.Errorf("%s: terminated %v (%q), want returned to spot", l.NodeClaim, l.Terminated, l.Reason)
			}
			last = max(last, l.TerminatedAt)
		case nsv1.CapacityTypeSpot:
			if l.LaunchedAt >= spotBack {
				spotAfter++
			}
			if l.Terminated {
				t.Errorf("spot node %s went away at %s (%s): a return was undone", l.NodeClaim, l.TerminatedAt, l.Reason)
			}
		}
	}
	if fallbacks == 0 {
		t.Fatal("no node fell back to on-demand: the scenario tests nothing")
	}
	if spotAfter > fallbacks {
		t.Errorf("%d spot nodes launched after spot came back for %d fallback nodes; want at most one each", spotAfter, fallbacks)
	}
	within(t, "last fallback node gone, after spot came back", last-spotBack, time.Duration(0), 10*time.Minute)
	end := res.Samples[len(res.Samples)-1]
	if end.NodesOnDemand != 0 || end.PendingPods != 0 || end.RunningPods != 24 {
		t.Errorf("at the end: %d on-demand nodes, %d pods pending, %d running; want 0, 0, 24", end.NodesOnDemand, end.PendingPods, end.RunningPods)
	}
	if saved := 1 - res.Cost/res.OnDemandCost; saved < 0.4 {
		t.Errorf("saved %.1f%%, want at least 40%%", 100*saved)
	}
}

// The case: twelve pods on one on-demand fallback node, whose pods
// no single cheaper spot node takes with the solver's spot-option floor, so
// consolidation never replaces it. With returnToSpot the node is back on
// spot within ten minutes of spot's return; with it Disabled (the control,
// and the switch doing what it says) it stays on demand to the end.
func TestReturnToSpotOneBigNode(t *testing.T) {
	for _, tt := range []struct {
		policy   nsv1.ReturnToSpotPolicy
		returned bool
	}{{nsv1.ReturnToSpotEnabled, true}, {nsv1.ReturnToSpotDisabled, false}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			sc := loadExample(t, "return-to-spot.yaml")
			for i := range sc.NodePools {
				sc.NodePools[i].Spec.Disruption.ReturnToSpot = tt.policy
			}
			web := &sc.Deployments[0]
			web.Replicas[0].Replicas = 12
			web.Template.Spec.TopologySpreadConstraints = nil
			res := run(t, sc)
			onDemand := 0
			for _, l := range res.Launches {
				if l.CapacityType != nsv1.CapacityTypeOnDemand {
					continue
				}
				onDemand++
				switch {
				case !tt.returned && l.Terminated:
					t.Errorf("%s went away at %s (%s) with returnToSpot %s", l.NodeClaim, l.TerminatedAt, l.Reason, tt.policy)
				case tt.returned && (!l.Terminated || l.Reason != "returned to spot"):
					t.Errorf("%s: terminated %v (%q), want returned to spot", l.NodeClaim, l.Terminated, l.Reason)
				case tt.returned:
					within(t, "fallback node gone, after spot came back", l.TerminatedAt-spotBack, time.Duration(0), 10*time.Minute)
				}
			}
			if onDemand == 0 {
				t.Fatal("no node fell back to on-demand")
			}
			saved := 1 - res.Cost/res.OnDemandCost
			t.Logf("returnToSpot %s: cost $%.4f, on demand $%.4f, saved %.1f%%", tt.policy, res.Cost, res.OnDemandCost, 100*saved)
			if !tt.returned && saved > 0.01 {
				t.Errorf("saved %.1f%% with returnToSpot Disabled, want about 0", 100*saved)
			}
			if tt.returned && saved < 0.4 {
				t.Errorf("saved %.1f%%, want at least 40%%", 100*saved)
			}
		})
	}
}
