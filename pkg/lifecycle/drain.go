package lifecycle

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Priority classes whose pods keep the node running (networking, DNS, CSI):
// they leave last so the rest can drain cleanly.
const (
	SystemClusterCritical = "system-cluster-critical"
	SystemNodeCritical    = "system-node-critical"
)

// IsCritical reports whether pod runs at a system-critical priority.
func IsCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == SystemClusterCritical || pod.Spec.PriorityClassName == SystemNodeCritical
}

// NeedsEviction reports whether a draining node must evict pod before its
// instance is terminated. Finished pods hold nothing, static pods die with
// the node, and pods already terminating are on their way out. A pod that
// tolerates the disrupted taint is left too: its controller would put it
// straight back on the draining node (a DaemonSet pod tolerating every
// taint, kube-proxy's shape, is the common case) and the drain would never
// end; it goes with the instance.
func NeedsEviction(pod *corev1.Pod) bool {
	return !IsTerminal(pod) && !IsOwnedByNode(pod) && pod.DeletionTimestamp == nil && !ToleratesDisruption(pod)
}

// ToleratesDisruption reports whether pod tolerates the taint a draining
// node carries.
func ToleratesDisruption(pod *corev1.Pod) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(logr.Discard(), &nsv1.DisruptedTaint, false) {
			return true
		}
	}
	return false
}

// DrainOrder groups the pods to evict into the tiers a drain works through,
// one tier at a time: non-critical workload pods, then non-critical DaemonSet
// pods, then critical workload pods, then critical DaemonSet pods. Workloads
// leave while the node's agents (logging, networking) still run. Empty tiers
// are dropped; pods that need no eviction are left out.
func DrainOrder(pods []*corev1.Pod) [][]*corev1.Pod {
	tiers := make([][]*corev1.Pod, 4)
	for _, p := range pods {
		if !NeedsEviction(p) {
			continue
		}
		i := 0
		if IsDaemonSetPod(p) {
			i = 1
		}
		if IsCritical(p) {
			i += 2
		}
		tiers[i] = append(tiers[i], p)
	}
	out := tiers[:0]
	for _, t := range tiers {
		if len(t) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// DoNotDisrupt evaluates the nodesmith.sh/do-not-disrupt annotation of pod at
// now. "true" blocks voluntary disruption for as long as it is set; a duration
// ("30m") blocks it until that long after the pod started. A value that is
// neither blocks too: refusing to guess is the safe side, and the message
// tells the user to fix it.
func DoNotDisrupt(pod *corev1.Pod, now time.Time) (blocked bool, until time.Time, reason string) {
	v, ok := pod.Annotations[nsv1.AnnotationDoNotDisrupt]
	if !ok {
		return false, time.Time{}, ""
	}
	if strings.EqualFold(v, "true") {
		return true, time.Time{}, fmt.Sprintf("pod %s/%s has %s=true", pod.Namespace, pod.Name, nsv1.AnnotationDoNotDisrupt)
	}
	if strings.EqualFold(v, "false") || v == "" {
		return false, time.Time{}, ""
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return true, time.Time{}, fmt.Sprintf("pod %s/%s has %s=%q, which is neither \"true\" nor a duration such as \"30m\"; treated as \"true\"",
			pod.Namespace, pod.Name, nsv1.AnnotationDoNotDisrupt, v)
	}
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	until = start.Add(d)
	if !now.Before(until) {
		return false, time.Time{}, ""
	}
	return true, until, fmt.Sprintf("pod %s/%s has %s=%s until %s", pod.Namespace, pod.Name,
		nsv1.AnnotationDoNotDisrupt, v, until.UTC().Format(time.RFC3339))
}

// TerminationDeadline is when a deleted claim's grace period ends and its
// remaining pods are deleted regardless of PDBs and do-not-disrupt. ok is
// false when the claim is not being deleted or has no grace period (the drain
// then waits as long as it takes).
func TerminationDeadline(claim *nsv1.NodeClaim) (deadline time.Time, ok bool) {
	if claim.DeletionTimestamp == nil {
		return time.Time{}, false
	}
	if v, found := claim.Annotations[nsv1.AnnotationTerminationTimestamp]; found {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, true
		}
	}
	if claim.Spec.TerminationGracePeriod == nil {
		return time.Time{}, false
	}
	return claim.DeletionTimestamp.Add(claim.Spec.TerminationGracePeriod.Duration), true
}

// PodDeleteTime is when a pod still on a node whose grace period ends at
// deadline must be deleted so that its own terminationGracePeriodSeconds
// still fits before the instance goes away.
func PodDeleteTime(pod *corev1.Pod, deadline time.Time) time.Time {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	return deadline.Add(-time.Duration(grace) * time.Second)
}
