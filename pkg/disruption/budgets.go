package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// tracker holds each pool's budget allowance as a plan adds actions: every
// node disrupting, whatever its reason, counts against every reason's
// limit. The counting is budget.Count's; the tracker only takes.
type tracker struct {
	pools map[string]*budget.Allowance
	errs  map[string]error
}

func newTracker(snap *provisioning.Snapshot, pools map[string]*nsv1.NodePool, recent func(string) bool, now time.Time) *tracker {
	ledgers := budget.Count(snap.NodeClaims, func(c *nsv1.NodeClaim) *corev1.Node { return snap.NodeByID[c.Status.ProviderID] }, recent)
	t := &tracker{pools: map[string]*budget.Allowance{}, errs: map[string]error{}}
	for name, np := range pools {
		a := budget.NewAllowance(np.Spec.Disruption.Budgets, ledgers[name], now)
		for _, r := range nsv1.DisruptionReasons {
			a.Allowed(r)
		}
		if err := a.Err(); err != nil {
			t.errs[name] = err
		}
		t.pools[name] = a
	}
	return t
}

// allowed is how many more of pool's nodes may be disrupted for reason.
func (t *tracker) allowed(pool string, reason nsv1.DisruptionReason) int {
	a, ok := t.pools[pool]
	if !ok {
		return 0
	}
	return a.Allowed(reason)
}

// take counts one more node of pool as disrupting.
func (t *tracker) take(pool string) {
	if a, ok := t.pools[pool]; ok {
		a.Take()
	}
}

// allowance is every pool's allowance per reason, for the plan's report.
func (t *tracker) allowance() map[string]map[nsv1.DisruptionReason]int {
	out := map[string]map[nsv1.DisruptionReason]int{}
	for pool := range t.pools {
		out[pool] = map[nsv1.DisruptionReason]int{}
		for _, r := range nsv1.DisruptionReasons {
			out[pool][r] = t.allowed(pool, r)
		}
	}
	return out
}
