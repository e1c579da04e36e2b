package budget

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// claimState is one claim of a test pool.
type claimState struct {
	launching    bool   // no Initialized condition yet (a replacement in flight)
	deleting     bool   // deletionTimestamp set
	command      bool   // marked by a disruption command
	hold         bool   // the command holds its candidate (prespin)
	mark         string // Disrupting condition's reason, if marked by the interruption handler
	notReady     bool   // its node's Ready condition is False
	recent       bool   // the caller acted on it lately
	otherPool    bool
	noNodeStatus bool // its node has not reported Ready at all
}

func testClaims(states []claimState) ([]*nsv1.NodeClaim, map[string]*corev1.Node, map[string]bool) {
	var claims []*nsv1.NodeClaim
	nodes, recent := map[string]*corev1.Node{}, map[string]bool{}
	for i, s := range states {
		pool := "general"
		if s.otherPool {
			pool = "other"
		}
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c" + string(rune('a'+i)), Labels: map[string]string{nsv1.LabelNodePool: pool}, Annotations: map[string]string{}}}
		if !s.launching {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: nsv1.ConditionInitialized, Status: metav1.ConditionTrue})
		}
		if s.deleting {
			t := metav1.Now()
			c.DeletionTimestamp = &t
		}
		if s.command {
			c.Annotations[nsv1.AnnotationDisruptionCommand] = "cmd-1"
		}
		if s.hold {
			c.Annotations[nsv1.AnnotationDisruptionHold] = "true"
		}
		if s.mark != "" {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue, Reason: s.mark})
		}
		recent[c.Name] = s.recent
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
		if !s.noNodeStatus {
			st := corev1.ConditionTrue
			if s.notReady {
				st = corev1.ConditionFalse
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		}
		nodes[c.Name] = n
		claims = append(claims, c)
	}
	return claims, nodes, recent
}

func ready(n int) []claimState { return make([]claimState, n) }

func TestCount(t *testing.T) {
	tests := []struct {
		name   string
		states []claimState
		want   Ledger
	}{
		{name: "initialized nodes", states: ready(3), want: Ledger{Nodes: 3}},
		{name: "a replacement launching is not a node", states: append(ready(10), claimState{launching: true}), want: Ledger{Nodes: 10}},
		{name: "a launching claim being deleted counts for nothing", states: append(ready(2), claimState{launching: true, deleting: true}), want: Ledger{Nodes: 2}},
		{name: "deleting", states: append(ready(2), claimState{deleting: true}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "marked by a command", states: append(ready(2), claimState{command: true}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "acted on lately", states: append(ready(2), claimState{recent: true}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "not Ready", states: append(ready(2), claimState{notReady: true}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "no Ready condition yet is not lost", states: append(ready(2), claimState{noNodeStatus: true}), want: Ledger{Nodes: 3}},
		{name: "a spot interruption's mark is disrupting", states: append(ready(2), claimState{mark: nsv1.DisruptingReasonSpotInterruption}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "a rebalance recommendation's mark is not", states: append(ready(2), claimState{mark: nsv1.DisruptingReasonRebalanceRecommendation}), want: Ledger{Nodes: 3}},
		{name: "a prespin command holding its rebalance-marked candidate is not disrupting",
			states: append(ready(2), claimState{command: true, hold: true, mark: nsv1.DisruptingReasonRebalanceRecommendation}), want: Ledger{Nodes: 3}},
		{name: "a rebalance command in drain mode is",
			states: append(ready(2), claimState{command: true, mark: nsv1.DisruptingReasonRebalanceRecommendation}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "a held command whose candidate then got the interruption warning is",
			states: append(ready(2), claimState{command: true, hold: true, mark: nsv1.DisruptingReasonSpotInterruption}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "deleting and not Ready count once", states: append(ready(2), claimState{deleting: true, notReady: true}), want: Ledger{Nodes: 3, Disrupting: 1}},
		{name: "other pools apart", states: append(ready(2), claimState{otherPool: true, deleting: true}), want: Ledger{Nodes: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, nodes, recent := testClaims(tt.states)
			got := Count(claims, func(c *nsv1.NodeClaim) *corev1.Node { return nodes[c.Name] }, func(n string) bool { return recent[n] })["general"]
			if got != tt.want {
				t.Fatalf("Count = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestTenPercentOfTenWithOneLaunching pins issue 22's case: 10 % of a
// pool of 10 nodes while a replacement launches is 1 node, not 2.
func TestTenPercentOfTenWithOneLaunching(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		states []claimState
		want   int
	}{
		{name: "nothing disrupting", states: append(ready(10), claimState{launching: true}), want: 1},
		{name: "the replaced node deleting", states: append(ready(9), claimState{launching: true}, claimState{deleting: true}), want: 0},
		{name: "the replaced node marked by its command", states: append(ready(9), claimState{launching: true}, claimState{command: true}), want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claims, nodes, _ := testClaims(tt.states)
			l := Count(claims, func(c *nsv1.NodeClaim) *corev1.Node { return nodes[c.Name] }, nil)["general"]
			for _, r := range append(nsv1.DisruptionReasons, nsv1.DisruptionReasonRebalance) {
				if got, err := Allowed(nil, r, l, at); err != nil || got != tt.want {
					t.Fatalf("%s: Allowed = %d, %v over %+v; want %d", r, got, err, l, tt.want)
				}
			}
		})
	}
}

func TestAllowanceTakes(t *testing.T) {
	a := NewAllowance([]nsv1.Budget{{Nodes: "3"}, {Nodes: "1", Reasons: reasons(nsv1.DisruptionReasonDrifted)}}, Ledger{Nodes: 20, Disrupting: 1}, time.Time{})
	if a.Allowed(nsv1.DisruptionReasonEmpty) != 2 || a.Allowed(nsv1.DisruptionReasonDrifted) != 0 {
		t.Fatalf("allowed: empty %d, drifted %d", a.Allowed(nsv1.DisruptionReasonEmpty), a.Allowed(nsv1.DisruptionReasonDrifted))
	}
	a.Take()
	a.Take()
	if a.Allowed(nsv1.DisruptionReasonEmpty) != 0 || a.Ledger().Disrupting != 3 {
		t.Fatalf("after two takes: allowed %d, ledger %+v", a.Allowed(nsv1.DisruptionReasonEmpty), a.Ledger())
	}
}
