package lifecycle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VerdictWait is how long a pod the default scheduler has not yet judged
// may wait before it is planned without a verdict. kube-scheduler judges a
// pod within milliseconds when it keeps up; under a burst it marks pods
// Unschedulable at a few hundred a second or fewer (the lab's 1,000-pod
// burst took 18 s), and waiting for the last verdict would turn one
// provisioning cycle into many. Creation timestamps have whole-second
// precision, so a pod is planned one to two seconds after it was created.
const VerdictWait = 2 * time.Second

// IsProvisionable reports whether pod asks for new capacity at now and, when
// it does not, why. A pod is provisionable when it is not bound, not
// terminating or finished, carries no preemption nomination (kube-scheduler
// expects room to appear on that node), is not managed per node (a DaemonSet
// pod or a static pod follows its node; a new node never helps it), and
// either kube-scheduler has tried and rejected it (PodScheduled False, reason
// Unschedulable) or it is the default scheduler's, has no scheduling gates,
// and has waited VerdictWait without a verdict. Planning such a pod early is
// safe: the solver fills existing nodes and in-flight claims first, exactly
// where kube-scheduler would put it.
func IsProvisionable(pod *corev1.Pod, now time.Time) (bool, string) {
	n, wait := provisionable(pod, now)
	return n == provisionableNow, n.reason(pod, wait)
}

// Provisionable is IsProvisionable without the reason: the hot paths ask
// it of every pod on every pod event and every plan, and formatting why a
// bound pod is not provisionable cost more than the answer.
func Provisionable(pod *corev1.Pod, now time.Time) bool {
	n, _ := provisionable(pod, now)
	return n == provisionableNow
}

// ProvisionableIn reports how long until pod becomes provisionable by time
// alone (it awaits a verdict the default scheduler has not given yet), or
// false when waiting will not change the answer.
func ProvisionableIn(pod *corev1.Pod, now time.Time) (time.Duration, bool) {
	n, wait := provisionable(pod, now)
	return wait, n != provisionableNow && wait > 0
}

// notProvisionable says why a pod is not provisionable; reason spells it
// out only when asked (IsProvisionable), never on the hot paths.
type notProvisionable int

const (
	provisionableNow notProvisionable = iota
	isBound
	isTerminating
	isFinished
	isPreemptionNominated
	isDaemonSetPod
	isStaticPod
	isGated
	isOtherSchedulers
	isAwaitingVerdict
)

func (n notProvisionable) reason(pod *corev1.Pod, wait time.Duration) string {
	switch n {
	case isBound:
		return fmt.Sprintf("bound to node %s", pod.Spec.NodeName)
	case isTerminating:
		return "terminating"
	case isFinished:
		return fmt.Sprintf("finished (%s)", pod.Status.Phase)
	case isPreemptionNominated:
		return fmt.Sprintf("nominated to node %s by kube-scheduler preemption", pod.Status.NominatedNodeName)
	case isDaemonSetPod:
		return "owned by a DaemonSet"
	case isStaticPod:
		return "a static pod owned by its node"
	case isGated:
		return fmt.Sprintf("held by scheduling gate %s", pod.Spec.SchedulingGates[0].Name)
	case isOtherSchedulers:
		return "not yet marked Unschedulable by its scheduler"
	case isAwaitingVerdict:
		return fmt.Sprintf("not yet judged by kube-scheduler; planned without a verdict in %s", wait.Round(time.Millisecond))
	}
	return ""
}

func provisionable(pod *corev1.Pod, now time.Time) (notProvisionable, time.Duration) {
	switch {
	case pod.Spec.NodeName != "":
		return isBound, 0
	case pod.DeletionTimestamp != nil:
		return isTerminating, 0
	case IsTerminal(pod):
		return isFinished, 0
	case pod.Status.NominatedNodeName != "":
		return isPreemptionNominated, 0
	case IsDaemonSetPod(pod):
		return isDaemonSetPod, 0
	case IsOwnedByNode(pod):
		return isStaticPod, 0
	case len(pod.Spec.SchedulingGates) > 0:
		return isGated, 0
	}
	if MarkedUnschedulable(pod) {
		return provisionableNow, 0
	}
	cond := podCondition(pod, corev1.PodScheduled)
	if cond != nil || !defaultScheduler(pod) {
		return isOtherSchedulers, 0
	}
	if wait := VerdictWait - now.Sub(pod.CreationTimestamp.Time); wait > 0 {
		return isAwaitingVerdict, wait
	}
	return provisionableNow, 0
}

// MarkedUnschedulable reports whether the pod's scheduler tried it and
// found no node (PodScheduled False, reason Unschedulable).
func MarkedUnschedulable(pod *corev1.Pod) bool {
	cond := podCondition(pod, corev1.PodScheduled)
	return cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable
}

func defaultScheduler(pod *corev1.Pod) bool {
	return pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName
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
