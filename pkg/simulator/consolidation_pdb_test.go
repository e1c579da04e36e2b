package simulator

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// consolidationWithBudgets is the built-in consolidation-pdb.yaml
// (consolidation.yaml with a budget over each Deployment) with each
// budget's maxUnavailable set to v.
func consolidationWithBudgets(t *testing.T, v int32) *scenario.Scenario {
	t.Helper()
	sc := loadExample(t, "consolidation-pdb.yaml")
	plain := loadExample(t, "consolidation.yaml")
	if len(sc.PodDisruptionBudgets) != len(sc.Deployments) || len(plain.PodDisruptionBudgets) != 0 {
		t.Fatalf("consolidation-pdb.yaml has %d budgets for %d Deployments, consolidation.yaml %d: want one each, and none",
			len(sc.PodDisruptionBudgets), len(sc.Deployments), len(plain.PodDisruptionBudgets))
	}
	down := intstr.FromInt32(v)
	for i, d := range sc.Deployments {
		b := &sc.PodDisruptionBudgets[i]
		if b.Spec.Selector == nil || b.Spec.Selector.MatchLabels["app"] != d.Template.Labels["app"] {
			t.Fatalf("budget %s does not select Deployment %s", b.Name, d.Name)
		}
		b.Spec.MaxUnavailable = &down
	}
	return sc
}

func endCost(r *output.Result) float64 { return r.Samples[len(r.Samples)-1].CostPerHour }

// heldFor is the report's line for a planner reason (zero when it never held a node).
func heldFor(r *output.Result, why disruption.SkipReason) output.Held {
	for _, h := range r.NotDisrupted {
		if h.Reason == string(why) {
			return h
		}
	}
	return output.Held{}
}

// Issue 23: the consolidation scenario with a budget of maxUnavailable 1
// over each Deployment consolidates too. The disruption controller keeps
// the budgets' status current, so a node whose pods' budgets allow a
// disruption is a candidate, and the drains take the pods one at a time:
// slower, but the fleet ends within 5 % of the run without budgets. Once
// the scale-down has settled, no Deployment ever has more than one pod
// short of its replicas.
func TestConsolidationWithPDB(t *testing.T) {
	without := runCached(t, "consolidation.yaml")
	sc := consolidationWithBudgets(t, 1)
	replicas := map[string]int{}
	for _, d := range sc.Deployments {
		replicas[d.Template.Labels["app"]] = int(d.Replicas[len(d.Replicas)-1].Replicas)
	}
	settled := sc.Deployments[0].Replicas[len(sc.Deployments[0].Replicas)-1].At.Duration + time.Minute
	healthy := map[string]map[types.UID]bool{}
	least := map[string]int{}
	s := runWatching(t, sc, func(s *Sim, ch apiserver.Change) {
		p, ok := ch.Object().(*corev1.Pod)
		if !ok {
			return
		}
		app := p.Labels["app"]
		if healthy[app] == nil {
			healthy[app] = map[types.UID]bool{}
		}
		if ch.New != nil && healthyPod(p) {
			healthy[app][p.UID] = true
		} else {
			delete(healthy[app], p.UID)
		}
		if s.now >= settled {
			if n, seen := least[app]; !seen || len(healthy[app]) < n {
				least[app] = len(healthy[app])
			}
		}
	})
	with := s.result()
	// The same run as the built-in scenario's golden (TestGoldenTimelines
	// runs later in this binary and reuses it).
	cachedMu.Lock()
	cached["consolidation-pdb.yaml"] = with
	cachedMu.Unlock()
	checkGolden(t, "consolidation-pdb", with)
	t.Logf("fewest healthy pods per Deployment after t=%s: %v (replicas %v)", settled, least, replicas)
	for app, n := range replicas {
		if got, seen := least[app]; !seen || got < n-1 {
			t.Errorf("%s: %d healthy pods at one point after t=%s (seen %v), its budget allows %d", app, got, settled, seen, n-1)
		}
	}
	base, pdb := endCost(without), endCost(with)
	t.Logf("end of run: $%.4f/h without budgets, $%.4f/h with (%+.1f %%); run cost $%.4f and $%.4f",
		base, pdb, 100*(pdb/base-1), without.Cost, with.Cost)
	if peak := without.Samples[len(without.Samples)/4].CostPerHour; base >= peak/2 {
		t.Fatalf("the run without budgets did not consolidate ($%.4f/h at the end, $%.4f/h at the peak)", base, peak)
	}
	if pdb > base*1.05 {
		t.Errorf("with budgets the fleet ends at $%.4f/h, more than 5 %% over the $%.4f/h without", pdb, base)
	}
	if h := heldFor(with, disruption.SkipPodDisruptionBudget); h.Most == 0 || h.AtEnd != 0 {
		t.Errorf("the report's PodDisruptionBudget line %+v: the budgets held nodes while pods were short, and none at the end", h)
	}
}

// A budget that allows no disruption (maxUnavailable 0) holds every node
// running a pod it covers, and the report says so: the nodes the planner
// left for PodDisruptionBudget, counted by the planner itself.
func TestReportSaysWhyNodesStay(t *testing.T) {
	without := runCached(t, "consolidation.yaml")
	res := run(t, consolidationWithBudgets(t, 0))
	h := heldFor(res, disruption.SkipPodDisruptionBudget)
	nodes := res.Samples[len(res.Samples)-1].NodesOnDemand
	t.Logf("maxUnavailable 0: %d nodes at the end, $%.4f/h (without budgets $%.4f/h); PodDisruptionBudget held %+v",
		nodes, endCost(res), endCost(without), h)
	if h.AtEnd == 0 || h.AtEnd > nodes {
		t.Errorf("the report's PodDisruptionBudget line %+v, want it to hold some of the %d nodes left at the end", h, nodes)
	}
	if endCost(res) <= endCost(without) {
		t.Errorf("with nothing allowed the fleet ends at $%.4f/h, no more than the $%.4f/h without budgets", endCost(res), endCost(without))
	}
	summary := fmt.Sprintf("%s %d", disruption.SkipPodDisruptionBudget, h.AtEnd)
	var b bytes.Buffer
	output.WriteSummary(&b, res)
	if !strings.Contains(b.String(), summary) {
		t.Errorf("the summary does not say %q:\n%s", summary, b.String())
	}
}
