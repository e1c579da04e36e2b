package simulator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// budgetRetry is how soon the emptiness controller looks again at a node a
// budget or a nomination held back.
const budgetRetry = 10 * time.Second

// emptySoon re-examines n at the end of this instant (after every pod event
// of the instant), as the emptiness controller reconciles on pod events.
func (s *Sim) emptySoon(n *node) {
	if n.system() || n.gone || n.deleting {
		return
	}
	s.schedule(s.now, prioLate, func() { s.checkEmpty(n) })
}

// checkEmpty is the emptiness controller's decision for one node, with the
// rules of pkg/lifecycle: an initialized node whose pods are all DaemonSet
// pods becomes eligible consolidateAfter after its last pod event; it is
// removed when no pending pod is nominated to it and the pool's budgets
// allow one more disruption. Otherwise it is looked at again when that may
// have changed. Consolidation of underused nodes is not simulated.
func (s *Sim) checkEmpty(n *node) {
	if n.system() || n.gone || n.deleting || !n.ready || n.obj.Annotations[nsv1.AnnotationDoNotDisrupt] == "true" {
		return
	}
	if !lifecycle.IsTrue(n.claim.Status.Conditions, nsv1.ConditionInitialized) || !lifecycle.IsEmpty(n.podObjs()) {
		return
	}
	np := s.pool(n.pool)
	eligibleAt, ok := lifecycle.EmptySince(n.claim, np)
	if !ok {
		return
	}
	now := s.clock.Now()
	if wait := eligibleAt.Sub(now); wait > 0 {
		s.after(wait, func() { s.checkEmpty(n) })
		return
	}
	if s.hasNominations(n.name) {
		s.after(budgetRetry, func() { s.checkEmpty(n) })
		return
	}
	total, disrupting := 0, 0
	for _, o := range s.nodes {
		if o.gone || o.pool != np.Name {
			continue
		}
		total++
		if o.deleting {
			disrupting++
		}
	}
	allowed, err := lifecycle.AllowedDisruptions(np.Spec.Disruption.Budgets, nsv1.DisruptionReasonEmpty, total, disrupting, now)
	if err != nil {
		s.noteOnce("budget:"+np.Name, "pool %s: %v; no node is disrupted while it is wrong", np.Name, err)
	}
	if allowed <= 0 {
		s.after(budgetRetry, func() { s.checkEmpty(n) })
		return
	}
	s.deleteNode(n, "empty")
}

func (s *Sim) hasNominations(name string) bool {
	for _, p := range s.pending {
		if p.state == podPending && s.heldTarget(p) == name {
			return true
		}
	}
	return false
}

// deleteNode deletes a node's claim: the node is tainted, billing stops and
// the provider terminates the instance.
func (s *Sim) deleteNode(n *node, reason string) {
	s.accrue(n)
	n.deleting = true
	l := &s.launches[n.launch]
	l.TerminatedAt, l.Terminated, l.Reason = s.now, true, reason
	ts := metav1.NewTime(s.clock.Now())
	n.claim.DeletionTimestamp = &ts
	n.obj.Spec.Taints = append(n.obj.Spec.Taints, corev1.Taint{Key: nsv1.DisruptedTaint.Key, Effect: nsv1.DisruptedTaint.Effect})
	if err := cloudprovider.IgnoreNodeClaimNotFound(s.cloud.Delete(s.ctx, n.claim)); err != nil {
		s.fail(err)
	}
}
