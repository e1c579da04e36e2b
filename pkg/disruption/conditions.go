package disruption

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodesmith/nodesmith/apis/aws/v1"
	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// ClaimConditions are the Drifted and Consolidatable conditions a claim
// carries, as Karpenter's claims do, so `kubectl get nodeclaim -o yaml` and
// the tools that read them see what the planner sees. Each is True or
// absent:
//   - Drifted: the claim launched and no longer matches its pool or node
//     class (Drifted, the rule the drift step plans with); the reason is
//     what drifted.
//   - Consolidatable: the claim initialized and its pool's consolidateAfter
//     has passed since a pod last arrived or left (lifecycle.EmptySince,
//     the rule emptiness and consolidation plan with); a pool whose
//     consolidateAfter is Never makes no claim consolidatable.
//
// They say a node may be disrupted, not that it will be: budgets, PDBs,
// do-not-disrupt and the plan's savings still decide. recheck is when
// Consolidatable turns True with nothing else changing (zero: it will not).
// pool nil (the claim's pool is gone) leaves both absent.
type ClaimConditions struct {
	Drifted        *metav1.Condition
	Consolidatable *metav1.Condition
	Recheck        time.Time
}

// ConditionsOf decides a claim's ClaimConditions at now.
func ConditionsOf(claim *nsv1.NodeClaim, pool *nsv1.NodePool, nc *awsv1.EC2NodeClass, now time.Time) ClaimConditions {
	var out ClaimConditions
	if pool == nil || !claim.DeletionTimestamp.IsZero() {
		return out
	}
	if lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched) {
		if reason, why, drifted := Drifted(claim, pool, nc); drifted {
			out.Drifted = &metav1.Condition{Type: nsv1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: string(reason), Message: why}
		}
	}
	if lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized) {
		if at, ok := lifecycle.EmptySince(claim, pool); ok {
			if now.Before(at) {
				out.Recheck = at
			} else {
				out.Consolidatable = &metav1.Condition{Type: nsv1.ConditionConsolidatable, Status: metav1.ConditionTrue, Reason: nsv1.ConditionConsolidatable,
					Message: fmt.Sprintf("nodepool %s's consolidateAfter passed at %s with no pod arriving or leaving", pool.Name, at.UTC().Format(time.RFC3339))}
			}
		}
	}
	return out
}

// Apply writes c into conds: each condition set when decided, removed when
// not. It reports whether anything changed; an unchanged condition keeps its
// transition time.
func (c ClaimConditions) Apply(conds *[]metav1.Condition, generation int64, now metav1.Time) bool {
	changed := false
	for _, want := range []struct {
		t    string
		cond *metav1.Condition
	}{{nsv1.ConditionDrifted, c.Drifted}, {nsv1.ConditionConsolidatable, c.Consolidatable}} {
		if want.cond == nil {
			// A new slice: the caller's old one is left as it was.
			changed = meta.RemoveStatusCondition(conds, want.t) || changed
			continue
		}
		if lifecycle.SetCondition(conds, *want.cond, generation, now) {
			changed = true
		}
	}
	return changed
}
