package simulator

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/cloudprovider"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// disruptionInterval is how often the disruption controller looks for nodes to remove.
const disruptionInterval = 10 * time.Second

// disrupt removes empty nodes: a node of a pool whose consolidateAfter has
// passed since its last pod event, with no workload pod and none on its way,
// as many at a time as the pool's budgets allow. The rules are pkg/lifecycle's
// (IsEmpty, EmptySince, AllowedDisruptions); consolidation of underused nodes
// is not simulated yet.
func (s *Sim) disrupt() {
	defer s.schedule(s.now+disruptionInterval, prioLate, s.disrupt)
	now := s.clock.Now()
	awaited := map[string]bool{}
	for _, p := range s.pending {
		if p.state == podPending && p.nominated != "" {
			awaited[p.nominated] = true
		}
	}
	for _, np := range s.pools {
		type candidate struct {
			n  *node
			at time.Time
		}
		var cands []candidate
		total, disrupting := 0, 0
		for _, n := range s.nodes {
			if n.gone || n.pool != np.Name {
				continue
			}
			total++
			if n.deleting {
				disrupting++
				continue
			}
			if !n.ready || awaited[n.name] || !lifecycle.IsEmpty(n.podObjs()) {
				continue
			}
			at, ok := lifecycle.EmptySince(n.claim, np)
			if ok && !now.Before(at) {
				cands = append(cands, candidate{n, at})
			}
		}
		if len(cands) == 0 {
			continue
		}
		allowed, err := lifecycle.AllowedDisruptions(np.Spec.Disruption.Budgets, nsv1.DisruptionReasonEmpty, total, disrupting, now)
		if err != nil {
			s.noteOnce("budget:"+np.Name, "pool %s: %v; no node is disrupted while it is wrong", np.Name, err)
		}
		slices.SortStableFunc(cands, func(a, b candidate) int { return a.at.Compare(b.at) })
		for _, c := range cands[:min(allowed, len(cands))] {
			s.deleteNode(c.n, "empty")
		}
	}
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
