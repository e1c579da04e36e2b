package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

func TestConditionsOf(t *testing.T) {
	launched := func(c *nsv1.NodeClaim, _ *corev1.Node) {
		lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), 1, metav1.NewTime(now.Add(-2*time.Hour)))
	}
	notInitialized := func(c *nsv1.NodeClaim, _ *corev1.Node) {
		c.Status.Conditions = nil
		lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionLaunched, true, "", ""), 1, metav1.NewTime(now.Add(-2*time.Hour)))
	}
	oldTemplate := claimAnnotation(nsv1.AnnotationNodePoolHash, "an-older-template")
	tests := []struct {
		name           string
		pool           []poolOpt
		node           []nodeOpt
		noPool         bool
		drifted        DriftReason
		consolidatable bool
		recheck        time.Duration // from now; 0: none
	}{
		{name: "quiet for an hour, consolidateAfter 0s", node: []nodeOpt{launched, lastPodEvent(time.Hour)}, consolidatable: true},
		{name: "a pod 10s ago, consolidateAfter 5m: rechecked when it passes", pool: []poolOpt{consolidateAfter("5m")},
			node: []nodeOpt{launched, lastPodEvent(10 * time.Second)}, recheck: 5*time.Minute - 10*time.Second},
		{name: "consolidateAfter exactly passed", pool: []poolOpt{consolidateAfter("5m")}, node: []nodeOpt{launched, lastPodEvent(5 * time.Minute)}, consolidatable: true},
		{name: "consolidateAfter Never", pool: []poolOpt{consolidateAfter("Never")}, node: []nodeOpt{launched, lastPodEvent(time.Hour)}},
		{name: "not initialized", node: []nodeOpt{notInitialized, lastPodEvent(time.Hour)}},
		{name: "template drifted", node: []nodeOpt{launched, oldTemplate, lastPodEvent(time.Hour)}, drifted: DriftNodePool, consolidatable: true},
		{name: "template drifted, not launched: not drifted", node: []nodeOpt{func(c *nsv1.NodeClaim, _ *corev1.Node) { c.Status.Conditions = nil }, oldTemplate}},
		{name: "its pool is gone", noPool: true, node: []nodeOpt{launched, oldTemplate, lastPodEvent(time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(pool("p", tt.pool...))
			claim := w.snap.ClaimByNode[w.node("p", "small", "zone-a", nsv1.CapacityTypeOnDemand, tt.node...)]
			p := w.pools["p"]
			if tt.noPool {
				p = nil
			}
			got := ConditionsOf(claim, p, w.classes["default"], now)
			switch {
			case tt.drifted == "" && got.Drifted != nil:
				t.Errorf("Drifted %+v, want none", *got.Drifted)
			case tt.drifted != "" && (got.Drifted == nil || got.Drifted.Reason != string(tt.drifted) || got.Drifted.Status != metav1.ConditionTrue):
				t.Errorf("Drifted %+v, want True with reason %s", got.Drifted, tt.drifted)
			}
			if (got.Consolidatable != nil) != tt.consolidatable {
				t.Errorf("Consolidatable %+v, want set %v", got.Consolidatable, tt.consolidatable)
			}
			var wantRecheck time.Time
			if tt.recheck > 0 {
				wantRecheck = now.Add(tt.recheck)
			}
			if !got.Recheck.Equal(wantRecheck) {
				t.Errorf("recheck at %v, want %v", got.Recheck, wantRecheck)
			}
		})
	}
}

// TestClaimConditionsApply: set, kept (with its transition time) while it
// holds, removed when it no longer does; other conditions untouched.
func TestClaimConditionsApply(t *testing.T) {
	t0, t1 := metav1.NewTime(now), metav1.NewTime(now.Add(time.Minute))
	ready := metav1.Condition{Type: nsv1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: t0}
	conds := []metav1.Condition{ready}
	drift := &metav1.Condition{Type: nsv1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: string(DriftAMI), Message: "image"}
	cons := &metav1.Condition{Type: nsv1.ConditionConsolidatable, Status: metav1.ConditionTrue, Reason: nsv1.ConditionConsolidatable}
	if !(ClaimConditions{Drifted: drift, Consolidatable: cons}).Apply(&conds, 1, t0) || len(conds) != 3 {
		t.Fatalf("first apply: %+v", conds)
	}
	if (ClaimConditions{Drifted: drift, Consolidatable: cons}).Apply(&conds, 1, t1) {
		t.Errorf("the same conditions again reported a change")
	}
	if c := findCondition(conds, nsv1.ConditionDrifted); c == nil || !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Drifted lost its transition time: %+v", c)
	}
	shared := conds
	if !(ClaimConditions{Drifted: drift}).Apply(&conds, 1, t1) {
		t.Fatal("removing Consolidatable reported no change")
	}
	if findCondition(conds, nsv1.ConditionConsolidatable) != nil || findCondition(conds, nsv1.ConditionInitialized) == nil || len(conds) != 2 {
		t.Errorf("after removing Consolidatable: %+v", conds)
	}
	if findCondition(shared, nsv1.ConditionConsolidatable) == nil {
		t.Errorf("removal changed the caller's old slice in place: %+v", shared)
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
