package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// The disruption rule, shared by every controller that takes nodes away
// (interruption handling, and consolidation, drift and expiry as they are
// built) and by the simulator:
//
// A NodeClaim whose Disrupting condition is True is going away. From the
// moment it is marked, the provisioner treats the pods on its node that a
// drain would move (Reschedulable) as pending — planned like pods
// kube-scheduler could not place, nominations and all — and offers the node
// itself no new pods (it still counts for topology spread, without the pods
// being moved). So replacement capacity is planned in the next cycle, while
// the node still runs its pods; the controller that marked the claim drains
// it once the replacement is ready, or when it must.
//
// Marking is the controller's job: set Disrupting=True with one of the
// nsv1.DisruptingReason* reasons (and taint the node with
// nsv1.DisruptedTaint so kube-scheduler keeps new pods off it).

// Disrupted reports whether claim is marked as going away (Disrupting=True).
func Disrupted(claim *nsv1.NodeClaim) bool {
	return claim != nil && lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionDisrupting)
}

// Reschedulable reports whether pod, running on a disrupted node, must be
// planned elsewhere: a drain would evict it (it is not finished, static or
// already terminating) and it is not a DaemonSet pod (those follow nodes,
// and the solver counts DaemonSet overhead on new nodes itself).
func Reschedulable(pod *corev1.Pod) bool {
	return lifecycle.NeedsEviction(pod) && !lifecycle.IsDaemonSetPod(pod)
}

// disruptedNodes are the names of the nodes of disrupted claims.
func disruptedNodes(snap *Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, c := range snap.NodeClaims {
		if Disrupted(c) && c.Status.NodeName != "" {
			out[c.Status.NodeName] = true
		}
	}
	for name, c := range snap.ClaimByNode {
		if Disrupted(c) {
			out[name] = true
		}
	}
	return out
}

// goingAway are the names of the claims, and of their nodes and the other
// nodes, that are deleted or marked Disrupting: targets a nomination must
// not wait for.
func goingAway(snap *Snapshot) map[string]bool {
	out := disruptedNodes(snap)
	for _, c := range snap.NodeClaims {
		if Disrupted(c) || !c.DeletionTimestamp.IsZero() {
			out[c.Name] = true
			if c.Status.NodeName != "" {
				out[c.Status.NodeName] = true
			}
		}
	}
	for _, n := range snap.Nodes {
		if !n.DeletionTimestamp.IsZero() {
			out[n.Name] = true
		}
	}
	return out
}

// NominatedTargets are the nodes and claims that live nominations hold room
// on: those of pods not bound yet, and those of pods the provisioner moves
// off a disrupted node (a replacement prespun for a rebalance
// recommendation holds its pods' nominations while they still run on the
// recommended node). Every live nomination counts, also one the provisioner
// is about to let lapse: the pod may still land there. A target in the set
// must not be taken for empty capacity.
func NominatedTargets(snap *Snapshot, nominated NominatedFunc) map[string]bool {
	out := map[string]bool{}
	disrupted := disruptedNodes(snap)
	for _, p := range snap.Pods {
		if p.DeletionTimestamp != nil || (p.Spec.NodeName != "" && !movedOff(p, disrupted)) {
			continue
		}
		if target, ok := nominated(p.UID); ok {
			out[target] = true
		}
	}
	return out
}

// movedOff reports whether pod is one the provisioner plans elsewhere
// because its node is disrupted.
func movedOff(pod *corev1.Pod, disrupted map[string]bool) bool {
	return pod.Spec.NodeName != "" && disrupted[pod.Spec.NodeName] && Reschedulable(pod)
}
