package disruption

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/catalog"
)

// returnCatalog is ten 4-cpu types, on-demand at $0.20/h and spot at
// spotPrice (+$0.001 per type) in both zones: twenty spot options.
func returnCatalog(spotPrice float64) []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for i := 0; i < 10; i++ {
		out = append(out, itype(fmt.Sprintf("m-%02d", i), 4, 0.20, spotPrice+0.001*float64(i)))
	}
	return out
}

// hideSpot marks every spot offering of the pool's types unavailable, as
// the insufficient-capacity view does.
func hideSpot(types []*catalog.InstanceType) []*catalog.InstanceType {
	return withUnavailable(types, func(_, _, ct string) bool { return ct == nsv1.CapacityTypeSpot })
}

func fellBack(c *nsv1.NodeClaim, _ *corev1.Node) {
	c.Annotations[nsv1.AnnotationSpotFallback] = now.Add(-time.Hour).Format(time.RFC3339)
}

func returnToSpot(v nsv1.ReturnToSpotPolicy) poolOpt {
	return func(p *nsv1.NodePool) { p.Spec.Disruption.ReturnToSpot = v }
}

func capacityTypes(cts ...string) poolOpt {
	return func(p *nsv1.NodePool) {
		p.Spec.Template.Spec.Requirements = append(p.Spec.Template.Spec.Requirements, nsv1.NodeSelectorRequirementWithMinValues{
			Key: nsv1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: cts})
	}
}

// TestReturnToSpot covers the planner's return-to-spot step. Every pool
// consolidates only empty nodes, so no other method replaces the node.
func TestReturnToSpot(t *testing.T) {
	const od, spot = nsv1.CapacityTypeOnDemand, nsv1.CapacityTypeSpot
	both := capacityTypes(spot, od)
	whenEmpty := policy(nsv1.ConsolidationPolicyWhenEmpty)
	tests := []struct {
		name      string
		pool      []poolOpt
		types     []*catalog.InstanceType
		ct        string
		node      []nodeOpt
		want      []string
		wantSkip  SkipReason
		checkPlan func(t *testing.T, p *Plan, w *working)
	}{
		{
			name: "a fallback node goes back to spot once spot is back and cheaper",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.06), ct: od, node: []nodeOpt{fellBack},
			want: []string{"ReturnToSpot[p-01]+1"},
			checkPlan: func(t *testing.T, p *Plan, w *working) {
				a := p.Actions[0]
				if a.Reason != nsv1.DisruptionReasonReturnToSpot || p.Candidates[nsv1.DisruptionReasonReturnToSpot] != 1 {
					t.Errorf("reason %s, candidates %v; want ReturnToSpot, 1", a.Reason, p.Candidates)
				}
				for _, o := range a.Replacements[0].Options {
					if o.CapacityType != spot || o.Price > 0.20*(1-DefaultMinSavingsShare) {
						t.Errorf("replacement option %s %s at $%.4f/h: want spot at most $%.4f/h", o.InstanceType.Name, o.CapacityType, o.Price, 0.20*(1-DefaultMinSavingsShare))
					}
				}
				if a.Savings <= 0 || !strings.Contains(a.Message, "spot had no capacity") {
					t.Errorf("savings %.4f, message %q", a.Savings, a.Message)
				}
			},
		},
		{
			name: "an on-demand node that did not fall back is not the step's",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.06), ct: od,
			wantSkip: SkipPolicyWhenEmpty,
		},
		{
			name: "spot still hidden by the insufficient-capacity view",
			pool: []poolOpt{both, whenEmpty}, types: hideSpot(returnCatalog(0.06)), ct: od, node: []nodeOpt{fellBack},
			wantSkip: SkipSpotUnavailable,
		},
		{
			name: "spot back but not cheaper by the minimum savings share",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.185), ct: od, node: []nodeOpt{fellBack},
			wantSkip: SkipNotCheaper,
		},
		{
			name: "the pool turned returnToSpot off",
			pool: []poolOpt{both, whenEmpty, returnToSpot(nsv1.ReturnToSpotDisabled)}, types: returnCatalog(0.06), ct: od, node: []nodeOpt{fellBack},
			wantSkip: SkipPolicyWhenEmpty,
			checkPlan: func(t *testing.T, p *Plan, w *working) {
				if n := p.Candidates[nsv1.DisruptionReasonReturnToSpot]; n != 0 {
					t.Errorf("%d ReturnToSpot candidates, want 0", n)
				}
			},
		},
		{
			name: "the pool allows only on-demand now",
			pool: []poolOpt{capacityTypes(od), whenEmpty}, types: returnCatalog(0.06), ct: od, node: []nodeOpt{fellBack},
			wantSkip: SkipPolicyWhenEmpty,
		},
		{
			name: "a failed return backs off",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.06), ct: od,
			node: []nodeOpt{fellBack, claimAnnotation(nsv1.AnnotationReturnToSpotAttempts, "2"),
				claimAnnotation(nsv1.AnnotationReturnToSpotNotBefore, now.Add(4*time.Minute).Format(time.RFC3339))},
			wantSkip: SkipReturnToSpotBackoff,
			checkPlan: func(t *testing.T, p *Plan, w *working) {
				if want := now.Add(4 * time.Minute); !w.horizon.Equal(want) {
					t.Errorf("the plan may change at %s, want at the backoff's end %s", w.horizon, want)
				}
			},
		},
		{
			name: "a return whose backoff has passed goes ahead",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.06), ct: od,
			node: []nodeOpt{fellBack, claimAnnotation(nsv1.AnnotationReturnToSpotAttempts, "2"),
				claimAnnotation(nsv1.AnnotationReturnToSpotNotBefore, now.Add(-time.Second).Format(time.RFC3339))},
			want: []string{"ReturnToSpot[p-01]+1"},
		},
		{
			name:  "a ReturnToSpot budget of 0 holds it",
			pool:  []poolOpt{both, whenEmpty, budgets(nsv1.Budget{Nodes: "100%"}, nsv1.Budget{Nodes: "0", Reasons: []nsv1.DisruptionReason{nsv1.DisruptionReasonReturnToSpot}})},
			types: returnCatalog(0.06), ct: od, node: []nodeOpt{fellBack},
			wantSkip: SkipBudget,
		},
		{
			name: "a spot node is never returned",
			pool: []poolOpt{both, whenEmpty}, types: returnCatalog(0.06), ct: spot, node: []nodeOpt{fellBack},
			wantSkip: SkipPolicyWhenEmpty,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := func() Input {
				w := newWorld(pool("p", tt.pool...))
				w.types["p"] = tt.types
				n := w.node("p", "m-00", "zone-a", tt.ct, tt.node...)
				w.pod(n, "2")
				return w.input()
			}
			plan, w, err := compute(build())
			if err != nil {
				t.Fatal(err)
			}
			got := summaries(plan)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			if tt.wantSkip != "" {
				if len(plan.Skipped) != 1 || plan.Skipped[0].Reason != tt.wantSkip {
					t.Fatalf("skips %+v, want one %s", plan.Skipped, tt.wantSkip)
				}
				if plan.Skipped[0].Message == "" {
					t.Error("skip without a message")
				}
			}
			if tt.checkPlan != nil {
				tt.checkPlan(t, plan, w)
			}
			again, err := Compute(build())
			if err != nil {
				t.Fatal(err)
			}
			if g := summaries(again); strings.Join(g, ",") != strings.Join(got, ",") {
				t.Errorf("second plan %v differs from %v", g, got)
			}
		})
	}
}

func TestReturnToSpotBackoff(t *testing.T) {
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{0, time.Minute}, {1, time.Minute}, {2, 2 * time.Minute}, {3, 4 * time.Minute},
		{6, 32 * time.Minute}, {7, time.Hour}, {40, time.Hour},
	}
	for _, tt := range tests {
		if got := ReturnToSpotBackoff(tt.attempts); got != tt.want {
			t.Errorf("ReturnToSpotBackoff(%d) = %s, want %s", tt.attempts, got, tt.want)
		}
	}
}

// A failed return counts up the attempts on the claim and pushes the next
// one out by the backoff; a restart reads both back from the annotations.
func TestReturnToSpotFailed(t *testing.T) {
	ann := map[string]string{}
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		n, next := ReturnToSpotFailed(ann, now)
		if n != i+1 || !next.Equal(now.Add(wait)) {
			t.Errorf("failure %d: attempts %d, next %s; want %d, %s", i+1, n, next, i+1, now.Add(wait))
		}
		if ann[nsv1.AnnotationReturnToSpotAttempts] != fmt.Sprint(i+1) || ann[nsv1.AnnotationReturnToSpotNotBefore] != now.Add(wait).Format(time.RFC3339) {
			t.Errorf("failure %d: annotations %v", i+1, ann)
		}
	}
	ann[nsv1.AnnotationReturnToSpotAttempts] = "garbage"
	if n, _ := ReturnToSpotFailed(ann, now); n != 1 {
		t.Errorf("an unreadable count restarts at 1, got %d", n)
	}
}
