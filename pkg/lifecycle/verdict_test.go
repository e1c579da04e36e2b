package lifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestEmptinessVerdict(t *testing.T) {
	now := t0.Add(time.Hour)
	claim := func(name string, lastPodEvent time.Time) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)}}
		c.Status.NodeName = name + "-node"
		c.Status.LastPodEventTime = metav1.NewTime(lastPodEvent)
		SetCondition(&c.Status.Conditions, Condition(nsv1.ConditionInitialized, true, "", ""), 1, metav1.NewTime(t0))
		return c
	}
	deleting := func(c *nsv1.NodeClaim) *nsv1.NodeClaim {
		ts := metav1.NewTime(t0)
		c.DeletionTimestamp = &ts
		return c
	}
	node := func(annotations map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a-node", Annotations: annotations}}
	}
	pool := func(after string, budgets ...nsv1.Budget) *nsv1.NodePool {
		p := &nsv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration(after)
		p.Spec.Disruption.Budgets = budgets
		return p
	}
	idle := now.Add(-10 * time.Minute)
	// base is an empty, initialized claim idle for 10 minutes in a pool that
	// consolidates after 5; the budget allows 1 of its 2 claims.
	base := func() EmptinessInput {
		return EmptinessInput{
			Claim: claim("a", idle), Node: node(nil), Pool: pool("5m", nsv1.Budget{Nodes: "1"}),
			Pods:       []*corev1.Pod{pod(ownedBy("DaemonSet", true))},
			PoolClaims: []*nsv1.NodeClaim{claim("a", idle), claim("b", idle)}, Now: now,
		}
	}
	tests := []struct {
		name        string
		edit        func(*EmptinessInput)
		wantDelete  bool
		wantBusy    bool
		wantStamp   bool
		wantRequeue time.Duration
		wantErr     bool
	}{
		{name: "empty, eligible and in budget", edit: func(*EmptinessInput) {}, wantDelete: true},
		{name: "consolidateAfter not elapsed requeues for the rest", edit: func(in *EmptinessInput) {
			in.Claim = claim("a", now.Add(-2*time.Minute))
		}, wantRequeue: 3 * time.Minute},
		{name: "emptied just now after being busy is stamped and waits the full consolidateAfter", edit: func(in *EmptinessInput) {
			in.WasBusy = true
		}, wantStamp: true, wantRequeue: 5 * time.Minute},
		{name: "do-not-disrupt node is kept without requeue", edit: func(in *EmptinessInput) {
			in.Node = node(map[string]string{nsv1.AnnotationDoNotDisrupt: "true"})
		}},
		{name: "workload pod makes it busy", edit: func(in *EmptinessInput) {
			in.Pods = append(in.Pods, pod(ownedBy("ReplicaSet", true)))
		}, wantBusy: true},
		{name: "consolidateAfter Never keeps it without requeue", edit: func(in *EmptinessInput) {
			in.Pool = pool("Never", nsv1.Budget{Nodes: "1"})
		}},
		{name: "a nominated pod holds it", edit: func(in *EmptinessInput) {
			in.Nominated = true
		}, wantRequeue: EmptinessRetry},
		{name: "budget exhausted by a claim being deleted", edit: func(in *EmptinessInput) {
			in.PoolClaims[1] = deleting(in.PoolClaims[1])
		}, wantRequeue: EmptinessRetry},
		{name: "budget exhausted by a recent deletion the view lacks", edit: func(in *EmptinessInput) {
			in.RecentlyDeleted = func(name string) bool { return name == "b" }
		}, wantRequeue: EmptinessRetry},
		{name: "zero budget", edit: func(in *EmptinessInput) {
			in.Pool = pool("5m", nsv1.Budget{Nodes: "0"})
		}, wantRequeue: EmptinessRetry},
		{name: "an unparsable budget allows nothing and is reported", edit: func(in *EmptinessInput) {
			in.Pool = pool("5m", nsv1.Budget{Nodes: "ten"})
		}, wantRequeue: EmptinessRetry, wantErr: true},
		{name: "unregistered claim is left alone", edit: func(in *EmptinessInput) {
			in.Node = nil
		}},
		{name: "claim being deleted is left alone", edit: func(in *EmptinessInput) {
			in.Claim = deleting(in.Claim)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			tt.edit(&in)
			before := in.Claim.Status.LastPodEventTime
			got := EmptinessVerdict(in)
			if got.Delete != tt.wantDelete || got.Busy != tt.wantBusy || got.StampEmptied != tt.wantStamp ||
				got.RequeueAfter != tt.wantRequeue || (got.BudgetErr != nil) != tt.wantErr {
				t.Fatalf("EmptinessVerdict = %+v, want delete=%v busy=%v stamp=%v requeue=%v err=%v",
					got, tt.wantDelete, tt.wantBusy, tt.wantStamp, tt.wantRequeue, tt.wantErr)
			}
			if got.Reason == "" {
				t.Errorf("verdict has no reason")
			}
			if !in.Claim.Status.LastPodEventTime.Equal(&before) {
				t.Errorf("verdict mutated the claim's LastPodEventTime")
			}
		})
	}
}
