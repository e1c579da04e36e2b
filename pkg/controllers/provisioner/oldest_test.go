package provisioner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOldestAge(t *testing.T) {
	now := time.Unix(10_000, 0)
	pod := func(age time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	}
	if got := oldestAge(nil, now); got != 0 {
		t.Errorf("no pods: %v, want 0", got)
	}
	if got := oldestAge([]*corev1.Pod{pod(time.Minute), pod(11 * time.Minute), pod(0)}, now); got != 660 {
		t.Errorf("oldest of 1m, 11m, 0: %v s, want 660", got)
	}
}
