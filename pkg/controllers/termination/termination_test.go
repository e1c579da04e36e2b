package termination

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/controllertest"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

func ownedBy(kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "u-" + types.UID(p.Name), Controller: ptr.To(true)}}
	}
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = lifecycle.SystemNodeCritical }

// TestDrainTiersThenTerminate drains workload, then daemons, then critical
// pods, and only then terminates the instance and lifts the finalizers.
func TestDrainTiersThenTerminate(t *testing.T) {
	f := newFixture(t, nil)
	f.pod(t, "web", ownedBy("ReplicaSet"))
	f.pod(t, "logs", ownedBy("DaemonSet"))
	f.pod(t, "dns", critical)
	f.deleteClaim(t)

	var order [][]string
	for i := 0; i < 10 && !f.claimGone(t); i++ {
		res := f.reconcile(t)
		if gone := f.kubelet(t); len(gone) > 0 {
			sort.Strings(gone)
			order = append(order, gone)
		}
		if f.claimGone(t) {
			break
		}
		if res.RequeueAfter == 0 {
			t.Fatalf("reconcile %d neither finished nor asked to come back", i)
		}
	}
	if want := [][]string{{"web"}, {"logs"}, {"dns"}}; !reflect.DeepEqual(order, want) {
		t.Fatalf("eviction order = %v, want %v", order, want)
	}
	if !f.claimGone(t) {
		t.Fatal("claim still exists after the drain")
	}
	if n := len(f.cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left, want 0", n)
	}
	node := &corev1.Node{}
	err := h.Direct.Get(context.Background(), types.NamespacedName{Name: f.node.Name}, node)
	if client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("node still exists (err %v, finalizers %v)", err, node.Finalizers)
	}
}

func TestDrainTaintsTheNode(t *testing.T) {
	f := newFixture(t, nil)
	f.pod(t, "web", nil)
	f.deleteClaim(t)
	f.reconcile(t)
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: f.node.Name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[corev1.LabelNodeExcludeBalancers] != "true" {
		t.Errorf("draining node labels %v lack %s=true: load balancers keep sending it traffic", node.Labels, corev1.LabelNodeExcludeBalancers)
	}
	for _, taint := range node.Spec.Taints {
		if taint.MatchTaint(&nsv1.DisruptedTaint) {
			return
		}
	}
	t.Fatalf("node taints %v lack %s", node.Spec.Taints, nsv1.DisruptedTaint.ToString())
}

// TestBlockedDrain: a PDB or do-not-disrupt holds the drain, the instance
// stays; lifting the block (or the grace period running out) lets it go on.
func TestBlockedDrain(t *testing.T) {
	tgp := 10 * time.Minute
	tests := []struct {
		name    string
		tgp     *time.Duration
		block   func(t *testing.T, f *fixture, pod *corev1.Pod)
		release func(t *testing.T, f *fixture)
	}{
		{
			name: "PDB with minAvailable equal to replicas, then relaxed",
			block: func(t *testing.T, f *fixture, pod *corev1.Pod) {
				// The eviction API ignores PDBs for pods that are not running,
				// and lets unready pods go while the budget is healthy.
				pod.Status.Phase = corev1.PodRunning
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				if err := h.Direct.Status().Update(context.Background(), pod); err != nil {
					t.Fatal(err)
				}
				pdb := &policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
					Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod.Name}}},
				}
				if err := h.Direct.Create(context.Background(), pdb); err != nil {
					t.Fatal(err)
				}
				// The disruption controller (kube-controller-manager) is not
				// running here: write the status it would.
				pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1,
					DisruptionsAllowed: 0, Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
						Reason: policyv1.InsufficientPodsReason, LastTransitionTime: metav1.Now()}}}
				if err := h.Direct.Status().Update(context.Background(), pdb); err != nil {
					t.Fatal(err)
				}
			},
			release: func(t *testing.T, f *fixture) {
				pdb := &policyv1.PodDisruptionBudget{}
				if err := h.Direct.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: "web"}, pdb); err != nil {
					t.Fatal(err)
				}
				if err := h.Direct.Delete(context.Background(), pdb); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "do-not-disrupt, then annotation removed",
			block: func(t *testing.T, f *fixture, pod *corev1.Pod) {
				annotate(t, pod, "true")
			},
			release: func(t *testing.T, f *fixture) {
				pod := &corev1.Pod{}
				if err := h.Direct.Get(context.Background(), types.NamespacedName{Namespace: f.ns, Name: "web"}, pod); err != nil {
					t.Fatal(err)
				}
				annotate(t, pod, "false")
			},
		},
		{
			name: "do-not-disrupt until the termination grace period runs out",
			tgp:  &tgp,
			block: func(t *testing.T, f *fixture, pod *corev1.Pod) {
				annotate(t, pod, "true")
			},
			release: func(t *testing.T, f *fixture) {
				// The deadline counts from the deletion timestamp the API
				// server stamped (whole wall-clock seconds), not from the
				// fake clock's start: step to where the pod's own 30 s grace
				// still fits before it.
				claim := &nsv1.NodeClaim{}
				if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.claim), claim); err != nil {
					t.Fatal(err)
				}
				f.clk.SetTime(claim.DeletionTimestamp.Add(tgp - 30*time.Second))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.tgp)
			pod := f.pod(t, "web", nil)
			tt.block(t, f, pod)
			f.deleteClaim(t)
			for range 3 {
				if res := f.reconcile(t); res.RequeueAfter == 0 {
					t.Fatal("a blocked drain did not ask to come back")
				}
				if gone := f.kubelet(t); len(gone) > 0 {
					t.Fatalf("pods %v left although the drain is blocked", gone)
				}
			}
			if len(f.cloud.Instances()) != 1 || len(f.cloud.Calls("Delete")) != 0 {
				t.Fatal("the instance was terminated while its drain was blocked")
			}
			tt.release(t, f)
			finish(t, f)
		})
	}
}

func annotate(t *testing.T, pod *corev1.Pod, v string) {
	t.Helper()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[nsv1.AnnotationDoNotDisrupt] = v
	if err := h.Direct.Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, pod)
}

// finish reconciles until the claim is gone, playing the kubelet; PDB
// changes reach the apiserver's eviction check at once, the cache may lag.
func finish(t *testing.T, f *fixture) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f.claimGone(t) {
		if time.Now().After(deadline) {
			t.Fatal("the drain did not finish after the block was lifted")
		}
		_, _ = f.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: f.claim.Name}})
		f.kubelet(t)
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(f.cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left, want 0", n)
	}
}

// TestDeletingTheNodeDeletesTheClaim: a user deleting the Node goes through
// the same drain.
func TestDeletingTheNodeDeletesTheClaim(t *testing.T) {
	f := newFixture(t, nil)
	if err := h.Direct.Delete(context.Background(), f.node); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: f.node.Name}, node); err != nil {
		t.Fatal(err)
	}
	h.Cached(t, node)
	if _, err := f.c.reconcileNode(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	claim := &nsv1.NodeClaim{}
	if err := h.Direct.Get(context.Background(), types.NamespacedName{Name: f.claim.Name}, claim); err != nil {
		t.Fatal(err)
	}
	if claim.DeletionTimestamp.IsZero() {
		t.Fatal("deleting the node did not delete its claim")
	}
	h.Cached(t, claim)
	finish(t, f)
}

// TestTerminationIsCountedOnce: nodeclaims_terminated_total grows once per
// claim, when its finalizer comes off, by the reason a controller noted when
// it deleted the claim, else by what the claim says (its disruption
// command's reason), else deleted.
func TestTerminationIsCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		want  string
	}{
		{name: "deleted by a user", want: "deleted"},
		{name: "a disruption command's claim", want: "drifted", setup: func(t *testing.T, f *fixture) {
			cur := &nsv1.NodeClaim{}
			if err := h.Direct.Get(context.Background(), client.ObjectKeyFromObject(f.claim), cur); err != nil {
				t.Fatal(err)
			}
			base := cur.DeepCopy()
			cur.Annotations = map[string]string{nsv1.AnnotationDisruptionReason: string(nsv1.DisruptionReasonDrifted)}
			if err := h.Direct.Patch(context.Background(), cur, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
			h.Cached(t, cur)
		}},
		{name: "noted by the controller that deleted it", want: "limit_reached", setup: func(t *testing.T, f *fixture) {
			f.m.NoteTermination(f.claim.UID, "limit_reached")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			f.deleteClaim(t)
			finish(t, f)
			f.reconcile(t) // the claim is gone: nothing more to count
			pool := f.claim.Labels[nsv1.LabelNodePool]
			total := 0.0
			for _, d := range controllertest.Series(t, f.m.NodeClaimsTerminated) {
				total += d.GetCounter().GetValue()
			}
			if got := testutil.ToFloat64(f.m.NodeClaimsTerminated.WithLabelValues(pool, tc.want)); got != 1 || total != 1 {
				t.Errorf("nodeclaims_terminated_total{nodepool=%s,reason=%s} = %v of %v in all, want 1 of 1", pool, tc.want, got, total)
			}
		})
	}
}
