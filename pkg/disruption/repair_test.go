package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// cond sets a node condition that took status ago.
func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, ago time.Duration) nodeOpt {
	return func(_ *nsv1.NodeClaim, n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s,
			LastTransitionTime: metav1.NewTime(now.Add(-ago))})
	}
}

func healthy(_ *nsv1.NodeClaim, n *corev1.Node) {
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))})
}

func TestUnhealthyAllowed(t *testing.T) {
	// 20 % rounded up, as a PodDisruptionBudget rounds a percentage.
	for total, want := range map[int]int{0: 0, 1: 1, 3: 1, 5: 1, 6: 2, 10: 2, 11: 3, 100: 20} {
		if got := UnhealthyAllowed(total); got != want {
			t.Errorf("UnhealthyAllowed(%d) = %d, want %d", total, got, want)
		}
	}
}

func TestUnhealthy(t *testing.T) {
	ready := corev1.NodeReady
	tests := []struct {
		name    string
		conds   []corev1.NodeCondition
		want    string // policy, "" when healthy
		wantDue time.Time
	}{
		{name: "Ready True is healthy", conds: []corev1.NodeCondition{{Type: ready, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}},
		{name: "no conditions is healthy"},
		{name: "Ready False is due 30m after it turned", conds: []corev1.NodeCondition{{Type: ready, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}},
			want: "Ready=False", wantDue: now.Add(29 * time.Minute)},
		{name: "Ready Unknown is due 30m after it turned", conds: []corev1.NodeCondition{{Type: ready, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(now)}},
			want: "Ready=Unknown", wantDue: now.Add(30 * time.Minute)},
		{name: "AcceleratedHardwareReady False is due after 10m", conds: []corev1.NodeCondition{{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}},
			want: "AcceleratedHardwareReady=False", wantDue: now.Add(10 * time.Minute)},
		{name: "an agent condition Unknown is no policy", conds: []corev1.NodeCondition{{Type: "StorageReady", Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(now)}}},
		{name: "a condition no policy names is ignored", conds: []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}},
		{name: "without a lastTransitionTime nothing says how long", conds: []corev1.NodeCondition{{Type: ready, Status: corev1.ConditionFalse}}},
		{name: "of two, the one due first", conds: []corev1.NodeCondition{
			{Type: ready, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Minute))},
			{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}},
			want: "AcceleratedHardwareReady=False", wantDue: now.Add(10 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Conditions: tc.conds}}
			h, ok := Unhealthy(n, DefaultRepairPolicies())
			if got := map[bool]string{true: h.Policy.String()}[ok]; got != tc.want {
				t.Fatalf("Unhealthy = %q, want %q", got, tc.want)
			}
			if ok && !h.Due.Equal(tc.wantDue) {
				t.Errorf("due %s, want %s", h.Due, tc.wantDue)
			}
		})
	}
}

func TestRepair(t *testing.T) {
	const od = nsv1.CapacityTypeOnDemand
	const (
		ready   = corev1.NodeReady
		unknown = corev1.ConditionUnknown
		false_  = corev1.ConditionFalse
	)
	gate := func(in *Input) { in.Options.NodeRepair = true }
	// quiet: the pool consolidates nothing, so only repair (and drift) act.
	quiet := func(opts ...poolOpt) *nsv1.NodePool {
		return pool("p", append([]poolOpt{consolidateAfter("Never")}, opts...)...)
	}
	// fleet adds k healthy small nodes, each with a 1-cpu pod.
	fleet := func(w *world, k int) {
		for i := 0; i < k; i++ {
			w.pod(w.node("p", "small", "zone-a", od, healthy), "1")
		}
	}
	tests := []struct {
		name      string
		build     func() Input
		want      []string
		wantSkips map[string]SkipReason
		check     func(t *testing.T, p *Plan)
	}{
		{
			name: "the gate off repairs nothing",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				fleet(w, 5)
				return w.input()
			},
		},
		{
			name: "Ready Unknown exactly at its toleration is replaced, forced, terminating now",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, 30*time.Minute)), "1")
				fleet(w, 4)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1"},
			check: func(t *testing.T, p *Plan) {
				a := p.Actions[0]
				if !a.Forced || !a.Deadline.Equal(now) || a.Reason != nsv1.DisruptionReasonUnhealthy || a.Condition != "Ready=Unknown" {
					t.Errorf("forced %v deadline %s reason %s condition %q, want forced, now, Unhealthy, Ready=Unknown", a.Forced, a.Deadline, a.Reason, a.Condition)
				}
				if !strings.Contains(a.Message, "Ready=Unknown for 30m0s") || !strings.Contains(a.Message, "toleration 30m0s") {
					t.Errorf("message %q does not name the condition and how long", a.Message)
				}
				if p.Candidates[nsv1.DisruptionReasonUnhealthy] != 1 {
					t.Errorf("candidates %v, want 1 Unhealthy", p.Candidates)
				}
			},
		},
		{
			name: "Ready False a second short of its toleration waits, and the plan says until when",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, false_, 30*time.Minute-time.Second)), "1")
				fleet(w, 4)
				stampVersions(w) // a reusable plan reports ValidUntil
				return w.input(gate)
			},
			check: func(t *testing.T, p *Plan) {
				if !p.ValidUntil.Equal(now.Add(time.Second)) {
					t.Errorf("ValidUntil %s, want %s (the toleration's end)", p.ValidUntil, now.Add(time.Second))
				}
			},
		},
		{
			name: "Ready False past its toleration is replaced like Unknown",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, false_, 31*time.Minute)), "1")
				fleet(w, 4)
				return w.input(gate)
			},
			want:  []string{"Repair[p-01]+1"},
			check: func(t *testing.T, p *Plan) { wantCondition(t, p, "Ready=False") },
		},
		{
			name: "accelerated hardware is tolerated 10m, storage 30m",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, healthy, cond("AcceleratedHardwareReady", false_, 11*time.Minute)), "1")
				w.pod(w.node("p", "small", "zone-a", od, healthy, cond("StorageReady", false_, 11*time.Minute)), "1")
				fleet(w, 8)
				return w.input(gate)
			},
			want:  []string{"Repair[p-01]+1"},
			check: func(t *testing.T, p *Plan) { wantCondition(t, p, "AcceleratedHardwareReady=False") },
		},
		{
			name: "budgets, PDBs, do-not-disrupt and nominations do not hold a repair",
			build: func() Input {
				w := newWorld(quiet(budgets(nsv1.Budget{Nodes: "0"})))
				n := w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour), nodeAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				w.pod(n, "1", podAnnotation(nsv1.AnnotationDoNotDisrupt, "true"))
				w.pod(n, "500m", labelled("app", "guarded"))
				w.pdb("guarded", 0, map[string]string{"app": "guarded"})
				fleet(w, 4)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1"},
		},
		{
			name: "an empty unhealthy node is deleted without a replacement",
			build: func() Input {
				w := newWorld(quiet())
				w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour))
				fleet(w, 4)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]"},
		},
		{
			name: "cap: 2 unhealthy of 5 is more than 20% (1), so both wait",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, false_, time.Hour)), "1")
				fleet(w, 3)
				return w.input(gate)
			},
			wantSkips: map[string]SkipReason{"p-01": SkipRepairBlocked, "p-03": SkipRepairBlocked},
			check: func(t *testing.T, p *Plan) {
				for _, s := range p.Skipped {
					if s.Claim == "p-01" && !strings.Contains(s.Message, "2 of nodepool p's 5 nodes are unhealthy, more than 20% (1)") {
						t.Errorf("skip message %q does not give the count and the cap", s.Message)
					}
				}
			},
		},
		{
			name: "cap: 2 unhealthy of 10 is 20% exactly, so both are repaired",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, false_, time.Hour)), "1")
				fleet(w, 8)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1", "Repair[p-03]+1"},
		},
		{
			name: "cap: 1 unhealthy of 3 (33%) is within 20% rounded up",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				fleet(w, 2)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1"},
		},
		{
			name: "cap: unhealthy nodes not yet due count too",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Minute)), "1")
				fleet(w, 3)
				return w.input(gate)
			},
			wantSkips: map[string]SkipReason{"p-01": SkipRepairBlocked},
		},
		{
			name: "cap: counted per pool",
			build: func() Input {
				w := newWorld(quiet(), pool("q", consolidateAfter("Never")))
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				fleet(w, 4)
				w.pod(w.node("q", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("q", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("q", "small", "zone-a", od, healthy), "1")
				return w.input(gate)
			},
			want:      []string{"Repair[p-01]+1"},
			wantSkips: map[string]SkipReason{"q-11": SkipRepairBlocked, "q-13": SkipRepairBlocked},
		},
		{
			name: "a node already being deleted is left to its drain, and still counts as unhealthy",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour), deleting), "1")
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				fleet(w, 3)
				return w.input(gate)
			},
			wantSkips: map[string]SkipReason{"p-03": SkipRepairBlocked},
		},
		{
			name: "a node in a disruption command is left to it",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour), claimAnnotation(nsv1.AnnotationDisruptionCommand, "d-1")), "1")
				fleet(w, 4)
				return w.input(gate)
			},
		},
		{
			name: "a node without a NodeClaim is neither repaired nor counted",
			build: func() Input {
				w := newWorld(quiet())
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				fleet(w, 4)
				for _, name := range []string{"self-managed-1", "self-managed-2"} {
					bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nsv1.LabelNodePool: "p"}}}
					cond(ready, unknown, time.Hour)(nil, bare)
					w.snap.Nodes = append(w.snap.Nodes, bare)
				}
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1"},
		},
		{
			name: "a NotReady node the ledger counts takes no budget twice: drift still goes",
			build: func() Input {
				w := newWorld(quiet(budgets(nsv1.Budget{Nodes: "2"})))
				w.pod(w.node("p", "small", "zone-a", od, cond(ready, unknown, time.Hour)), "1")
				w.pod(w.node("p", "small", "zone-a", od, healthy, claimAnnotation(nsv1.AnnotationNodePoolHash, "old")), "1")
				fleet(w, 3)
				return w.input(gate)
			},
			want: []string{"Repair[p-01]+1", "Drift[p-03]+1"},
		},
		{
			name: "a Ready node repaired for another condition uses up the budget like expiry",
			build: func() Input {
				w := newWorld(quiet(budgets(nsv1.Budget{Nodes: "1"})))
				w.pod(w.node("p", "small", "zone-a", od, healthy, cond("KernelReady", false_, time.Hour)), "1")
				w.pod(w.node("p", "small", "zone-a", od, healthy, claimAnnotation(nsv1.AnnotationNodePoolHash, "old")), "1")
				fleet(w, 3)
				return w.input(gate)
			},
			want:      []string{"Repair[p-01]+1"},
			wantSkips: map[string]SkipReason{"p-03": SkipBudget},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compute(tc.build())
			if err != nil {
				t.Fatal(err)
			}
			if got := summaries(p); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("actions %v, want %v", got, tc.want)
			}
			for claim, want := range tc.wantSkips {
				found := false
				for _, s := range p.Skipped {
					if s.Claim == claim {
						found = true
						if s.Reason != want {
							t.Errorf("%s skipped %s (%s), want %s", claim, s.Reason, s.Message, want)
						}
					}
				}
				if !found {
					t.Errorf("%s not skipped, want %s", claim, want)
				}
			}
			for _, s := range p.Skipped {
				if s.Reason == SkipRepairBlocked && tc.wantSkips[s.Claim] != SkipRepairBlocked {
					t.Errorf("%s skipped RepairBlocked, not expected: %s", s.Claim, s.Message)
				}
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func wantCondition(t *testing.T, p *Plan, want string) {
	t.Helper()
	if len(p.Actions) == 0 || p.Actions[0].Condition != want {
		t.Fatalf("first action's condition is not %q: %v", want, summaries(p))
	}
}
