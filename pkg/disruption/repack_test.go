package disruption

import (
	"reflect"
	"testing"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// TestRepack: the test catalog sells small (2 cpu, $0.10/h), medium (4,
// $0.20/h) and large (8, $0.40/h) on demand; allocatable is 100m less.
// Ten pods of 500m fit a medium and a small ($0.30/h), not one medium, so
// a fleet of large nodes holding them can only shrink to one large
// ($0.40/h) by deleting.
func TestRepack(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	pods := func(w *world, node string, n int) {
		for i := 0; i < n; i++ {
			w.pod(node, "500m")
		}
	}
	tests := []struct {
		name      string
		build     func() Input
		want      []string
		wantSkips map[string]SkipReason
		check     func(t *testing.T, p *Plan)
	}{
		{
			name: "large nodes holding what a medium and a small hold are repacked onto those",
			build: func() Input {
				w := newWorld(pool("p"))
				for _, n := range []int{4, 4, 2} {
					pods(w, w.node("p", "large", "zone-a", od), n)
				}
				return w.input()
			},
			want: []string{"MultiNodeConsolidation[p-01 p-06 p-11]+2"},
			check: func(t *testing.T, p *Plan) {
				var types []string
				for _, r := range p.Actions[0].Replacements {
					types = append(types, r.Options[0].InstanceType.Name)
				}
				if !reflect.DeepEqual(types, []string{"medium", "small"}) && !reflect.DeepEqual(types, []string{"small", "medium"}) {
					t.Errorf("replacements %v, want a medium and a small", types)
				}
				if got := p.Actions[0].Savings; got < 0.89 || got > 0.91 {
					t.Errorf("savings $%.4f/h, want $0.90/h", got)
				}
			},
		},
		{
			name: "the budget takes the loaded nodes first; the repack's claims are sized for every candidate's pods",
			build: func() Input {
				w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "2"})))
				for _, n := range []int{4, 4, 2} {
					pods(w, w.node("p", "large", "zone-a", od), n)
				}
				return w.input()
			},
			// p-11 (2 pods) and p-01 (4) go first: fewest pods per dollar,
			// then name.
			want: []string{"MultiNodeConsolidation[p-01 p-11]+2"},
			check: func(t *testing.T, p *Plan) {
				moved := 0
				for _, r := range p.Actions[0].Replacements {
					moved += len(r.Pods)
				}
				if moved != 6 {
					t.Errorf("the replacements carry %d pods, want the 6 moved now", moved)
				}
			},
		},
		{
			name: "empty nodes pay for the repack of the one that runs the pods",
			build: func() Input {
				w := newWorld(pool("p"))
				pods(w, w.node("p", "large", "zone-a", od), 10)
				w.node("p", "large", "zone-a", od)
				w.node("p", "large", "zone-a", od)
				return w.input()
			},
			want: []string{"MultiNodeConsolidation[p-01 p-12 p-13]+2"},
		},
		{
			name: "empty nodes wait for the loaded one to pass consolidateAfter, to pay for its repack",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("5s")))
				pods(w, w.node("p", "large", "zone-a", od, lastPodEvent(2*time.Second)), 10)
				w.node("p", "large", "zone-a", od, lastPodEvent(10*time.Second))
				w.node("p", "large", "zone-a", od, lastPodEvent(10*time.Second))
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipConsolidateAfter, "p-12": SkipHeldForRepack, "p-13": SkipHeldForRepack},
		},
		{
			name: "an empty node is held a minute at most",
			build: func() Input {
				w := newWorld(pool("p", consolidateAfter("5s")))
				pods(w, w.node("p", "large", "zone-a", od, lastPodEvent(2*time.Second)), 10)
				w.node("p", "large", "zone-a", od, lastPodEvent(70*time.Second))
				w.node("p", "large", "zone-a", od, lastPodEvent(10*time.Second))
				return w.input()
			},
			want:      []string{"Emptiness[p-12]"},
			wantSkips: map[string]SkipReason{"p-01": SkipConsolidateAfter, "p-13": SkipHeldForRepack},
		},
		{
			name: "churn: a lone node is not split in two (a repack never adds nodes)",
			build: func() Input {
				w := newWorld(pool("p"))
				pods(w, w.node("p", "large", "zone-a", od), 10)
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipNotCheaper},
		},
		{
			name: "churn: a replacement launched minutes ago is neither repacked nor consolidated",
			build: func() Input {
				w := newWorld(pool("p"))
				young := []nodeOpt{createdAgo(5 * time.Minute), claimAnnotation(nsv1.AnnotationReplacementFor, "cmd-1")}
				pods(w, w.node("p", "large", "zone-a", od, young...), 4)
				pods(w, w.node("p", "large", "zone-a", od, young...), 4)
				return w.input()
			},
			wantSkips: map[string]SkipReason{"p-01": SkipRecentReplacement, "p-06": SkipRecentReplacement},
		},
		{
			name: "a replacement older than the churn window is consolidated (here repacked) as any node",
			build: func() Input {
				w := newWorld(pool("p"))
				old := []nodeOpt{createdAgo(11 * time.Minute), claimAnnotation(nsv1.AnnotationReplacementFor, "cmd-1")}
				pods(w, w.node("p", "large", "zone-a", od, old...), 4)
				pods(w, w.node("p", "large", "zone-a", od, old...), 4)
				return w.input()
			},
			want: []string{"MultiNodeConsolidation[p-01 p-06]+2"},
		},
		{
			name: "a pool with a drifted node waits for drift before it is repacked",
			build: func() Input {
				w := newWorld(pool("p"))
				for _, n := range []int{4, 4} {
					pods(w, w.node("p", "large", "zone-a", od), n)
				}
				pods(w, w.node("p", "large", "zone-a", od, claimAnnotation("aws.nodesmith.sh/subnet-id", "subnet-gone")), 2)
				return w.input()
			},
			want: []string{"Drift[p-11]", "SingleNodeConsolidation[p-01]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Compute(tc.build())
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(plan); !reflect.DeepEqual(got, tc.want) {
				for _, a := range plan.Actions {
					t.Log(a.Message)
				}
				t.Fatalf("actions %v, want %v (skips %+v)", got, tc.want, plan.Skipped)
			}
			for claim, reason := range tc.wantSkips {
				found := false
				for _, s := range plan.Skipped {
					if s.Claim == claim {
						found = true
						if s.Reason != reason {
							t.Errorf("skip %s: %s (%s), want %s", claim, s.Reason, s.Message, reason)
						}
					}
				}
				if !found {
					t.Errorf("no skip for %s, want %s", claim, reason)
				}
			}
			if tc.check != nil {
				tc.check(t, plan)
			}
		})
	}
}
