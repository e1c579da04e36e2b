package lifecycle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/disruption/budget"
)

// EmptinessRetry is how soon to look again at an empty node that a budget
// or a nomination held back.
const EmptinessRetry = 10 * time.Second

// EmptinessInput is what the emptiness decision reads about one claim.
type EmptinessInput struct {
	Claim *nsv1.NodeClaim
	// Node is the claim's node; nil until it registers.
	Node *corev1.Node
	Pool *nsv1.NodePool
	// Pods are the pods bound to Node.
	Pods []*corev1.Pod
	// WasBusy says the caller last saw the claim running workload: its
	// emptying is then its last pod event, stamped at Now.
	WasBusy bool
	// Nominated says a live nomination targets the claim or its node: a pod
	// is on its way, so the node is not empty for long.
	Nominated bool
	// PoolClaims are every claim of Pool, for the budget.
	PoolClaims []*nsv1.NodeClaim
	// RecentlyDeleted reports claims the caller deleted whose deletion its
	// view does not show yet; they count as being disrupted. May be nil.
	RecentlyDeleted func(name string) bool
	Now             time.Time
}

// EmptinessDecision is the verdict on one claim.
type EmptinessDecision struct {
	// Delete says remove the claim now.
	Delete bool
	// Busy says the node runs workload (the caller remembers it, see WasBusy).
	Busy bool
	// StampEmptied says record Now as the claim's LastPodEventTime.
	StampEmptied bool
	// RequeueAfter, when positive, is when to decide again.
	RequeueAfter time.Duration
	// EligibleAt is when the empty node became removable (set once known).
	EligibleAt time.Time
	// Reason says why, for events and logs.
	Reason string
	// BudgetErr reports a budget that cannot be parsed (it allows nothing).
	BudgetErr error
}

// EmptinessVerdict decides whether an empty claim is removed: its node must
// be registered and initialized, not marked do-not-disrupt, run no workload
// (IsEmpty), have been empty for the pool's consolidateAfter (EmptySince),
// expect no nominated pod, and the pool's budgets for the Empty reason must
// allow one more disruption (pkg/disruption/budget).
//
// Deprecated: the controller decides emptiness in the disruption planner
// (pkg/disruption, the first of its action kinds); this verdict is kept only
// for the simulator until it runs the disruption controller. Delete it then.
func EmptinessVerdict(in EmptinessInput) EmptinessDecision {
	claim := in.Claim
	switch {
	case !claim.DeletionTimestamp.IsZero():
		return EmptinessDecision{Reason: "being deleted"}
	case !IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized) || claim.Status.NodeName == "" || in.Node == nil:
		return EmptinessDecision{Reason: "not initialized"}
	case in.Node.Annotations[nsv1.AnnotationDoNotDisrupt] == "true":
		return EmptinessDecision{Reason: "node is marked do-not-disrupt"}
	case !IsEmpty(in.Pods):
		return EmptinessDecision{Busy: true, Reason: "runs workload pods"}
	}
	d := EmptinessDecision{StampEmptied: in.WasBusy}
	if in.WasBusy {
		claim = claim.DeepCopy()
		claim.Status.LastPodEventTime.Time = in.Now
	}
	eligibleAt, ok := EmptySince(claim, in.Pool)
	if !ok {
		d.Reason = "pool never consolidates"
		return d
	}
	d.EligibleAt = eligibleAt
	if wait := eligibleAt.Sub(in.Now); wait > 0 {
		d.RequeueAfter, d.Reason = wait, "consolidateAfter has not elapsed"
		return d
	}
	if in.Nominated {
		d.RequeueAfter, d.Reason = EmptinessRetry, "pods are nominated to it"
		return d
	}
	allowed, err := budget.Allowed(in.Pool.Spec.Disruption.Budgets, nsv1.DisruptionReasonEmpty,
		len(in.PoolClaims), disrupting(in.PoolClaims, in.RecentlyDeleted), in.Now)
	d.BudgetErr = err
	if allowed <= 0 {
		d.RequeueAfter, d.Reason = EmptinessRetry, "disruption budget exhausted"
		return d
	}
	d.Delete = true
	d.Reason = fmt.Sprintf("node %s has run no workload pods since %s", in.Node.Name, eligibleAt.UTC().Format(time.RFC3339))
	return d
}

// disrupting counts the claims being deleted, including deletions the
// caller's view has not caught up with.
func disrupting(claims []*nsv1.NodeClaim, recentlyDeleted func(string) bool) int {
	n := 0
	for _, c := range claims {
		if !c.DeletionTimestamp.IsZero() || (recentlyDeleted != nil && recentlyDeleted(c.Name)) {
			n++
		}
	}
	return n
}
