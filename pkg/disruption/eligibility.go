package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// blocker says why no method may disrupt n at all, if anything does: it is
// not initialized, its pool is gone, it or one of its pods is marked
// do-not-disrupt, a PodDisruptionBudget holds one of its pods, pods are
// nominated to it or a ProvisioningRequest booked it, one of its pods' volumes is not ready (it could go
// nowhere), or it is a replacement whose command is still running.
func (w *working) blocker(n *nodeInfo, pdbs []pdbView) (SkipReason, string, bool) {
	c := n.claim
	switch {
	case !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized):
		return SkipNotInitialized, fmt.Sprintf("node %s has not initialized", n.name), true
	case n.pool == nil:
		return SkipNodePoolNotFound, fmt.Sprintf("nodepool %q is gone or being deleted", n.poolName()), true
	case n.node.Annotations[nsv1.AnnotationDoNotDisrupt] == "true":
		return SkipNodeDoNotDisrupt, fmt.Sprintf("node %s has %s=true", n.name, nsv1.AnnotationDoNotDisrupt), true
	}
	if cmd := c.Annotations[nsv1.AnnotationReplacementFor]; cmd != "" && w.commands[cmd] {
		return SkipReplacementInProgress, fmt.Sprintf("node %s replaces nodes of disruption command %s that still exist", n.name, cmd), true
	}
	for _, p := range n.pods {
		if lifecycle.IsTerminal(p) || provisioning.IsBufferPod(p) {
			continue
		}
		if blocked, until, why := lifecycle.DoNotDisrupt(p, w.in.Now); blocked {
			if !until.IsZero() {
				w.until(until)
			}
			return SkipPodDoNotDisrupt, why, true
		}
	}
	for _, p := range n.movable {
		if provisioning.IsBufferPod(p) {
			continue // room, not a pod: nothing to evict
		}
		if pdb := blockingPDB(pdbs, p); pdb != nil {
			return SkipPodDisruptionBudget, fmt.Sprintf("PodDisruptionBudget %s/%s allows no eviction of pod %s now", pdb.Namespace, pdb.Name, p.Name), true
		}
	}
	if n.stuck != "" {
		return SkipNowhereToGo, n.stuck, true
	}
	if w.nominatedTargets[n.name] || w.nominatedTargets[c.Name] {
		return SkipPodsNominated, fmt.Sprintf("pending pods are nominated to node %s", n.name), true
	}
	if b := w.in.Booked; b != nil && (b(n.name) || b(c.Name)) {
		return SkipBooked, fmt.Sprintf("node %s is booked for a ProvisioningRequest's pods", n.name), true
	}
	return "", "", false
}

// pdbView is a PodDisruptionBudget with its selector parsed once.
type pdbView struct {
	*policyv1.PodDisruptionBudget
	selector labels.Selector
}

func pdbViews(pdbs []*policyv1.PodDisruptionBudget) []pdbView {
	out := make([]pdbView, 0, len(pdbs))
	for _, p := range pdbs {
		if p.Spec.Selector == nil {
			continue // selects nothing
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			continue // the API server refuses these; nothing to honour
		}
		out = append(out, pdbView{PodDisruptionBudget: p, selector: sel})
	}
	return out
}

// blockingPDB is a budget covering pod that allows no disruption now.
func blockingPDB(pdbs []pdbView, pod *corev1.Pod) *pdbView {
	for i := range pdbs {
		p := &pdbs[i]
		if p.Namespace == pod.Namespace && p.Status.DisruptionsAllowed <= 0 && p.selector.Matches(labels.Set(pod.Labels)) {
			return p
		}
	}
	return nil
}

// expiry is when n's claim expires, if it does.
func expiry(n *nodeInfo) (time.Time, bool) {
	d := n.claim.Spec.ExpireAfter.Duration
	if d == nil {
		return time.Time{}, false
	}
	return n.claim.CreationTimestamp.Add(*d), true
}
