package simulator

import (
	"context"
	"testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// savings-plan.yaml: the $1.00/h Compute Savings Plan makes the first
// zone's node on-demand (prepaid, zero at the margin); what is left of the
// plan does not make a second on-demand node cheaper than spot, so the
// other zones go to spot. Consolidation does not replace the covered
// on-demand node with spot: it is prepaid. The same run with the
// commitment ignored buys only spot and pays the plan unused, so its total
// is higher.
func TestSavingsPlanScenario(t *testing.T) {
	res := runCached(t, "savings-plan.yaml")
	od := 0
	for _, l := range res.Launches {
		if l.CapacityType == nsv1.CapacityTypeOnDemand {
			od++
			if l.Terminated {
				t.Errorf("covered on-demand node %s went away at %s (%s): it is prepaid", l.NodeClaim, l.TerminatedAt, l.Reason)
			}
		}
	}
	if od != 1 || len(res.Launches) != 3 {
		t.Errorf("%d launches, %d on demand; want 3 with 1 on demand", len(res.Launches), od)
	}
	if !res.AllPodsRunning.Reached {
		t.Error("the pods never all ran")
	}
	if res.CommitmentCost <= 0 || res.CommitmentCovered <= 0 || res.CommitmentCovered > res.CommitmentCost {
		t.Errorf("commitment paid $%.4f, covered $%.4f: want both positive, covered within paid", res.CommitmentCost, res.CommitmentCovered)
	}

	// The account pays the plan in both runs, and it covers whatever
	// on-demand the ignoring run launches (none).
	ignored, err := Run(context.Background(), loadExample(t, "savings-plan.yaml"), Options{IgnoreCommitments: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ignored.Launches {
		if l.CapacityType == nsv1.CapacityTypeOnDemand {
			t.Errorf("ignoring the plan, %s launched on demand: spot is cheaper at list price", l.NodeClaim)
		}
	}
	with, without := res.Total(), ignored.Total()
	t.Logf("with the Savings Plan: launched $%.4f − covered $%.4f + plan $%.4f = $%.4f; ignoring it: launched $%.4f − covered $%.4f + plan $%.4f = $%.4f (%.1f%% less)",
		res.Cost, res.CommitmentCovered, res.CommitmentCost, with, ignored.Cost, ignored.CommitmentCovered, ignored.CommitmentCost, without, 100*(1-with/without))
	if ignored.CommitmentCost != res.CommitmentCost {
		t.Errorf("the plan costs $%.4f and $%.4f: the account pays it either way", res.CommitmentCost, ignored.CommitmentCost)
	}
	if with >= without {
		t.Errorf("using the Savings Plan costs $%.4f, ignoring it $%.4f", with, without)
	}
}
