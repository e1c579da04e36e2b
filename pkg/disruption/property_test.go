package disruption

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// randomBudgets draws one to three budgets: counts or percentages, some
// for a subset of reasons, some only within a cron window.
func randomBudgets(r *rand.Rand) []nsv1.Budget {
	var out []nsv1.Budget
	for i := 0; i < 1+r.Intn(3); i++ {
		b := nsv1.Budget{Nodes: fmt.Sprint(r.Intn(4))}
		if r.Intn(2) == 0 {
			b.Nodes = fmt.Sprintf("%d%%", []int{0, 10, 25, 50, 100}[r.Intn(5)])
		}
		if r.Intn(3) == 0 {
			b.Reasons = []nsv1.DisruptionReason{nsv1.DisruptionReasons[r.Intn(len(nsv1.DisruptionReasons))]}
			if r.Intn(2) == 0 {
				b.Reasons = append(b.Reasons, nsv1.DisruptionReasons[r.Intn(len(nsv1.DisruptionReasons))])
			}
		}
		if r.Intn(3) == 0 {
			s := []string{"0 9 * * *", "30 11 * * *", "0 * * * *", "@daily", "0 12 * * sun"}[r.Intn(5)]
			b.Schedule = &s
			b.Duration = &metav1.Duration{Duration: time.Duration(1+r.Intn(10)) * 30 * time.Minute}
		}
		out = append(out, b)
	}
	return out
}

// randomWorld is two pools of random budgets and settings with up to a
// dozen nodes each, random pods (some do-not-disrupt, some DaemonSet), a
// few nodes drifted, expired, already deleting or marked do-not-disrupt.
func randomWorld(r *rand.Rand) *world {
	var pools []*nsv1.NodePool
	for _, name := range []string{"a", "b"} {
		p := pool(name, budgets(randomBudgets(r)...), consolidateAfter([]string{"0s", "5m", "1h"}[r.Intn(3)]))
		if r.Intn(4) == 0 {
			p.Spec.Disruption.ConsolidationPolicy = nsv1.ConsolidationPolicyWhenEmpty
		}
		pools = append(pools, p)
	}
	w := newWorld(pools...)
	// A third of the clusters run pods with anti-affinity, so the solver
	// sees every pod (no compact views).
	topology := r.Intn(3) == 0
	for _, p := range pools {
		w.types[p.Name] = []*catalog.InstanceType{itype("small", 2, 0.10, 0.04), itype("medium", 4, 0.20, 0.07), itype("large", 8, 0.40, 0.15)}
	}
	for _, p := range pools {
		for i := 0; i < 2+r.Intn(10); i++ {
			var opts []nodeOpt
			opts = append(opts, lastPodEvent(time.Duration(r.Intn(120))*time.Minute))
			switch r.Intn(12) {
			case 0:
				opts = append(opts, deleting)
			case 1:
				opts = append(opts, createdAgo(800*time.Hour))
			case 2:
				opts = append(opts, nodeAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
			case 3:
				opts = append(opts, claimAnnotation(awsv1.AnnotationSubnetID, "subnet-gone"))
			}
			it := []string{"small", "medium", "large"}[r.Intn(3)]
			ct := []string{nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeSpot}[r.Intn(2)]
			n := w.node(p.Name, it, zones[r.Intn(2)], ct, opts...)
			for j := 0; j < r.Intn(5); j++ {
				var popts []podOpt
				switch r.Intn(8) {
				case 0:
					popts = append(popts, podAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				case 1:
					popts = append(popts, daemonPod)
				case 2:
					popts = append(popts, podAnnotation(nsv1.AnnotationDoNotDisrupt, "3h"))
				case 3:
					if topology {
						popts = append(popts, spreadOut)
					}
				}
				w.pod(n, []string{"100m", "250m", "500m", "1"}[r.Intn(4)], popts...)
			}
		}
	}
	return w
}

// TestPlanProperties: over random clusters and budget schedules, no plan
// exceeds a pool's budget for any reason (counting the nodes already being
// deleted), no node is disrupted twice, and no do-not-disrupt pod or node
// is touched — except by a forced action (expiry), which only expired nodes
// get and which still uses up the budget voluntary actions see.
func TestPlanProperties(t *testing.T) {
	const runs = 300
	actions, forced := 0, 0
	for seed := int64(0); seed < runs; seed++ {
		r := rand.New(rand.NewSource(seed))
		w := randomWorld(r)
		at := now.Add(time.Duration(r.Intn(24*60)) * time.Minute)
		in := w.input(func(in *Input) {
			in.Now = at
			in.Options.SpotToSpotConsolidation = r.Intn(2) == 0
		})
		plan, err := Compute(in)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		actions += len(plan.Actions)
		total, disrupting := map[string]int{}, map[string]int{}
		for _, c := range w.snap.NodeClaims {
			total[c.Labels[nsv1.LabelNodePool]]++
			if !c.DeletionTimestamp.IsZero() {
				disrupting[c.Labels[nsv1.LabelNodePool]]++
			}
		}
		seen := map[string]bool{}
		for _, a := range plan.Actions {
			for _, c := range a.Candidates {
				if seen[c.Claim.Name] {
					t.Fatalf("seed %d: node %s disrupted twice", seed, c.Claim.Name)
				}
				seen[c.Claim.Name] = true
				disrupting[c.NodePool]++
				if a.Forced {
					if a.Method != MethodExpiration || c.Claim.Spec.ExpireAfter.Duration == nil ||
						c.Claim.CreationTimestamp.Add(*c.Claim.Spec.ExpireAfter.Duration).After(at) {
						t.Fatalf("seed %d: forced %s of node %s, which has not expired", seed, a.Method, c.Node.Name)
					}
					forced++
					continue
				}
				if c.Node.Annotations[nsv1.AnnotationDoNotDisrupt] == "true" {
					t.Fatalf("seed %d: do-not-disrupt node %s disrupted", seed, c.Node.Name)
				}
				for _, p := range w.snap.PodsByNode[c.Node.Name] {
					if blocked, _, why := lifecycle.DoNotDisrupt(p, at); blocked {
						t.Fatalf("seed %d: %s: node %s disrupted (%s)", seed, why, c.Node.Name, a.Method)
					}
				}
			}
			if a.Forced {
				continue
			}
			for _, p := range a.Pods {
				if blocked, _, _ := lifecycle.DoNotDisrupt(p, at); blocked {
					t.Fatalf("seed %d: do-not-disrupt pod %s moved", seed, p.Name)
				}
			}
			for pool := range disrupting {
				limit, _ := budget.Limit(w.pools[pool].Spec.Disruption.Budgets, a.Reason, total[pool], at)
				if touches(a, pool) && disrupting[pool] > limit {
					t.Fatalf("seed %d at %s: pool %s has %d nodes disrupting after %s (%s), over its %s limit %d (budgets %+v)",
						seed, at.Format(time.Kitchen), pool, disrupting[pool], summary(a), a.Reason, a.Reason, limit, w.pools[pool].Spec.Disruption.Budgets)
				}
			}
			if a.Method == MethodMultiNodeConsolidation || a.Method == MethodSingleNodeConsolidation {
				for _, rep := range a.Replacements {
					for _, o := range rep.Options {
						if o.Price > a.Price()*(1-DefaultMinSavingsShare)+1e-9 {
							t.Fatalf("seed %d: %s: option %s at $%v saves less than 10%% of $%v", seed, summary(a), o.InstanceType.Name, o.Price, a.Price())
						}
					}
				}
			}
		}
	}
	if actions < runs/2 {
		t.Fatalf("only %d actions over %d random clusters: the property is not exercised", actions, runs)
	}
	if forced == 0 {
		t.Fatalf("no forced expiry over %d random clusters: the exemption is not exercised", runs)
	}
	t.Logf("%d actions (%d nodes expired by force) over %d random clusters", actions, forced, runs)
}

func touches(a *Action, pool string) bool {
	for _, c := range a.Candidates {
		if c.NodePool == pool {
			return true
		}
	}
	return false
}
