package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// markedForRebalance is a claim the interruption handler marked Disrupting
// for a rebalance recommendation half an hour ago (prespin mode keeps it).
func markedForRebalance(c *nsv1.NodeClaim, _ *corev1.Node) {
	lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionDisrupting, true,
		nsv1.DisruptingReasonRebalanceRecommendation, "rebalance recommendation"), 1, metav1.NewTime(now.Add(-30*time.Minute)))
}

// TestPrespunReplacement pins the counting rule for a replacement launched
// for the pods of a node marked Disrupting (a rebalance recommendation in
// prespin mode, or in drain mode while the budget holds the drain): the pods
// still run on the marked node, and their nominations hold the replacement
// and the room on it until they land or the mark goes. Before, only
// nominations of unbound pods counted, so the replacement was deleted as
// empty and launched again every 90 s (issue 22).
func TestPrespunReplacement(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	// world: p-01 marked (unless healthy) with three 500m pods nominated
	// to the empty p-05, ready for an hour; third adds p-06 with one 1-cpu
	// pod, which fits on p-05 only if the held room were free.
	world := func(marked, third bool) Input {
		w := newWorld(pool("p"))
		var opts []nodeOpt
		if marked {
			opts = append(opts, markedForRebalance)
		}
		a := w.node("p", "small", "zone-a", od, opts...)
		moving := map[types.UID]bool{}
		for range 3 {
			moving[w.pod(a, "500m").UID] = true
		}
		b := w.node("p", "small", "zone-a", od, lastPodEvent(time.Hour))
		if third {
			c := w.node("p", "small", "zone-b", od)
			w.pod(c, "1")
		}
		return w.input(func(in *Input) {
			in.Nominated = func(uid types.UID) (string, bool) { return b, moving[uid] }
		})
	}
	tests := []struct {
		name      string
		in        Input
		want      []string
		wantSkips map[string]SkipReason
	}{
		{
			name:      "the replacement of a marked node's pods is no empty node",
			in:        world(true, false),
			wantSkips: map[string]SkipReason{"p-05": SkipPodsNominated},
		},
		{
			name:      "the room the replacement holds is not offered to another node's pods",
			in:        world(true, true),
			wantSkips: map[string]SkipReason{"p-05": SkipPodsNominated},
		},
		{
			// Control: the rule is about disrupted nodes. Pods running on a
			// healthy node stay there, whatever nomination they carry.
			name: "nominations of pods on a healthy node hold nothing",
			in:   world(false, false),
			want: []string{"Emptiness[p-05]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Compute(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(plan); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			skips := map[string]SkipReason{}
			for _, s := range plan.Skipped {
				skips[s.Node] = s.Reason
			}
			for node, reason := range tt.wantSkips {
				if skips[node] != reason {
					t.Errorf("skip of %s = %q, want %s", node, skips[node], reason)
				}
			}
			// The marked node's drain is the interruption handler's call:
			// consolidation does not drain it onto its replacement either.
			if r, ok := skips["p-01"]; ok && tt.want == nil {
				t.Errorf("marked node p-01 was considered (skipped %s), want it left to the interruption handler", r)
			}
		})
	}
}
