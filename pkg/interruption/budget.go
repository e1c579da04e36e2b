package interruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
)

// RebalanceBudget is how many more of pool's nodes its budgets let a
// rebalance drain take now (reason Rebalance), measured against the pool's
// ledger as the disruption planner measures it (budget.Count over claims,
// with their nodes for readiness). claims and nodes may hold other pools'
// too. A budget that cannot be read allows nothing and is returned in err.
func RebalanceBudget(pool *nsv1.NodePool, claims []*nsv1.NodeClaim, nodes []*corev1.Node, now time.Time) (int, error) {
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	ledger := budget.Count(claims, func(c *nsv1.NodeClaim) *corev1.Node { return byName[c.Status.NodeName] }, nil)[pool.Name]
	return budget.Allowed(pool.Spec.Disruption.Budgets, nsv1.DisruptionReasonRebalance, ledger, now)
}
