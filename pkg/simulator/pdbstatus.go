package simulator

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// deletionTimeout is how long a pod the eviction subresource let go stays
// out of a budget's currentHealthy while it is not being deleted: after it,
// kube-controller-manager assumes the deletion will not come and counts the
// pod again.
const deletionTimeout = 2 * time.Minute

// scaleFunc is the desired replicas of a pod's controller; false when the
// controller has no scale kube-controller-manager could read.
type scaleFunc func(ref *metav1.OwnerReference) (int32, bool)

// budgetStatus is the status kube-controller-manager's disruption
// controller writes for pdb, given every pod its selector picks in its
// namespace. It is the one computation of a budget's numbers in the
// simulator: the status writer (syncBudget) stores it, and the eviction
// subresource decides from what is stored (evictionAllowed), as on a
// cluster. recheck is when an entry of disruptedPods runs out (zero when
// none is left). An error is a budget whose expected count cannot be
// worked out; the writer then stores failSafeStatus.
func budgetStatus(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale scaleFunc, now time.Time) (policyv1.PodDisruptionBudgetStatus, time.Time, error) {
	expected, desired, err := expectedPods(pdb, pods, scale)
	if err != nil {
		return policyv1.PodDisruptionBudgetStatus{}, time.Time{}, err
	}
	disrupted, recheck := disruptedPods(pdb, pods, now)
	healthy := countHealthy(pods, disrupted, now)
	// A budget whose pods are expected to be none allows nothing: its first
	// pods may appear before the next sync.
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	st := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptedPods:      disrupted,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		Conditions:         append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	setDisruptionAllowed(&st, now)
	return st, recheck, nil
}

// expectedPods is the budget's expected and desired healthy pods. With
// maxUnavailable or a percentage minAvailable the expected pods are the
// pods' controllers' replicas; with an integer minAvailable, the pods
// themselves. Pods without a controller are left out of the controllers'
// count (kube-controller-manager warns about them); a controller with no
// scale is an error.
func expectedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, scale scaleFunc) (expected, desired int32, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		if expected, err = controllersScale(pods, scale); err != nil {
			return 0, 0, err
		}
		down, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(expected-int32(down), 0), nil
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), pdb.Spec.MinAvailable.IntVal, nil
	case pdb.Spec.MinAvailable != nil:
		if expected, err = controllersScale(pods, scale); err != nil {
			return 0, 0, err
		}
		up, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(up), nil
	}
	return 0, 0, nil
}

// controllersScale sums the replicas of the pods' distinct controllers.
func controllersScale(pods []*corev1.Pod, scale scaleFunc) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || seen[ref.UID] {
			continue
		}
		n, ok := scale(ref)
		if !ok {
			return 0, fmt.Errorf("found no controller with a scale for pod %q (%s %s)", p.Name, ref.Kind, ref.Name)
		}
		seen[ref.UID] = true
		total += n
	}
	return total, nil
}

// disruptedPods keeps the entries of status.disruptedPods whose pod still
// exists, is not being deleted and was let go less than deletionTimeout
// ago; recheck is when the first kept entry runs out.
func disruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Time) {
	var kept map[string]metav1.Time
	var recheck time.Time
	for _, p := range pods {
		at, ok := pdb.Status.DisruptedPods[p.Name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		due := at.Add(deletionTimeout)
		if due.Before(now) {
			continue // the deletion never came; the pod counts again
		}
		if kept == nil {
			kept = map[string]metav1.Time{}
		}
		kept[p.Name] = at
		if recheck.IsZero() || due.Before(recheck) {
			recheck = due
		}
	}
	return kept, recheck
}

// countHealthy counts the Ready pods that are neither being deleted nor
// let go by an eviction less than deletionTimeout ago.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[p.Name]; ok && at.Add(deletionTimeout).After(now) {
			continue
		}
		if podReady(p) {
			n++
		}
	}
	return n
}

// setDisruptionAllowed sets the DisruptionAllowed condition from
// disruptionsAllowed.
func setDisruptionAllowed(st *policyv1.PodDisruptionBudgetStatus, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason,
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	if st.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// failSafeStatus is what the disruption controller stores when it cannot
// compute a budget: no disruption allowed, and why.
func failSafeStatus(pdb *policyv1.PodDisruptionBudget, err error, now time.Time) policyv1.PodDisruptionBudgetStatus {
	st := *pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.SyncFailedReason, Message: err.Error(), ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)})
	return st
}

// podReady: the pod's Ready condition is true (what Kubernetes counts as
// a healthy pod for a budget).
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
