package simulator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// evictionAllowed plays the API server's eviction check together with the
// disruption controller that keeps PDB status current: an eviction is
// refused with 429 when it would take the pods a budget selects below what
// the budget requires, and with 500 when more than one budget selects the
// pod, as the API server does. The budget's expected count is its pods'
// controllers' desired replicas; healthy pods are Ready and not being
// deleted. A pod that is not healthy may go if the budget is met
// (unhealthyPodEvictionPolicy IfHealthyBudget, the default).
func (s *Sim) evictionAllowed(pod *corev1.Pod) error {
	var pdbs policyv1.PodDisruptionBudgetList
	if err := s.kube.List(s.ctx, &pdbs, client.InNamespace(pod.Namespace)); err != nil {
		return err
	}
	var matching []*policyv1.PodDisruptionBudget
	for i := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdbs.Items[i].Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labelsOf(pod)) {
			matching = append(matching, &pdbs.Items[i])
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
	expected, healthy, err := s.budgetCounts(pdb)
	if err != nil {
		return err
	}
	desiredHealthy := 0
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
		if err != nil {
			return err
		}
		desiredHealthy = max(expected-maxUnavailable, 0)
	case pdb.Spec.MinAvailable != nil:
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
		if err != nil {
			return err
		}
		desiredHealthy = minAvailable
	default:
		return nil
	}
	if !podHealthy(pod) && healthy >= desiredHealthy {
		return nil
	}
	if healthy-desiredHealthy <= 0 {
		return apierrors.NewTooManyRequests(fmt.Sprintf("Cannot evict pod as it would violate the pod's disruption budget %s "+
			"(%d healthy, %d needed).", pdb.Name, healthy, desiredHealthy), 10)
	}
	return nil
}

// budgetCounts are the budget's expected pods (its pods' controllers'
// desired replicas, or the pods themselves when they have none the
// simulator runs) and its healthy pods.
func (s *Sim) budgetCounts(pdb *policyv1.PodDisruptionBudget) (expected, healthy int, err error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return 0, 0, err
	}
	var pods corev1.PodList
	if err := s.kube.List(s.ctx, &pods, client.InNamespace(pdb.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return 0, 0, err
	}
	owners := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if podHealthy(p) {
			healthy++
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			expected++
			continue
		}
		key := ref.Kind + "/" + ref.Name
		if owners[key] {
			continue
		}
		owners[key] = true
		if n, ok := s.scaleOf(ref.Kind, ref.Name); ok {
			expected += n
		} else {
			expected++
		}
	}
	return expected, healthy, nil
}

// scaleOf is the desired replicas of a workload the simulator runs.
func (s *Sim) scaleOf(kind, name string) (int, bool) {
	switch kind {
	case "ReplicaSet":
		for _, rs := range s.rsets {
			if rs.name == name {
				return int(rs.desired), true
			}
		}
	case "Job":
		for _, j := range s.jobs {
			if j.spec.Name == name {
				return int(j.wanted()), true
			}
		}
	}
	return 0, false
}

func podHealthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func labelsOf(p *corev1.Pod) labels.Set { return labels.Set(p.Labels) }
