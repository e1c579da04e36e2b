package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// The disruption rule, shared by every controller that takes nodes away
// and by the simulator:
//
// A NodeClaim whose Disrupting condition is True is going away. From the
// moment it is marked, the provisioner offers its node no new pods (it
// still counts for topology spread, with its pods) and a nomination onto
// it is no place to wait for. Its pods are not planned here: the
// disruption executor (pkg/controllers/disruptor) launches their
// replacement capacity as a command and drains the node once it is ready,
// or when it must; the pods the drain evicts land on the replacements.
//
// Marking is the interruption handler's job: set Disrupting=True with one
// of the nsv1.DisruptingReason* reasons (and taint the node with
// nsv1.DisruptedTaint so kube-scheduler keeps new pods off it).

// Disrupted reports whether claim is marked as going away (Disrupting=True).
func Disrupted(claim *nsv1.NodeClaim) bool {
	return claim != nil && lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionDisrupting)
}

// Reschedulable reports whether pod, running on a disrupted node, must move
// elsewhere: a drain would evict it (it is not finished, static or
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

// NominatedTargets are the nodes and claims that nominations of pods not
// bound yet hold room on. Every nomination the provisioner has not dropped
// counts, also one it is about to let lapse: the pod may still land there.
// A target in the set must not be taken for empty capacity.
func NominatedTargets(snap *Snapshot, nominated NominatedFunc) map[string]bool {
	out := map[string]bool{}
	for _, p := range snap.Pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
			continue
		}
		if target, _, ok := nominated(p.UID); ok {
			out[target] = true
		}
	}
	return out
}
