package lifecycle

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

func names(tiers [][]*corev1.Pod) [][]string {
	var out [][]string
	for _, t := range tiers {
		var n []string
		for _, p := range t {
			n = append(n, p.Name)
		}
		out = append(out, n)
	}
	return out
}

func TestDrainOrder(t *testing.T) {
	now := metav1.NewTime(t0)
	tests := []struct {
		name string
		pods []*corev1.Pod
		want [][]string
	}{
		{name: "nothing to drain", want: nil},
		{name: "all four tiers", pods: []*corev1.Pod{
			pod(named("crit-ds"), critical, ownedBy("DaemonSet", true)),
			pod(named("ds"), ownedBy("DaemonSet", true)),
			pod(named("crit"), critical),
			pod(named("web")),
			pod(named("web2"), ownedBy("ReplicaSet", true)),
		}, want: [][]string{{"web", "web2"}, {"ds"}, {"crit"}, {"crit-ds"}}},
		{name: "empty tiers dropped, finished static and terminating pods left out", pods: []*corev1.Pod{
			pod(named("done"), phase(corev1.PodSucceeded)),
			pod(named("static"), ownedBy("Node", true)),
			pod(named("leaving"), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			pod(named("ds"), ownedBy("DaemonSet", true)),
			pod(named("cluster-crit"), func(p *corev1.Pod) { p.Spec.PriorityClassName = SystemClusterCritical }),
		}, want: [][]string{{"ds"}, {"cluster-crit"}}},
		{name: "pods that tolerate the disrupted taint stay: their controller would put them back", pods: []*corev1.Pod{
			pod(named("kube-proxy"), ownedBy("DaemonSet", true), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			}),
			pod(named("tolerant"), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: nsv1.DisruptedTaint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}),
			pod(named("logging"), ownedBy("DaemonSet", true), func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}
			}),
		}, want: [][]string{{"logging"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(DrainOrder(tt.pods)); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DrainOrder = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDoNotDisrupt(t *testing.T) {
	k := nsv1.AnnotationDoNotDisrupt
	tests := []struct {
		name        string
		pod         *corev1.Pod
		now         time.Time
		wantBlocked bool
		wantUntil   time.Time
		wantReason  string
	}{
		{name: "no annotation", pod: pod(), now: t0},
		{name: "true", pod: pod(annotated(k, "true")), now: t0.Add(1000 * time.Hour), wantBlocked: true, wantReason: "=true"},
		{name: "TRUE", pod: pod(annotated(k, "TRUE")), now: t0, wantBlocked: true, wantReason: "=true"},
		{name: "false", pod: pod(annotated(k, "false")), now: t0},
		{name: "duration from start time, still blocking", pod: pod(annotated(k, "30m"), startedAt(t0.Add(time.Minute))),
			now: t0.Add(20 * time.Minute), wantBlocked: true, wantUntil: t0.Add(31 * time.Minute), wantReason: "until 2026-11-29T12:31:00Z"},
		{name: "duration elapsed", pod: pod(annotated(k, "30m"), startedAt(t0)), now: t0.Add(30 * time.Minute)},
		{name: "duration from creation when not started", pod: pod(annotated(k, "1h")), now: t0.Add(59 * time.Minute),
			wantBlocked: true, wantUntil: t0.Add(time.Hour), wantReason: "until"},
		{name: "garbage blocks and says so", pod: pod(annotated(k, "yes please")), now: t0, wantBlocked: true, wantReason: "treated as \"true\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blocked, until, reason := DoNotDisrupt(tt.pod, tt.now)
			if blocked != tt.wantBlocked || !until.Equal(tt.wantUntil) || !strings.Contains(reason, tt.wantReason) {
				t.Fatalf("DoNotDisrupt = %v %v %q, want %v %v containing %q", blocked, until, reason, tt.wantBlocked, tt.wantUntil, tt.wantReason)
			}
		})
	}
}

func TestTerminationDeadline(t *testing.T) {
	del := metav1.NewTime(t0)
	tgp := &metav1.Duration{Duration: 10 * time.Minute}
	tests := []struct {
		name   string
		claim  nsv1.NodeClaim
		want   time.Time
		wantOK bool
	}{
		{name: "not deleting", claim: nsv1.NodeClaim{Spec: nsv1.NodeClaimSpec{TerminationGracePeriod: tgp}}},
		{name: "deleting without grace period waits forever", claim: nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del}}},
		{name: "deleting with grace period", claim: nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del}, Spec: nsv1.NodeClaimSpec{TerminationGracePeriod: tgp}},
			want: t0.Add(10 * time.Minute), wantOK: true},
		{name: "annotation wins", claim: nsv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del, Annotations: map[string]string{nsv1.AnnotationTerminationTimestamp: "2026-11-29T12:02:00Z"}},
			Spec:       nsv1.NodeClaimSpec{TerminationGracePeriod: tgp}}, want: t0.Add(2 * time.Minute), wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TerminationDeadline(&tt.claim)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Fatalf("TerminationDeadline = %v %v, want %v %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestPodDeleteTime(t *testing.T) {
	deadline := t0.Add(time.Hour)
	five := int64(300)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{name: "default 30s grace", pod: pod(), want: deadline.Add(-30 * time.Second)},
		{name: "own grace", pod: pod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &five }), want: deadline.Add(-5 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodDeleteTime(tt.pod, deadline); !got.Equal(tt.want) {
				t.Fatalf("PodDeleteTime = %v, want %v", got, tt.want)
			}
		})
	}
}
