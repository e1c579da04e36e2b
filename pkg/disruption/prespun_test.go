package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// markedFor is a claim the interruption handler marked Disrupting for
// reason half a minute ago, with deadline (none when zero).
func markedFor(reason string, deadline time.Time) nodeOpt {
	return func(c *nsv1.NodeClaim, _ *corev1.Node) {
		lifecycle.SetCondition(&c.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
			Reason: reason, Message: "notice"}, 1, metav1.NewTime(now.Add(-30*time.Second)))
		if !deadline.IsZero() {
			c.Annotations[nsv1.AnnotationDisruptionDeadline] = deadline.UTC().Format(time.RFC3339)
		}
	}
}

// markedForRebalance is a claim marked for a rebalance recommendation.
var markedForRebalance = markedFor(nsv1.DisruptingReasonRebalanceRecommendation, time.Time{})

// TestInterruptionStep: the interruption handler's marks are commands of
// the planner, first of the plan. A real interruption is forced (no
// budget, PDB or do-not-disrupt holds it; the ledger already counts the
// node) and carries the notice's deadline; a rebalance recommendation
// holds in prespin mode and is a budgeted voluntary replacement in drain
// mode.
func TestInterruptionStep(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	deadline := now.Add(2 * time.Minute)
	spot := markedFor(nsv1.DisruptingReasonSpotInterruption, deadline)
	type world struct {
		in     Input
		marked string
	}
	type setup struct {
		budget string
		mark   nodeOpt
		mode   interruption.RebalanceMode
		pod    []podOpt
		node   []nodeOpt
		pdb    bool // a PDB allowing no disruption covers the pods
		empty  bool // an empty node, consolidateAfter passed, joins
	}
	// build: pool p with the marked node p-01 running two 700m pods that
	// must run in zone-a next to a fuller p-04, so the pods need a new
	// node; the empty node (p-06) is in zone-b.
	inZoneA := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-a"} }
	build := func(s setup) world {
		var popts []poolOpt
		if s.budget != "" {
			popts = append(popts, budgets(nsv1.Budget{Nodes: s.budget}))
		}
		w := newWorld(pool("p", popts...))
		a := w.node("p", "small", "zone-a", od, append([]nodeOpt{s.mark}, s.node...)...)
		for range 2 {
			w.pod(a, "700m", append([]podOpt{labelled("tier", "front"), inZoneA}, s.pod...)...)
		}
		b := w.node("p", "small", "zone-a", od, lastPodEvent(time.Hour))
		w.pod(b, "1500m")
		if s.empty {
			w.node("p", "small", "zone-b", od, lastPodEvent(time.Hour))
		}
		if s.pdb {
			w.pdb("front", 0, map[string]string{"tier": "front"})
		}
		return world{in: w.input(func(in *Input) { in.Options.Rebalance = s.mode }), marked: a}
	}
	doNotDisrupt := podAnnotation(nsv1.AnnotationDoNotDisrupt, "true")
	tests := []struct {
		name     string
		w        world
		want     []string
		forced   bool
		hold     bool
		reason   nsv1.DisruptionReason
		deadline time.Time
		wantSkip SkipReason
	}{
		{name: "spot warning: replaced, forced, with the deadline", w: build(setup{mark: spot}),
			want: []string{"Interruption[p-01]+1"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		{name: "spot warning ignores a budget of 0", w: build(setup{budget: "0", mark: spot}),
			want: []string{"Interruption[p-01]+1"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		{name: "spot warning ignores do-not-disrupt", w: build(setup{mark: spot, pod: []podOpt{doNotDisrupt}}),
			want: []string{"Interruption[p-01]+1"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		{name: "spot warning ignores a PDB that allows nothing", w: build(setup{mark: spot, pdb: true}),
			want: []string{"Interruption[p-01]+1"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		// The ledger counts the marked node once: with 1 node allowed the
		// empty node waits, with 2 it goes (taking the budget twice for the
		// interruption would hold it too).
		{name: "spot warning uses up the budget: an empty node waits", w: build(setup{budget: "1", mark: spot, empty: true}),
			want: []string{"Interruption[p-01]+1"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		{name: "spot warning counts once against the budget", w: build(setup{budget: "2", mark: spot, empty: true}),
			want: []string{"Interruption[p-01]+1", "Emptiness[p-06]"}, forced: true, reason: nsv1.DisruptionReasonInterrupted, deadline: deadline},
		{name: "rebalance, prespin: replacement launched, node held, budget 0 does not matter", w: build(setup{budget: "0", mark: markedForRebalance, mode: interruption.RebalancePrespin}),
			want: []string{"Interruption[p-01]+1"}, hold: true, reason: nsv1.DisruptionReasonRebalance},
		{name: "rebalance, prespin takes no budget: an empty node still goes", w: build(setup{budget: "1", mark: markedForRebalance, empty: true}),
			want: []string{"Interruption[p-01]+1", "Emptiness[p-06]"}, hold: true, reason: nsv1.DisruptionReasonRebalance},
		{name: "rebalance, drain: a budgeted voluntary replacement", w: build(setup{budget: "1", mark: markedForRebalance, mode: interruption.RebalanceDrain, empty: true}),
			want: []string{"Interruption[p-01]+1"}, reason: nsv1.DisruptionReasonRebalance},
		{name: "rebalance, drain: held back by a budget of 0", w: build(setup{budget: "0", mark: markedForRebalance, mode: interruption.RebalanceDrain}),
			wantSkip: SkipBudget},
		{name: "rebalance, drain: held back by do-not-disrupt", w: build(setup{mark: markedForRebalance, mode: interruption.RebalanceDrain, pod: []podOpt{doNotDisrupt}}),
			wantSkip: SkipPodDoNotDisrupt},
		{name: "rebalance, drain: held back by a PDB", w: build(setup{mark: markedForRebalance, mode: interruption.RebalanceDrain, pdb: true}),
			wantSkip: SkipPodDisruptionBudget},
		{name: "a marked node already in a command is not planned again",
			w: build(setup{mark: spot, node: []nodeOpt{claimAnnotation(nsv1.AnnotationDisruptionCommand, "d-1"), claimAnnotation(nsv1.AnnotationDisruptionReplacements, "p-x")}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Compute(tt.w.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(plan); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("actions %v, want %v\nskips: %+v", got, tt.want, plan.Skipped)
			}
			for _, s := range plan.Skipped {
				if s.Node == tt.w.marked && s.Reason != tt.wantSkip {
					t.Errorf("marked node skipped %s (%s), want %q", s.Reason, s.Message, tt.wantSkip)
				}
			}
			if tt.wantSkip != "" {
				found := false
				for _, s := range plan.Skipped {
					found = found || (s.Node == tt.w.marked && s.Reason == tt.wantSkip)
				}
				if !found {
					t.Errorf("marked node not skipped %s: %+v", tt.wantSkip, plan.Skipped)
				}
			}
			if len(plan.Actions) == 0 {
				return
			}
			a := plan.Actions[0]
			if a.Method != MethodInterruption || a.Forced != tt.forced || a.Hold != tt.hold || a.Reason != tt.reason || !a.Deadline.Equal(tt.deadline) {
				t.Errorf("action %s forced=%v hold=%v reason=%s deadline=%v, want forced=%v hold=%v reason=%s deadline=%v",
					a.Method, a.Forced, a.Hold, a.Reason, a.Deadline, tt.forced, tt.hold, tt.reason, tt.deadline)
			}
			if len(a.Replacements) != 1 || len(a.Replacements[0].Pods) != 2 {
				t.Errorf("the replacement does not take the node's 2 pods: %+v", a.Replacements)
			}
		})
	}
}

// TestHeldCommand: a rebalance recommendation's prespin command (issue 22's
// loop): its candidate keeps running, its replacement stays empty for
// hours. The replacement is no candidate while the candidate exists (its
// replacement-for annotation), its room is not offered to another node's
// pods, the candidate is not planned again, and neither uses up the pool's
// budget while held.
func TestHeldCommand(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
	a := w.node("p", "small", "zone-a", od, markedForRebalance,
		claimAnnotation(nsv1.AnnotationDisruptionCommand, "d-1"), claimAnnotation(nsv1.AnnotationDisruptionReplacements, "p-04"),
		claimAnnotation(nsv1.AnnotationDisruptionHold, "true"))
	for range 2 {
		w.pod(a, "700m")
	}
	w.node("p", "small", "zone-a", od, lastPodEvent(time.Hour), claimAnnotation(nsv1.AnnotationReplacementFor, "d-1"))
	c := w.node("p", "small", "zone-a", od, lastPodEvent(time.Hour))
	w.pod(c, "1")
	plan, err := Compute(w.input())
	if err != nil {
		t.Fatal(err)
	}
	if got := summaries(plan); len(got) != 0 {
		t.Fatalf("actions %v, want none: the held command's replacement is neither removed nor filled", got)
	}
	skips := map[string]SkipReason{}
	for _, s := range plan.Skipped {
		skips[s.Node] = s.Reason
	}
	if skips["p-04"] != SkipReplacementInProgress {
		t.Errorf("replacement p-04 skipped %q, want %s", skips["p-04"], SkipReplacementInProgress)
	}
	if r, ok := skips["p-01"]; ok {
		t.Errorf("held candidate p-01 considered again (skipped %s)", r)
	}
	if got := plan.Allowed["p"][nsv1.DisruptionReasonEmpty]; got != 1 {
		t.Errorf("pool p allows %d more, want 1: a held candidate does not use up the budget", got)
	}
}

// A node a prespin command holds waits for an interruption that may never
// come; drift and expiry do not wait with it. An expired held node is
// replaced at once (forced); a drifted one within the budget, as any other
// drifted node. Consolidation still leaves it. The command's replacement is
// already running for the held node's pods, so they go there rather than to
// a second new node — unless it has not initialized yet (room that may
// never come is not counted on) or it is drifted itself (the pods would only
// move twice).
func TestHeldNodeStillDriftsAndExpires(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	held := func(w *world, opts []nodeOpt, replacement ...nodeOpt) {
		a := w.node("p", "small", "zone-a", od, append([]nodeOpt{markedForRebalance,
			claimAnnotation(nsv1.AnnotationDisruptionCommand, "d-1"), claimAnnotation(nsv1.AnnotationDisruptionReplacements, "p-03"),
			claimAnnotation(nsv1.AnnotationDisruptionHold, "true")}, opts...)...)
		w.pod(a, "1500m")
		w.node("p", "small", "zone-a", od, append([]nodeOpt{lastPodEvent(time.Hour), claimAnnotation(nsv1.AnnotationReplacementFor, "d-1")}, replacement...)...)
	}
	notInitialized := func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.Conditions = nil }
	for _, tc := range []struct {
		name  string
		build func() Input
		want  string
	}{
		{name: "expired: its pods go to the running replacement", want: "Expiration[p-01]", build: func() Input {
			w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "0"})))
			held(w, []nodeOpt{createdAgo(721 * time.Hour)})
			return w.input()
		}},
		{name: "expired, the replacement not initialized: a new node", want: "Expiration[p-01]+1", build: func() Input {
			w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "0"})))
			held(w, []nodeOpt{createdAgo(721 * time.Hour)}, notInitialized)
			return w.input()
		}},
		{name: "drifted template: its pods go to the running replacement", want: "Drift[p-01]", build: func() Input {
			w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
			held(w, []nodeOpt{claimAnnotation(nsv1.AnnotationNodePoolHash, "an-older-template")})
			return w.input()
		}},
		{name: "drifted image, the replacement on the old image too: a new node", want: "Drift[p-01]+1", build: func() Input {
			w := newWorld(pool("p", budgets(nsv1.Budget{Nodes: "1"})))
			held(w, nil)
			w.classes["default"].Status.AMIs = []awsv1.AMI{{ID: "ami-2", Architecture: "amd64"}}
			return w.input()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Compute(tc.build())
			if err != nil {
				t.Fatal(err)
			}
			got := summaries(plan)
			var onHeld []*Action
			for _, a := range plan.Actions {
				if strings.Contains(summary(a), "[p-01]") {
					onHeld = append(onHeld, a)
				}
			}
			if len(onHeld) != 1 || summary(onHeld[0]) != tc.want {
				t.Fatalf("actions %v, want exactly one on the held node: %s", got, tc.want)
			}
			// Without a new node, the pod goes to the running replacement
			// (a forced action would also go with the pod stranded).
			toReplacement := strings.Contains(onHeld[0].Message, "1 to p-03, launched for them")
			if toReplacement != (len(onHeld[0].Replacements) == 0) {
				t.Errorf("message %q: want the pod moved to p-03 exactly when no new node is launched", onHeld[0].Message)
			}
		})
	}
}
