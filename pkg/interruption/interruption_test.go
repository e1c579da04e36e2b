package interruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestParseRebalanceMode(t *testing.T) {
	for s, ok := range map[string]bool{"off": true, "prespin": true, "drain": true, "": false, "Drain": false, "on": false} {
		m, err := ParseRebalanceMode(s)
		if (err == nil) != ok || (ok && string(m) != s) {
			t.Errorf("ParseRebalanceMode(%q) = %q, %v", s, m, err)
		}
	}
}

func TestActionFor(t *testing.T) {
	tests := []struct {
		kind messages.Kind
		mode RebalanceMode
		want Action
	}{
		{messages.KindSpotInterruption, RebalanceOff, ActionMark},
		{messages.KindCapacityReservationInterruption, RebalanceOff, ActionMark},
		{messages.KindScheduledChange, RebalancePrespin, ActionMark},
		{messages.KindInstanceStopping, RebalancePrespin, ActionMark},
		{messages.KindRebalance, RebalanceOff, ActionNone},
		{messages.KindRebalance, RebalancePrespin, ActionMark},
		{messages.KindRebalance, RebalanceDrain, ActionMark},
		{messages.KindInstanceStopped, RebalancePrespin, ActionDelete},
		{messages.KindInstanceTerminated, RebalancePrespin, ActionDelete},
		{messages.KindIgnored, RebalancePrespin, ActionNone},
	}
	for _, tt := range tests {
		if got := ActionFor(tt.kind, tt.mode); got != tt.want {
			t.Errorf("ActionFor(%s, %s) = %s, want %s", tt.kind, tt.mode, got, tt.want)
		}
	}
}

func TestMerge(t *testing.T) {
	spot := Mark{Reason: nsv1.DisruptingReasonSpotInterruption, Deadline: t0.Add(2 * time.Minute)}
	rebalance := Mark{Reason: nsv1.DisruptingReasonRebalanceRecommendation}
	retire := Mark{Reason: nsv1.DisruptingReasonScheduledChange, Deadline: t0.Add(48 * time.Hour)}
	tests := []struct {
		name        string
		cur, notice Mark
		want        Mark
		changed     bool
	}{
		{"first notice", Mark{}, spot, spot, true},
		{"duplicate changes nothing", spot, spot, spot, false},
		{"rebalance after the warning keeps the warning", spot, rebalance, spot, false},
		{"warning after rebalance takes over with its deadline", rebalance, spot, spot, true},
		{"a later, weaker deadline does not postpone", spot, retire, spot, false},
		{"an interruptible reservation's warning after a rebalance takes over",
			rebalance, Mark{Reason: nsv1.DisruptingReasonCapacityReservationInterruption, Deadline: t0.Add(2 * time.Minute)},
			Mark{Reason: nsv1.DisruptingReasonCapacityReservationInterruption, Deadline: t0.Add(2 * time.Minute)}, true},
		{"an earlier deadline wins, the stronger reason stays",
			Mark{Reason: nsv1.DisruptingReasonSpotInterruption, Deadline: t0.Add(time.Hour)}, Mark{Reason: nsv1.DisruptingReasonScheduledChange, Deadline: t0},
			Mark{Reason: nsv1.DisruptingReasonSpotInterruption, Deadline: t0}, true},
	}
	for _, tt := range tests {
		got, changed := Merge(tt.cur, tt.notice)
		if got.Reason != tt.want.Reason || !got.Deadline.Equal(tt.want.Deadline) || changed != tt.changed {
			t.Errorf("%s: Merge = %+v %v, want %+v %v", tt.name, got, changed, tt.want, tt.changed)
		}
	}
}

func pod(name string, grace int64, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{NodeName: "node", TerminationGracePeriodSeconds: ptr.To(grace)}}
	p.Status.Phase = corev1.PodRunning
	for _, m := range mutate {
		m(p)
	}
	return p
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}

func TestDrainBy(t *testing.T) {
	deadline := t0.Add(2 * time.Minute)
	tests := []struct {
		name string
		pods []*corev1.Pod
		want time.Time
	}{
		{"no pods: the deadline", nil, deadline},
		{"the longest grace wins", []*corev1.Pod{pod("a", 10), pod("b", 45)}, deadline.Add(-45 * time.Second)},
		{"default grace when unset", []*corev1.Pod{func() *corev1.Pod { p := pod("a", 0); p.Spec.TerminationGracePeriodSeconds = nil; return p }()}, deadline.Add(-30 * time.Second)},
	}
	for _, tt := range tests {
		if got := DrainBy(deadline, tt.pods); !got.Equal(tt.want) {
			t.Errorf("%s: DrainBy = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	spot := Mark{Reason: nsv1.DisruptingReasonSpotInterruption, Deadline: t0.Add(2 * time.Minute)}
	rebalance := Mark{Reason: nsv1.DisruptingReasonRebalanceRecommendation}
	web, worker := pod("web", 30), pod("worker", 60)
	logs := pod("logs", 30, daemon)
	tests := []struct {
		name        string
		mark        Mark
		mode        RebalanceMode
		pods        []*corev1.Pod
		repl, ready int
		now         time.Time
		want        Verdict
		why         string // substring of Why or Waiting
	}{
		{name: "spot warning, replacement booting: wait, at most until the deadline minus the longest grace",
			mark: spot, pods: []*corev1.Pod{web, worker, logs}, repl: 1, now: t0,
			want: Verdict{RequeueAfter: Recheck}, why: "0 of 1 replacements initialized"},
		{name: "the wait is cut to the drain-by instant",
			mark: spot, pods: []*corev1.Pod{web, worker}, repl: 2, ready: 1, now: t0.Add(55 * time.Second),
			want: Verdict{RequeueAfter: 5 * time.Second}, why: "1 of 2"},
		{name: "replacement ready: drain now",
			mark: spot, pods: []*corev1.Pod{web, worker, logs}, repl: 1, ready: 1, now: t0.Add(40 * time.Second),
			want: Verdict{Delete: true, Ready: true, RequeueAfter: Recheck}, why: "replacement capacity ready for its 2 pods"},
		{name: "deadline minus the longest grace reached without a replacement: drain anyway",
			mark: spot, pods: []*corev1.Pod{web, worker}, repl: 1, now: t0.Add(60 * time.Second),
			want: Verdict{Delete: true, RequeueAfter: Recheck}, why: "goes away at 2026-03-01T10:02:00Z"},
		{name: "pods fit on running nodes (no replacement): drain now",
			mark: spot, pods: []*corev1.Pod{web}, now: t0,
			want: Verdict{Delete: true, Ready: true, RequeueAfter: Recheck}, why: "ready for its 1 pods"},
		{name: "only daemon pods: nothing to move, drain now",
			mark: spot, pods: []*corev1.Pod{logs}, now: t0,
			want: Verdict{Delete: true, Ready: true, RequeueAfter: Recheck}, why: "no pods to move"},
		{name: "rebalance, prespin: replacement ready is held, no drain",
			mark: rebalance, mode: RebalancePrespin, pods: []*corev1.Pod{web}, repl: 1, ready: 1, now: t0,
			want: Verdict{Ready: true, RequeueAfter: Recheck}, why: "prespin"},
		{name: "rebalance, drain: replacement ready",
			mark: rebalance, mode: RebalanceDrain, pods: []*corev1.Pod{web}, repl: 1, ready: 1, now: t0,
			want: Verdict{Delete: true, Ready: true, RequeueAfter: Recheck}, why: "rebalance mode drain"},
		{name: "rebalance, drain: replacement not ready yet",
			mark: rebalance, mode: RebalanceDrain, pods: []*corev1.Pod{web}, repl: 1, now: t0,
			want: Verdict{RequeueAfter: Recheck}, why: "waiting for replacement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Mark: tt.mark, Mode: tt.mode, Pods: tt.pods, Replacements: tt.repl, Ready: tt.ready, Now: tt.now})
			text := got.Why + got.Waiting
			got.Why, got.Waiting = "", ""
			if got != tt.want {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
			if !strings.Contains(text, tt.why) {
				t.Fatalf("why %q does not say %q", text, tt.why)
			}
		})
	}
}

func TestMarkOf(t *testing.T) {
	deadline := t0.Add(2 * time.Minute)
	claim := func(status metav1.ConditionStatus, reason string) *nsv1.NodeClaim {
		c := &nsv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{
			nsv1.AnnotationDisruptionDeadline: deadline.Format(time.RFC3339)}}}
		c.Status.Conditions = []metav1.Condition{{Type: nsv1.ConditionDisrupting, Status: status, Reason: reason}}
		return c
	}
	if m := MarkOf(claim(metav1.ConditionTrue, nsv1.DisruptingReasonSpotInterruption)); m.Reason != nsv1.DisruptingReasonSpotInterruption || !m.Deadline.Equal(deadline) || !m.Interrupted() {
		t.Errorf("spot mark = %+v", m)
	}
	if m := MarkOf(claim(metav1.ConditionTrue, nsv1.DisruptingReasonRebalanceRecommendation)); !m.Marked() || m.Interrupted() {
		t.Errorf("rebalance mark = %+v, want marked, not interrupted", m)
	}
	if m := MarkOf(claim(metav1.ConditionTrue, "Drifted")); m.Marked() {
		t.Errorf("a Disrupting reason the handler does not set is no mark: %+v", m)
	}
	if m := MarkOf(claim(metav1.ConditionFalse, nsv1.DisruptingReasonSpotInterruption)); m.Marked() {
		t.Errorf("a False condition is no mark: %+v", m)
	}
	if !Holds(Mark{Reason: nsv1.DisruptingReasonRebalanceRecommendation}, RebalancePrespin) ||
		Holds(Mark{Reason: nsv1.DisruptingReasonRebalanceRecommendation}, RebalanceDrain) ||
		Holds(Mark{Reason: nsv1.DisruptingReasonSpotInterruption}, RebalancePrespin) {
		t.Error("Holds: only a rebalance recommendation outside drain mode holds")
	}
}
