package simulator

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// emptySoon re-examines n at the end of this instant (after every pod event
// of the instant), as the emptiness controller reconciles on pod events.
func (s *Sim) emptySoon(n *node) {
	if n.system() || n.gone || n.deleting {
		return
	}
	s.schedule(s.now, prioLate, func() { s.checkEmpty(n) })
}

// checkEmpty runs the emptiness controller's decision for one node
// (pkg/lifecycle.EmptinessVerdict) and carries it out: delete the node's
// claim, or look again when the verdict says. The simulator stamps every pod
// event on the claim as it happens (podEventOn), so it never asks the
// verdict to stamp one. Consolidation of underused nodes is not simulated.
func (s *Sim) checkEmpty(n *node) {
	if n.system() || n.gone || n.deleting || !n.ready {
		return
	}
	np := s.pool(n.pool)
	v := lifecycle.EmptinessVerdict(lifecycle.EmptinessInput{
		Claim: n.claim, Node: n.obj, Pool: np, Pods: n.podObjs(),
		Nominated:  s.hasNominations(n.name),
		PoolClaims: s.poolClaims(np.Name),
		Now:        s.clock.Now(),
	})
	if v.BudgetErr != nil {
		s.noteOnce("budget:"+np.Name, "pool %s: %v; no node is disrupted while it is wrong", np.Name, v.BudgetErr)
	}
	if v.Delete {
		s.deleteNode(n, "empty")
		return
	}
	if v.RequeueAfter > 0 {
		s.after(v.RequeueAfter, func() { s.checkEmpty(n) })
	}
}

// poolClaims are the claims of pool's live nodes as the controller's cache
// would show them.
func (s *Sim) poolClaims(pool string) []*nsv1.NodeClaim {
	var out []*nsv1.NodeClaim
	for _, o := range s.nodes {
		if o.gone || o.system() || o.pool != pool {
			continue
		}
		out = append(out, s.claimView(o))
	}
	return out
}

// claimView is n's claim as the API would show it: a node the simulator
// stopped (deleted, or its instance went away) has a claim being deleted,
// as the termination and interruption controllers would have made it.
func (s *Sim) claimView(n *node) *nsv1.NodeClaim {
	if !n.deleting || !n.claim.DeletionTimestamp.IsZero() {
		return n.claim
	}
	c := *n.claim
	ts := metav1.NewTime(s.clock.Now())
	c.DeletionTimestamp = &ts
	return &c
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
