package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// IsEmpty reports whether a node holding pods runs no workload: only
// DaemonSet pods, static pods and finished pods are left.
func IsEmpty(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if IsTerminal(p) || IsDaemonSetPod(p) || IsOwnedByNode(p) {
			continue
		}
		return false
	}
	return true
}

// EmptySince is when an empty node became eligible for removal: consolidateAfter
// after the claim last saw a pod arrive or leave (or after it initialized).
// ok is false when the pool never consolidates.
func EmptySince(claim *nsv1.NodeClaim, pool *nsv1.NodePool) (eligibleAt time.Time, ok bool) {
	after := pool.Spec.Disruption.ConsolidateAfter
	if after.Raw != nil && after.IsNever() {
		return time.Time{}, false
	}
	var d time.Duration
	if after.Duration != nil {
		d = *after.Duration
	}
	last := claim.Status.LastPodEventTime.Time
	if init := findTime(claim, nsv1.ConditionInitialized); init.After(last) {
		last = init
	}
	if last.IsZero() {
		last = claim.CreationTimestamp.Time
	}
	return last.Add(d), true
}

func findTime(claim *nsv1.NodeClaim, t string) time.Time {
	for _, c := range claim.Status.Conditions {
		if c.Type == t && c.Status == "True" {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
