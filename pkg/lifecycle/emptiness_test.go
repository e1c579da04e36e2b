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
