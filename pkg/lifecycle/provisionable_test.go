package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsProvisionable(t *testing.T) {
	now := metav1.NewTime(t0)
	tests := []struct {
		name       string
		pod        *corev1.Pod
		want       bool
		wantReason string
	}{
		{name: "unschedulable pod", pod: pod(unschedulable), want: true},
		{name: "not yet tried by kube-scheduler", pod: pod(), wantReason: "not yet marked Unschedulable"},
		{name: "scheduled False for another reason", pod: pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
		}), wantReason: "not yet marked Unschedulable"},
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
			got, reason := IsProvisionable(tt.pod)
			if got != tt.want {
				t.Fatalf("IsProvisionable = %v (%q), want %v", got, reason, tt.want)
			}
			if !strings.Contains(reason, tt.wantReason) || (tt.want && reason != "") {
				t.Fatalf("reason = %q, want it to contain %q", reason, tt.wantReason)
			}
		})
	}
}
