package lifecycle

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsProvisionable(t *testing.T) {
	now := metav1.NewTime(t0)
	tests := []struct {
		name       string
		pod        *corev1.Pod
		at         time.Time
		want       bool
		wantReason string
		wantWait   time.Duration
	}{
		{name: "unschedulable pod", pod: pod(unschedulable), want: true},
		{name: "not yet tried by kube-scheduler", pod: pod(), at: t0.Add(time.Second), wantReason: "not yet judged by kube-scheduler; planned without a verdict in 1s", wantWait: time.Second},
		{name: "no verdict for VerdictWait", pod: pod(), at: t0.Add(VerdictWait), want: true},
		{name: "another scheduler's pod without a verdict", pod: pod(func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }), at: t0.Add(time.Hour),
			wantReason: "not yet marked Unschedulable by its scheduler"},
		{name: "another scheduler's unschedulable pod", pod: pod(unschedulable, func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }), want: true},
		{name: "scheduling gated", pod: pod(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
		}), at: t0.Add(time.Hour), wantReason: "held by scheduling gate example.com/quota"},
		{name: "scheduled False for another reason", pod: pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulerError"}}
		}), at: t0.Add(time.Hour), wantReason: "not yet marked Unschedulable"},
		{name: "bound", pod: pod(unschedulable, func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), wantReason: "bound to node n1"},
		{name: "terminating", pod: pod(unschedulable, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), wantReason: "terminating"},
		{name: "finished", pod: pod(unschedulable, phase(corev1.PodSucceeded)), wantReason: "finished"},
		{name: "nominated by preemption", pod: pod(unschedulable, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n2" }), wantReason: "nominated to node n2"},
		{name: "daemonset pod", pod: pod(unschedulable, ownedBy("DaemonSet", true)), wantReason: "DaemonSet"},
		{name: "daemonset owner without controller bit", pod: pod(unschedulable, ownedBy("DaemonSet", false)), wantReason: "DaemonSet"},
		{name: "static pod", pod: pod(unschedulable, ownedBy("Node", true)), wantReason: "static pod"},
		{name: "replicaset pod", pod: pod(unschedulable, ownedBy("ReplicaSet", true)), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := tt.at
			if at.IsZero() {
				at = t0
			}
			got, reason := IsProvisionable(tt.pod, at)
			if got != tt.want {
				t.Fatalf("IsProvisionable = %v (%q), want %v", got, reason, tt.want)
			}
			if fast := Provisionable(tt.pod, at); fast != tt.want {
				t.Fatalf("Provisionable = %v, want %v", fast, tt.want)
			}
			if !strings.Contains(reason, tt.wantReason) || (tt.want && reason != "") {
				t.Fatalf("reason = %q, want it to contain %q", reason, tt.wantReason)
			}
			wait, waiting := ProvisionableIn(tt.pod, at)
			if waiting != (tt.wantWait > 0) || wait != tt.wantWait {
				t.Fatalf("ProvisionableIn = %s, %v; want %s", wait, waiting, tt.wantWait)
			}
		})
	}
}
