package disruption

import (
	"testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// TestConsolidationCapturesScaleDown is the scale-down: a fleet
// the solver planned for 1,500 pods keeps 150 of them, and the planner,
// run round after round as the controller runs it (each plan carried out
// before the next, a minute later), must get the cluster within 5 % of the
// savings a from-scratch plan for the 150 pods would make, and end within
// 10 % of that plan's cost — without churn: every
// consolidation saves at least the minimum share of its candidates'
// price, no replacement may launch as a candidate's own offering, no
// round disrupts more nodes than the pool's budget allowed when it
// started, and no node a round launched is removed by a later one.
//
// The budget is 20 % of the pool's nodes, so convergence takes several
// rounds at the budget's pace. Each seed is a different burst and a
// different survivor set; the scenario is deterministic.
func TestConsolidationCapturesScaleDown(t *testing.T) {
	const burst, keep, maxRounds = 1500, 150, 30
	for _, seed := range []int64{1, 2, 3, 7, 42, 99} {
		for _, gate := range []bool{true, false} {
			w, pods := scaledDown(t, burst, keep, seed)
			np := w.pools["burst"]
			np.Spec.Disruption.Budgets = []nsv1.Budget{{Nodes: "20%"}}
			sp := scheduling.NodePoolFromAPI(np, w.types[np.Name])
			scratch, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
			if err != nil || len(scratch.Unschedulable) > 0 {
				t.Fatalf("seed %d: from-scratch plan: %v, %d unplaced", seed, err, len(scratch.Unschedulable))
			}
			opts := func(in *Input) { in.Options.SpotToSpotConsolidation = gate }
			r := converge(t, w, seed, maxRounds, false, opts)
			start, cost, rounds, actions, launched, nodes0 := r.start, r.cost, r.rounds, r.actions, r.launched, r.nodes0
			w = r.w
			capture := (start - cost) / (start - scratch.Cost())
			t.Logf("seed %d spotToSpot=%v: %d nodes $%.4f/h -> %d nodes $%.4f/h in %d rounds, %d actions, %d replacements; from scratch %d nodes $%.4f/h; capture %.1f %%, cost %.1f %% over scratch",
				seed, gate, nodes0, start, len(w.snap.Nodes), cost, rounds, actions, len(launched), len(scratch.NewClaims), scratch.Cost(), 100*capture, 100*(cost/scratch.Cost()-1))
			if capture < 0.95 {
				t.Errorf("seed %d spotToSpot=%v: captured %.1f %% of the from-scratch savings, want >= 95 %%", seed, gate, 100*capture)
			}
			if cost > 1.10*scratch.Cost() {
				t.Errorf("seed %d spotToSpot=%v: ends at $%.4f/h, more than 10 %% over the from-scratch $%.4f/h", seed, gate, cost, scratch.Cost())
			}
		}
	}
}

// checkNoChurn holds one round's plan to the anti-churn rules.
func checkNoChurn(t *testing.T, seed int64, round int, plan *Plan, launched map[string]int, minShare float64) {
	t.Helper()
	taken := map[string]map[nsv1.DisruptionReason]int{}
	for _, a := range plan.Actions {
		consolidation := a.Method == MethodMultiNodeConsolidation || a.Method == MethodSingleNodeConsolidation
		if consolidation && a.Savings < minShare*a.Price()-1e-9 {
			t.Errorf("seed %d round %d: %s saves $%.4f/h of $%.4f/h, under the minimum share %.0f %%", seed, round, a.Method, a.Savings, a.Price(), 100*minShare)
		}
		for _, c := range a.Candidates {
			if r, ok := launched[c.Claim.Name]; ok {
				t.Errorf("seed %d round %d: removes %s, launched in round %d", seed, round, c.Claim.Name, r)
			}
			if taken[c.NodePool] == nil {
				taken[c.NodePool] = map[nsv1.DisruptionReason]int{}
			}
			taken[c.NodePool][a.Reason]++
			for _, r := range a.Replacements {
				for _, o := range r.Options {
					if o.InstanceType.Name == c.InstanceType && o.Zone == c.Zone && o.CapacityType == c.CapacityType {
						t.Errorf("seed %d round %d: replaces %s with its own offering %s/%s/%s", seed, round, c.Claim.Name, c.InstanceType, c.Zone, c.CapacityType)
					}
				}
			}
		}
	}
	for pool, byReason := range taken {
		// Every node disrupting counts against every reason's limit, so
		// the round's total is bounded by the largest allowance too.
		total, most := 0, 0
		for reason, n := range byReason {
			total += n
			if allowed := plan.Allowed[pool][reason]; n > allowed {
				t.Errorf("seed %d round %d: pool %s disrupts %d nodes for %s, its budget allowed %d", seed, round, pool, n, reason, allowed)
			}
		}
		for _, allowed := range plan.Allowed[pool] {
			most = max(most, allowed)
		}
		if total > most {
			t.Errorf("seed %d round %d: pool %s disrupts %d nodes, its budget allowed at most %d", seed, round, pool, total, most)
		}
	}
}

// TestConsolidationCaptures1000Nodes is the benchmark's workload (a
// burst's leftovers: about 1,000 nodes holding 10,000 pods) planned once:
// one plan must capture 95 % of the from-scratch repack's savings. This is
// where the solver's placement on existing nodes shows (first fit left
// 94.4-94.6 % on these seeds); at the 150-pod scale every order gets there
// in a few rounds.
func TestConsolidationCaptures1000Nodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 41,000-pod burst")
	}
	for _, seed := range []int64{42, 7} {
		w, pods := scaledDown(t, 41000, 10000, seed)
		np := w.pools["burst"]
		sp := scheduling.NodePoolFromAPI(np, w.types[np.Name])
		scratch, err := scheduling.Solve(scheduling.Input{Pods: pods, NodePools: []*scheduling.NodePool{sp}})
		if err != nil || len(scratch.Unschedulable) > 0 {
			t.Fatalf("seed %d: from-scratch plan: %v, %d unplaced", seed, err, len(scratch.Unschedulable))
		}
		in := w.input(func(in *Input) { in.Options.SpotToSpotConsolidation = true })
		plan, err := Compute(in)
		if err != nil {
			t.Fatal(err)
		}
		checkNoChurn(t, seed, 0, plan, nil, in.Options.withDefaults().MinSavingsShare)
		before, after := clusterCost(newWorking(in), plan)
		capture := (before - after) / (before - scratch.Cost())
		t.Logf("seed %d: %d nodes $%.2f/h -> $%.2f/h in %d actions (%d solves); from scratch $%.2f/h; capture %.1f %%",
			seed, len(w.snap.Nodes), before, after, len(plan.Actions), plan.Solves, scratch.Cost(), 100*capture)
		if capture < 0.95 {
			t.Errorf("seed %d: one plan captured %.1f %% of the from-scratch savings, want >= 95 %%", seed, 100*capture)
		}
	}
}
