package simulator

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/simulator/output"
)

// TestGoldenRebalanceModes runs the rebalance-recommendation example — one
// recommendation at t=5m for a node of a six-pod Deployment, no
// interruption after it — for its three simulated hours in every rebalance
// mode, and pins what each mode launches and keeps (issue 22: prespin
// launched a replacement every 90 s, 115 in all, because the replacement's
// nominations were not counted and consolidation deleted it as empty).
func TestGoldenRebalanceModes(t *testing.T) {
	const name, at = "rebalance-recommendation", 5 * time.Minute
	tests := []struct {
		mode interruption.RebalanceMode
		// replacements launched after the recommendation.
		replacements int
		// recommendedKept: the recommended node still runs at the end.
		recommendedKept bool
	}{
		{mode: interruption.RebalanceOff, replacements: 0, recommendedKept: true},
		{mode: interruption.RebalancePrespin, replacements: 1, recommendedKept: true},
		{mode: interruption.RebalanceDrain, replacements: 1, recommendedKept: false},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			golden := name + "-" + string(tt.mode)
			var res *output.Result
			if tt.mode == interruption.DefaultRebalanceMode {
				// The example runs the default: share its run (and its
				// golden) with TestGoldenTimelines.
				if m := loadExample(t, name+".yaml").Controller.RebalanceMode; m != "" {
					t.Fatalf("the example sets rebalanceMode %q, want the default", m)
				}
				res, golden = runCached(t, name+".yaml"), name
			} else {
				sc := loadExample(t, name+".yaml")
				sc.Controller.RebalanceMode = string(tt.mode)
				res = run(t, sc)
			}
			initial, after := 0, 0
			for _, l := range res.Launches {
				if l.LaunchedAt < at {
					initial++
				} else {
					after++
				}
			}
			if initial == 0 {
				t.Fatalf("no node launched before the recommendation at %s", at)
			}
			if after != tt.replacements {
				t.Errorf("%d nodes launched after the recommendation (initial fleet %d), want %d", after, initial, tt.replacements)
			}
			if len(res.Interruptions) != 1 {
				t.Fatalf("%d interruption records, want the one recommendation", len(res.Interruptions))
			}
			rec := res.Interruptions[0].NodeClaim
			var gone []string
			for _, l := range res.Launches {
				if l.NodeClaim == rec && l.Terminated == tt.recommendedKept {
					t.Errorf("recommended node %s terminated=%v (%s), want kept=%v", rec, l.Terminated, l.Reason, tt.recommendedKept)
				}
				if l.LaunchedAt >= at && l.Terminated {
					gone = append(gone, fmt.Sprintf("%s at %s (%s)", l.NodeClaim, output.FormatDuration(l.TerminatedAt), l.Reason))
				}
			}
			if len(gone) > 0 {
				t.Errorf("%d replacements went away, want every one kept; first %s", len(gone), gone[0])
			}
			checkGolden(t, golden, res)
		})
	}
}

// TestPrespinHeldNodeExpiresOntoItsReplacement: in prespin mode the
// recommended node is held with one replacement launched for its pods; when
// the held node expires (expireAfter 30m), its pods move to that
// replacement and no second one is launched for them: the only launches at
// expiry are for the other nodes that expire with it. Before, expiry
// launched a new node for the held one too, and the prespun one sat empty
// until consolidation removed it.
func TestPrespinHeldNodeExpiresOntoItsReplacement(t *testing.T) {
	const at, expiry = 5 * time.Minute, 30 * time.Minute
	sc := loadExample(t, "rebalance-recommendation.yaml")
	sc.NodePools[0].Spec.Template.Spec.ExpireAfter = nsv1.MustParseNillableDuration("30m")
	// The replacement, launched at about 5m, would itself expire at 35m.
	sc.Duration = metav1.Duration{Duration: 34 * time.Minute}
	res := run(t, sc)
	if len(res.Interruptions) != 1 {
		t.Fatalf("%d interruption records, want the one recommendation", len(res.Interruptions))
	}
	rec := res.Interruptions[0].NodeClaim
	others, prespun, atExpiry := 0, []output.Launch{}, 0
	for _, l := range res.Launches {
		t.Logf("launch %s at %s, terminated=%v at %s (%s)", l.NodeClaim, output.FormatDuration(l.LaunchedAt), l.Terminated, output.FormatDuration(l.TerminatedAt), l.Reason)
		switch {
		case l.NodeClaim == rec:
			if !l.Terminated || l.TerminatedAt < expiry {
				t.Errorf("held node %s terminated=%v at %s, want it gone once it expired at 30m", rec, l.Terminated, output.FormatDuration(l.TerminatedAt))
			}
		case l.LaunchedAt < at:
			others++
		case l.LaunchedAt < expiry:
			prespun = append(prespun, l)
		default:
			atExpiry++
		}
	}
	if len(prespun) != 1 {
		t.Fatalf("%d nodes launched between the recommendation and the expiry, want the one prespun replacement", len(prespun))
	}
	if prespun[0].Terminated {
		t.Errorf("the prespun replacement %s went away at %s (%s), want it running the held node's pods", prespun[0].NodeClaim, output.FormatDuration(prespun[0].TerminatedAt), prespun[0].Reason)
	}
	if atExpiry != others {
		t.Errorf("%d nodes launched at the expiry, want %d: one for each other node that expired, none for the held one", atExpiry, others)
	}
}
