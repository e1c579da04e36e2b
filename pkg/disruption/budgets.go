package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// tracker counts each pool's disruptions against its budgets as a plan
// adds actions: every node disrupting, whatever its reason, counts against
// every reason's limit.
type tracker struct {
	limits     map[string]map[nsv1.DisruptionReason]int
	disrupting map[string]int
	errs       map[string]error
}

func newTracker(snap *provisioning.Snapshot, pools map[string]*nsv1.NodePool, recent func(string) bool, now time.Time) *tracker {
	t := &tracker{limits: map[string]map[nsv1.DisruptionReason]int{}, disrupting: map[string]int{}, errs: map[string]error{}}
	total := map[string]int{}
	for _, c := range snap.NodeClaims {
		pool := c.Labels[nsv1.LabelNodePool]
		disrupting := isDisrupting(c, recent)
		// A claim still launching or registering is not yet capacity: it
		// counts toward neither side, or a replacement in flight would
		// raise a percentage budget's allowance while it replaces (10 % of
		// 10 nodes plus the replacement rounds up to 2). Karpenter counts
		// initialized nodes only, for the same reason.
		if !disrupting && !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) {
			continue
		}
		total[pool]++
		// A node that stopped being Ready is capacity already lost: it
		// holds the budget as a disruption does.
		if disrupting || notReady(snap.NodeByID[c.Status.ProviderID]) {
			t.disrupting[pool]++
		}
	}
	for name, np := range pools {
		t.limits[name] = map[nsv1.DisruptionReason]int{}
		for _, r := range nsv1.DisruptionReasons {
			n, err := budget.Limit(np.Spec.Disruption.Budgets, r, total[name], now)
			if err != nil && t.errs[name] == nil {
				t.errs[name] = err
			}
			t.limits[name][r] = n
		}
	}
	return t
}

// allowed is how many more of pool's nodes may be disrupted for reason.
func (t *tracker) allowed(pool string, reason nsv1.DisruptionReason) int {
	l, ok := t.limits[pool]
	if !ok {
		return 0
	}
	return max(0, l[reason]-t.disrupting[pool])
}

// take counts one more node of pool as disrupting.
func (t *tracker) take(pool string) { t.disrupting[pool]++ }

// allowance is every pool's allowance per reason, for the plan's report.
func (t *tracker) allowance() map[string]map[nsv1.DisruptionReason]int {
	out := map[string]map[nsv1.DisruptionReason]int{}
	for pool := range t.limits {
		out[pool] = map[nsv1.DisruptionReason]int{}
		for _, r := range nsv1.DisruptionReasons {
			out[pool][r] = t.allowed(pool, r)
		}
	}
	return out
}

// notReady reports whether the node reports its Ready condition as False or
// Unknown (a node that has not reported it yet is not counted: it is new).
func notReady(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	c := lifecycle.NodeCondition(n, corev1.NodeReady)
	return c != nil && c.Status != corev1.ConditionTrue
}
