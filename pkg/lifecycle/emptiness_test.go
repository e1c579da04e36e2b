package lifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func TestIsEmpty(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{name: "no pods", want: true},
		{name: "only daemons, static and finished pods", pods: []*corev1.Pod{
			pod(ownedBy("DaemonSet", true)), pod(ownedBy("Node", true)), pod(phase(corev1.PodFailed))}, want: true},
		{name: "a workload pod", pods: []*corev1.Pod{pod(ownedBy("DaemonSet", true)), pod(ownedBy("ReplicaSet", true))}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsEmpty(tt.pods); got != tt.want {
				t.Fatalf("IsEmpty = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEmptySince(t *testing.T) {
	poolAfter := func(s string) *nsv1.NodePool {
		p := &nsv1.NodePool{}
		if s != "" {
			p.Spec.Disruption.ConsolidateAfter = nsv1.MustParseNillableDuration(s)
		}
		return p
	}
	initialized := claim(t0, cond(nsv1.ConditionInitialized, metav1.ConditionTrue, t0.Add(time.Minute), ""))
	withPodEvent := claim(t0, cond(nsv1.ConditionInitialized, metav1.ConditionTrue, t0.Add(time.Minute), ""))
	withPodEvent.Status.LastPodEventTime = metav1.NewTime(t0.Add(10 * time.Minute))
	tests := []struct {
		name   string
		claim  *nsv1.NodeClaim
		pool   *nsv1.NodePool
		want   time.Time
		wantOK bool
	}{
		{name: "never", claim: initialized, pool: poolAfter("Never")},
		{name: "from initialization", claim: initialized, pool: poolAfter("30s"), want: t0.Add(time.Minute + 30*time.Second), wantOK: true},
		{name: "from the last pod event", claim: withPodEvent, pool: poolAfter("1m"), want: t0.Add(11 * time.Minute), wantOK: true},
		{name: "unset is zero, from creation", claim: claim(t0), pool: poolAfter(""), want: t0, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := EmptySince(tt.claim, tt.pool)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Fatalf("EmptySince = %v %v, want %v %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestAllowedDisruptions(t *testing.T) {
	str := func(s string) *string { return &s }
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	tests := []struct {
		name       string
		budgets    []nsv1.Budget
		reason     nsv1.DisruptionReason
		total      int
		disrupting int
		now        time.Time
		want       int
		wantErr    bool
	}{
		{name: "default 10% rounds up", total: 3, want: 1},
		{name: "count", budgets: []nsv1.Budget{{Nodes: "5"}}, total: 20, want: 5},
		{name: "already disrupting is subtracted", budgets: []nsv1.Budget{{Nodes: "5"}}, total: 20, disrupting: 4, want: 1},
		{name: "never below zero", budgets: []nsv1.Budget{{Nodes: "1"}}, total: 20, disrupting: 4, want: 0},
		{name: "most restrictive wins", budgets: []nsv1.Budget{{Nodes: "50%"}, {Nodes: "3"}}, total: 20, want: 3},
		{name: "budget for another reason ignored", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Reasons: []nsv1.DisruptionReason{nsv1.DisruptionReasonDrifted}}},
			reason: nsv1.DisruptionReasonEmpty, total: 4, want: 4},
		{name: "scheduled budget inside its window", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(8 * time.Hour)}},
			total: 4, now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), want: 0},
		{name: "scheduled budget outside its window", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "0", Schedule: str("0 9 * * *"), Duration: dur(8 * time.Hour)}},
			total: 4, now: time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC), want: 4},
		{name: "bad schedule fails closed", budgets: []nsv1.Budget{{Nodes: "100%"}, {Nodes: "5", Schedule: str("whenever"), Duration: dur(time.Hour)}},
			total: 4, want: 0, wantErr: true},
		{name: "bad count fails closed", budgets: []nsv1.Budget{{Nodes: "lots"}}, total: 4, want: 0, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason := tt.reason
			if reason == "" {
				reason = nsv1.DisruptionReasonEmpty
			}
			got, err := AllowedDisruptions(tt.budgets, reason, tt.total, tt.disrupting, tt.now)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("AllowedDisruptions = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
