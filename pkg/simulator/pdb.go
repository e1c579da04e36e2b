package simulator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodesmith/nodesmith/pkg/simulator/apiserver"
)

// The simulator plays two parts around PodDisruptionBudgets: the
// disruption controller of kube-controller-manager, which keeps every
// budget's status current (syncBudget stores budgetStatus whenever a pod or
// a budget changes), and the eviction subresource of the API server, which
// decides an eviction from the stored status and takes one disruption from
// it (evictionAllowed). Nodesmith's disruption planner reads the same
// status to tell which nodes a budget holds.

// maxDisruptedPods is how many evictions a budget may have waiting for the
// disruption controller before the eviction subresource refuses more.
const maxDisruptedPods = 2000

// budgets is the disruption controller's queue: the budgets to sync and
// when.
type budgets struct {
	s *Sim
	// queued is the earliest sync scheduled per budget.
	queued map[types.NamespacedName]time.Duration
}

func newBudgets(s *Sim) *budgets {
	return &budgets{s: s, queued: map[types.NamespacedName]time.Duration{}}
}

// enqueue schedules a sync of key at virtual time at, unless one is
// already due by then.
func (b *budgets) enqueue(key types.NamespacedName, at time.Duration) {
	if q, ok := b.queued[key]; ok && q <= at && q >= b.s.now {
		return
	}
	b.queued[key] = at
	b.s.schedule(at, prioNormal, func() {
		if b.queued[key] == b.s.now {
			delete(b.queued, key)
		}
		b.sync(key)
	})
}

// changed queues the budgets a write concerns: a budget itself, or every
// budget that selects a pod before or after the write.
func (b *budgets) changed(ch apiserver.Change) {
	switch obj := ch.Object().(type) {
	case *policyv1.PodDisruptionBudget:
		if ch.New != nil {
			b.enqueue(client.ObjectKeyFromObject(obj), b.s.now)
		}
	case *corev1.Pod:
		var list policyv1.PodDisruptionBudgetList
		if err := b.s.kube.List(b.s.ctx, &list, client.InNamespace(obj.Namespace)); err != nil {
			b.s.fail(err)
			return
		}
		for i := range list.Items {
			pdb := &list.Items[i]
			if (ch.Old != nil && selects(pdb, ch.Old.GetLabels())) || (ch.New != nil && selects(pdb, ch.New.GetLabels())) {
				b.enqueue(client.ObjectKeyFromObject(pdb), b.s.now)
			}
		}
	}
}

// sync writes a budget's status as the disruption controller computes it,
// and comes back when an entry of disruptedPods runs out.
func (b *budgets) sync(key types.NamespacedName) {
	s := b.s
	pdb := &policyv1.PodDisruptionBudget{}
	if err := s.kube.Get(s.ctx, key, pdb); err != nil {
		if !apierrors.IsNotFound(err) {
			s.fail(err)
		}
		return
	}
	now := s.clock.Now()
	st, recheck, err := b.compute(pdb, now)
	if err != nil {
		s.noteOnce("pdb-sync:"+key.String()+":"+err.Error(), "PodDisruptionBudget %s allows no disruption: %v", key, err)
		st = failSafeStatus(pdb, err, now)
	}
	if !equality.Semantic.DeepEqual(pdb.Status, st) {
		pdb.Status = st
		if err := s.kube.Status().Update(s.ctx, pdb); err != nil {
			if apierrors.IsConflict(err) {
				b.enqueue(key, s.now)
				return
			}
			s.fail(fmt.Errorf("writing PodDisruptionBudget %s status: %w", key, err))
			return
		}
	}
	if !recheck.IsZero() {
		// API times are whole seconds: a second past the timeout the entry
		// is surely gone.
		b.enqueue(key, recheck.Sub(Epoch)+time.Second)
	}
}

// compute reads the budget's pods and computes its status.
func (b *budgets) compute(pdb *policyv1.PodDisruptionBudget, now time.Time) (policyv1.PodDisruptionBudgetStatus, time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, time.Time{}, fmt.Errorf("selector: %w", err)
	}
	var list corev1.PodList
	if err := b.s.kube.List(b.s.ctx, &list, client.InNamespace(pdb.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, time.Time{}, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return budgetStatus(pdb, pods, b.s.scaleOf, now)
}

// scaleOf is the desired replicas of a controller the simulator runs that
// has a scale subresource (ReplicaSets; Jobs and DaemonSets have none).
func (s *Sim) scaleOf(ref *metav1.OwnerReference) (int32, bool) {
	if ref.Kind != "ReplicaSet" {
		return 0, false
	}
	for _, rs := range s.rsets {
		if rs.name == ref.Name {
			return rs.desired, true
		}
	}
	return 0, false
}

// selects reports whether a budget's selector picks a pod with these
// labels (an empty selector picks every pod of the namespace, a missing
// or invalid one none).
func selects(pdb *policyv1.PodDisruptionBudget, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(podLabels))
}

// evictionAllowed plays the eviction subresource's budget check. A pod
// that is pending, finished or already being deleted goes without one.
// More than one budget selecting the pod is refused with 500. An unready
// pod goes without taking a disruption when its budget is met (or its
// unhealthyPodEvictionPolicy is AlwaysAllow); otherwise the budget's
// stored status must allow a disruption, and the eviction takes it:
// disruptionsAllowed goes down by one and the pod is recorded in
// disruptedPods until the disruption controller sees it deleted.
func (s *Sim) evictionAllowed(pod *corev1.Pod) error {
	switch {
	case pod.Status.Phase == corev1.PodPending, pod.Status.Phase == corev1.PodSucceeded, pod.Status.Phase == corev1.PodFailed,
		pod.DeletionTimestamp != nil:
		return nil
	}
	var list policyv1.PodDisruptionBudgetList
	if err := s.kube.List(s.ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
		return err
	}
	var matching []*policyv1.PodDisruptionBudget
	for i := range list.Items {
		if selects(&list.Items[i], pod.Labels) {
			matching = append(matching, &list.Items[i])
		}
	}
	switch len(matching) {
	case 0:
		return nil
	case 1:
	default:
		return apierrors.NewInternalError(fmt.Errorf("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support"))
	}
	pdb := matching[0]
	if !podReady(pod) {
		if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
			return nil
		}
		if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return nil
		}
	}
	return s.takeDisruption(pdb, pod.Name)
}

// takeDisruption takes one disruption from a budget's stored status for
// pod, or refuses the eviction.
func (s *Sim) takeDisruption(pdb *policyv1.PodDisruptionBudget, pod string) error {
	st := &pdb.Status
	switch {
	case st.ObservedGeneration < pdb.Generation:
		return apierrors.NewTooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget: "+
			"the disruption controller has not yet seen generation %d of %s.", pdb.Generation, pdb.Name), 10)
	case st.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	case len(st.DisruptedPods) > maxDisruptedPods:
		return apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name,
			fmt.Errorf("%d evictions wait for the disruption controller", len(st.DisruptedPods)))
	case st.DisruptionsAllowed == 0:
		return apierrors.NewTooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget %s "+
			"(%d healthy, %d needed).", pdb.Name, st.CurrentHealthy, st.DesiredHealthy), 0)
	}
	now := s.clock.Now()
	st.DisruptionsAllowed--
	if st.DisruptionsAllowed == 0 {
		setDisruptionAllowed(st, now)
	}
	if st.DisruptedPods == nil {
		st.DisruptedPods = map[string]metav1.Time{}
	}
	st.DisruptedPods[pod] = metav1.NewTime(now.Truncate(time.Second))
	return s.kube.Status().Update(s.ctx, pdb)
}
