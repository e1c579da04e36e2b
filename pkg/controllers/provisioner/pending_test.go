package provisioner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// TestPendingReleasesNominationsOfReadyTargets: a pod nominated to a claim
// stays out of the batch while the claim launches, and comes back once the
// claim's node has been ready for provisioning.NominationGrace without taking it.
func TestPendingReleasesNominationsOfReadyTargets(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	unschedulable := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	}
	claim := func(name string, initializedAgo time.Duration) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if initializedAgo >= 0 {
			c.Status.NodeName = name + "-node"
			lifecycle.SetCondition(&c.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now.Add(-initializedAgo)))
		}
		return c
	}
	tests := []struct {
		name          string
		target        *nsv1.NodeClaim
		nominateTo    string
		wantPending   bool
		wantNominated bool
		after         time.Duration // the clock moves on after the nomination
	}{
		{name: "nominated to a launching claim", target: claim("c1", -1), nominateTo: "c1", wantNominated: true},
		{name: "nominated to a claim ready for a moment", target: claim("c2", 5*time.Second), nominateTo: "c2", wantNominated: true},
		{name: "nominated to a claim ready past the grace", target: claim("c3", time.Minute), nominateTo: "c3", wantPending: true},
		{name: "nominated to the claim's node, ready past the grace", target: claim("c4", time.Minute), nominateTo: "c4-node", wantPending: true},
		{name: "not nominated", target: claim("c5", -1), wantPending: true},
		{name: "nominated to a launching claim, past the TTL", target: claim("c6", -1), nominateTo: "c6", wantNominated: true, after: 2 * time.Hour},
		{name: "nominated to a target not in the snapshot, past the TTL", target: claim("c7", -1), nominateTo: "gone", wantPending: true, after: 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(now)
			cluster := state.NewCluster(nil, clk, time.Hour)
			p := &Provisioner{cluster: cluster, clk: clk}
			pod := unschedulable("p")
			if tt.nominateTo != "" {
				cluster.Nominate(pod.UID, tt.nominateTo)
			}
			clk.Step(tt.after)
			snap := &state.Snapshot{Pods: []*corev1.Pod{pod}, NodeClaims: []*nsv1.NodeClaim{tt.target}}
			got := p.pending(snap)
			pending, nominated := got.Pods, got.Held
			if (len(pending) == 1) != tt.wantPending {
				t.Errorf("pending = %d pods, want pending %v", len(pending), tt.wantPending)
			}
			if (len(nominated[tt.nominateTo]) == 1) != tt.wantNominated {
				t.Errorf("nominated = %v, want nominated %v", nominated, tt.wantNominated)
			}
			if _, _, still := cluster.Nominated(pod.UID); still != tt.wantNominated {
				t.Errorf("nomination held = %v, want %v", still, tt.wantNominated)
			}
		})
	}
}

// TestPendingLeavesPodsOfMarkedNodesToTheExecutor: a pod still running on
// a node marked Disrupting (a rebalance recommendation in prespin mode) is
// no pending pod, whatever nomination it carried: the disruption executor
// launched its replacement as a command, and the pod is planned only if the
// drain evicts it without a place. (The provisioner used to plan such pods
// through nominations, renewed while the node ran, a second road that the
// planner took for empty capacity.)
func TestPendingLeavesPodsOfMarkedNodesToTheExecutor(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	marked := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "old"}}
	marked.Status.NodeName = "old-node"
	lifecycle.SetCondition(&marked.Status.Conditions, metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue,
		Reason: nsv1.DisruptingReasonRebalanceRecommendation}, 1, metav1.NewTime(now))
	repl := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "repl"}}
	repl.Status.NodeName = "repl-node"
	lifecycle.SetCondition(&repl.Status.Conditions, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(now))
	ctrl := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "web",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: &ctrl}}},
		Spec: corev1.PodSpec{NodeName: "old-node"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	snap := &state.Snapshot{Pods: []*corev1.Pod{pod}, NodeClaims: []*nsv1.NodeClaim{marked, repl},
		ClaimByNode: map[string]*nsv1.NodeClaim{"old-node": marked, "repl-node": repl}}

	clk := clocktesting.NewFakeClock(now)
	cluster := state.NewCluster(nil, clk, time.Minute)
	p := &Provisioner{cluster: cluster, clk: clk}
	cluster.Nominate(pod.UID, "repl")
	for i := range 3 {
		clk.Step(50 * time.Second)
		got := p.pending(snap)
		if len(got.Pods) != 0 || len(got.Held) != 0 || len(got.Lapsed) != 0 {
			t.Fatalf("cycle %d: pending %d, held %v, lapsed %v; want the running pod left alone", i, len(got.Pods), got.Held, got.Lapsed)
		}
	}
}
