package lifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsProvisionable reports whether pod asks for new capacity and, when it does
// not, why. A pod is provisionable when kube-scheduler has already tried and
// rejected it (PodScheduled False, reason Unschedulable), it is not bound, not
// terminating or finished, carries no preemption nomination (kube-scheduler
// expects room to appear on that node), and is not managed per node (a
// DaemonSet pod or a static pod follows its node; a new node never helps it).
func IsProvisionable(pod *corev1.Pod) (bool, string) {
	switch {
	case pod.Spec.NodeName != "":
		return false, fmt.Sprintf("bound to node %s", pod.Spec.NodeName)
	case pod.DeletionTimestamp != nil:
		return false, "terminating"
	case IsTerminal(pod):
		return false, fmt.Sprintf("finished (%s)", pod.Status.Phase)
	case pod.Status.NominatedNodeName != "":
		return false, fmt.Sprintf("nominated to node %s by kube-scheduler preemption", pod.Status.NominatedNodeName)
	case IsDaemonSetPod(pod):
		return false, "owned by a DaemonSet"
	case IsOwnedByNode(pod):
		return false, "a static pod owned by its node"
	}
	cond := podCondition(pod, corev1.PodScheduled)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
		return false, "not yet marked Unschedulable by kube-scheduler"
	}
	return true, ""
}

// IsDaemonSetPod reports whether a DaemonSet controls pod.
func IsDaemonSetPod(pod *corev1.Pod) bool { return controlledBy(pod, "DaemonSet") }

// IsOwnedByNode reports whether pod is a static (mirror) pod owned by a Node.
func IsOwnedByNode(pod *corev1.Pod) bool { return controlledBy(pod, "Node") }

// IsTerminal reports whether pod has finished and holds no resources.
func IsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func controlledBy(pod *corev1.Pod, kind string) bool {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.Kind == kind
	}
	// Some tools set owners without the controller bit; a Node or DaemonSet
	// owner still means the pod is tied to one node.
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == kind {
			return true
		}
	}
	return false
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
