package simulator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

var pdbNow = Epoch.Add(time.Hour)

type podOpt func(*corev1.Pod)

func budgetPod(name string, opts ...podOpt) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "ReplicaSet/web", Controller: &yes}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func unready(p *corev1.Pod)  { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func deleting(p *corev1.Pod) { t := metav1.NewTime(pdbNow); p.DeletionTimestamp = &t }
func unowned(p *corev1.Pod)  { p.OwnerReferences = nil }
func ownedByJob(p *corev1.Pod) {
	p.OwnerReferences[0].Kind, p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = "Job", "batch", "Job/batch"
}

func budget(spec policyv1.PodDisruptionBudgetSpec, disrupted map[string]time.Duration) *policyv1.PodDisruptionBudget {
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 3}, Spec: spec}
	for name, ago := range disrupted {
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[name] = metav1.NewTime(pdbNow.Add(-ago))
	}
	return pdb
}

func maxUnavailable(v intstr.IntOrString) policyv1.PodDisruptionBudgetSpec {
	return policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &v}
}

func minAvailable(v intstr.IntOrString) policyv1.PodDisruptionBudgetSpec {
	return policyv1.PodDisruptionBudgetSpec{MinAvailable: &v}
}

func pods(n int, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = budgetPod(string(rune('a'+i)), opts...)
	}
	return out
}

// The disruption controller's numbers for the budget shapes a scenario
// uses, one case per rule of kube-controller-manager's computation.
func TestBudgetStatus(t *testing.T) {
	one, half := intstr.FromInt32(1), intstr.FromString("50%")
	webScale := func(replicas int32) scaleFunc {
		return func(ref *metav1.OwnerReference) (int32, bool) { return replicas, ref.Kind == "ReplicaSet" }
	}
	tests := []struct {
		name      string
		pdb       *policyv1.PodDisruptionBudget
		pods      []*corev1.Pod
		replicas  int32
		expected  int32
		desired   int32
		healthy   int32
		allowed   int32
		disrupted []string
		recheck   time.Duration // after pdbNow; 0: none
		wantErr   bool
	}{
		{name: "maxUnavailable 1 over five ready pods allows one", pdb: budget(maxUnavailable(one), nil), pods: pods(5), replicas: 5,
			expected: 5, desired: 4, healthy: 5, allowed: 1},
		{name: "a pod being deleted is not healthy", pdb: budget(maxUnavailable(one), nil), pods: append(pods(4), budgetPod("z", deleting)), replicas: 5,
			expected: 5, desired: 4, healthy: 4, allowed: 0},
		{name: "an unready pod is not healthy", pdb: budget(maxUnavailable(one), nil), pods: append(pods(4), budgetPod("z", unready)), replicas: 5,
			expected: 5, desired: 4, healthy: 4, allowed: 0},
		{name: "expected pods come from the controller's replicas, not the pods", pdb: budget(maxUnavailable(one), nil), pods: pods(3), replicas: 5,
			expected: 5, desired: 4, healthy: 3, allowed: 0},
		{name: "a percentage maxUnavailable rounds up", pdb: budget(maxUnavailable(half), nil), pods: pods(5), replicas: 5,
			expected: 5, desired: 2, healthy: 5, allowed: 3},
		{name: "an integer minAvailable counts the pods themselves", pdb: budget(minAvailable(intstr.FromInt32(2)), nil), pods: pods(3), replicas: 10,
			expected: 3, desired: 2, healthy: 3, allowed: 1},
		{name: "a percentage minAvailable counts the replicas", pdb: budget(minAvailable(half), nil), pods: pods(4), replicas: 4,
			expected: 4, desired: 2, healthy: 4, allowed: 2},
		{name: "no pods: nothing allowed, whatever the budget", pdb: budget(minAvailable(intstr.FromInt32(0)), nil), pods: nil,
			expected: 0, desired: 0, healthy: 0, allowed: 0},
		{name: "pods without a controller are left out of the replicas", pdb: budget(maxUnavailable(one), nil),
			pods: append(pods(2), budgetPod("z", unowned)), replicas: 2, expected: 2, desired: 1, healthy: 3, allowed: 2},
		{name: "a controller without a scale fails the sync", pdb: budget(maxUnavailable(one), nil), pods: pods(2, ownedByJob), wantErr: true},
		{name: "a pod evicted a minute ago stays out of the healthy until it is deleted", pdb: budget(maxUnavailable(one), map[string]time.Duration{"a": time.Minute}),
			pods: pods(5), replicas: 5, expected: 5, desired: 4, healthy: 4, allowed: 0, disrupted: []string{"a"}, recheck: time.Minute},
		{name: "an evicted pod now being deleted leaves disruptedPods", pdb: budget(maxUnavailable(one), map[string]time.Duration{"z": 10 * time.Second}),
			pods: append(pods(4), budgetPod("z", deleting)), replicas: 5, expected: 5, desired: 4, healthy: 4, allowed: 0},
		{name: "an evicted pod not deleted after the timeout counts again", pdb: budget(maxUnavailable(one), map[string]time.Duration{"a": 3 * time.Minute}),
			pods: pods(5), replicas: 5, expected: 5, desired: 4, healthy: 5, allowed: 1},
		{name: "an entry for a pod that is gone is dropped", pdb: budget(maxUnavailable(one), map[string]time.Duration{"gone": time.Second}),
			pods: pods(5), replicas: 5, expected: 5, desired: 4, healthy: 5, allowed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, recheck, err := budgetStatus(tt.pdb, tt.pods, webScale(tt.replicas), pdbNow)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; status %+v", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := [4]int32{st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy, st.DisruptionsAllowed}
			if want := [4]int32{tt.expected, tt.desired, tt.healthy, tt.allowed}; got != want {
				t.Errorf("expected, desired, healthy, allowed = %v, want %v", got, want)
			}
			if st.ObservedGeneration != tt.pdb.Generation {
				t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, tt.pdb.Generation)
			}
			if len(st.DisruptedPods) != len(tt.disrupted) {
				t.Errorf("disruptedPods %v, want %v", st.DisruptedPods, tt.disrupted)
			}
			for _, name := range tt.disrupted {
				if _, ok := st.DisruptedPods[name]; !ok {
					t.Errorf("disruptedPods %v lacks %s", st.DisruptedPods, name)
				}
			}
			var wantRecheck time.Time
			if tt.recheck > 0 {
				wantRecheck = pdbNow.Add(tt.recheck)
			}
			if !recheck.Equal(wantRecheck) {
				t.Errorf("recheck %v, want %v", recheck, wantRecheck)
			}
			c := meta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			wantStatus, wantReason := metav1.ConditionFalse, policyv1.InsufficientPodsReason
			if tt.allowed > 0 {
				wantStatus, wantReason = metav1.ConditionTrue, policyv1.SufficientPodsReason
			}
			if c == nil || c.Status != wantStatus || c.Reason != wantReason || c.ObservedGeneration != tt.pdb.Generation {
				t.Errorf("DisruptionAllowed condition %+v, want %s/%s at generation %d", c, wantStatus, wantReason, tt.pdb.Generation)
			}
		})
	}
}

// A condition keeps its transition time while its status holds.
func TestDisruptionAllowedTransitionTime(t *testing.T) {
	one := intstr.FromInt32(1)
	scale := func(*metav1.OwnerReference) (int32, bool) { return 5, true }
	pdb := budget(maxUnavailable(one), nil)
	st, _, err := budgetStatus(pdb, pods(5), scale, pdbNow)
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = st
	later := pdbNow.Add(time.Minute)
	st, _, err = budgetStatus(pdb, pods(5), scale, later)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition); !c.LastTransitionTime.Time.Equal(pdbNow) {
		t.Errorf("transition time moved to %v with the status unchanged", c.LastTransitionTime)
	}
	pdb.Status = st
	st, _, err = budgetStatus(pdb, append(pods(4), budgetPod("z", unready)), scale, later)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition); c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("condition %+v after losing a healthy pod, want False since %v", c, later)
	}
}

// evictionSim is a Sim with only an API server: enough for the eviction
// subresource's check.
func evictionSim(t *testing.T) *Sim {
	t.Helper()
	sch, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(pdbNow)
	api := apiserver.New(sch, clk, 1)
	return &Sim{ctx: context.Background(), clock: clk, api: api, kube: api.Client()}
}

// storeBudget creates pdb and writes st as its status.
func storeBudget(t *testing.T, s *Sim, pdb *policyv1.PodDisruptionBudget, st policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb = pdb.DeepCopy()
	pdb.Generation, pdb.Status = 0, policyv1.PodDisruptionBudgetStatus{}
	if err := s.kube.Create(s.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	st.ObservedGeneration = pdb.Generation
	pdb.Status = st
	if err := s.kube.Status().Update(s.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	return pdb
}

// The eviction subresource decides from the stored status and takes one
// disruption per eviction: a budget allowing one lets one pod go, records
// it in disruptedPods and refuses the next with 429.
func TestEvictionTakesOneDisruption(t *testing.T) {
	s := evictionSim(t)
	pdb := storeBudget(t, s, budget(maxUnavailable(intstr.FromInt32(1)), nil),
		policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, DesiredHealthy: 4, CurrentHealthy: 5, DisruptionsAllowed: 1})
	if err := s.evictionAllowed(budgetPod("a")); err != nil {
		t.Fatalf("first eviction refused: %v", err)
	}
	got := &policyv1.PodDisruptionBudget{}
	if err := s.kube.Get(s.ctx, types.NamespacedName{Namespace: "default", Name: pdb.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.DisruptionsAllowed != 0 {
		t.Errorf("disruptionsAllowed %d after the eviction, want 0", got.Status.DisruptionsAllowed)
	}
	if at, ok := got.Status.DisruptedPods["a"]; !ok || !at.Time.Equal(pdbNow) {
		t.Errorf("disruptedPods %v, want a at %v", got.Status.DisruptedPods, pdbNow)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("DisruptionAllowed %+v after the last allowed disruption was taken, want False", c)
	}
	if err := s.evictionAllowed(budgetPod("b")); !apierrors.IsTooManyRequests(err) {
		t.Errorf("second eviction: %v, want 429", err)
	}
}

func TestEvictionCheck(t *testing.T) {
	one := intstr.FromInt32(1)
	met := policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, DesiredHealthy: 4, CurrentHealthy: 4}
	short := policyv1.PodDisruptionBudgetStatus{ExpectedPods: 5, DesiredHealthy: 4, CurrentHealthy: 3}
	always := policyv1.AlwaysAllow
	tests := []struct {
		name   string
		pdbs   []*policyv1.PodDisruptionBudget
		status policyv1.PodDisruptionBudgetStatus
		stale  bool
		pod    *corev1.Pod
		want   func(error) bool
	}{
		{name: "no budget", pod: budgetPod("a"), want: ok},
		{name: "nothing allowed", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil)}, status: met, pod: budgetPod("a"),
			want: apierrors.IsTooManyRequests},
		{name: "a pending pod goes without a check", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil)}, status: met,
			pod: budgetPod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), want: ok},
		{name: "an unready pod goes when the budget is met", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil)}, status: met,
			pod: budgetPod("a", unready), want: ok},
		{name: "an unready pod waits when the budget is short", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil)}, status: short,
			pod: budgetPod("a", unready), want: apierrors.IsTooManyRequests},
		{name: "AlwaysAllow lets an unready pod go when the budget is short", pdbs: []*policyv1.PodDisruptionBudget{
			budget(policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, UnhealthyPodEvictionPolicy: &always}, nil)}, status: short,
			pod: budgetPod("a", unready), want: ok},
		{name: "a status older than the budget's spec refuses", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil)},
			status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 3}, stale: true, pod: budgetPod("a"), want: apierrors.IsTooManyRequests},
		{name: "two budgets over one pod refuse with 500", pdbs: []*policyv1.PodDisruptionBudget{budget(maxUnavailable(one), nil), func() *policyv1.PodDisruptionBudget {
			b := budget(maxUnavailable(one), nil)
			b.Name = "web-too"
			return b
		}()}, status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, pod: budgetPod("a"), want: apierrors.IsInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := evictionSim(t)
			for _, pdb := range tt.pdbs {
				stored := storeBudget(t, s, pdb, tt.status)
				if tt.stale {
					stored.Spec.MaxUnavailable = &intstr.IntOrString{IntVal: 2}
					if err := s.kube.Update(s.ctx, stored); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.evictionAllowed(tt.pod); !tt.want(err) {
				t.Errorf("eviction: %v", err)
			}
		})
	}
}

func ok(err error) bool { return err == nil }
