package budget

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// Ledger is what a pool's budgets are measured against: its nodes and how
// many of them are already disrupting. Count is the only place it is taken.
type Ledger struct {
	// Nodes are the pool's initialized nodes; a percentage budget is a
	// share of them. A claim still launching or registering (a replacement
	// in flight) is not one: counting it would let a percentage round up
	// while the node it replaces is still going (10 % of 10 nodes plus one
	// launching is 2).
	Nodes int `json:"nodes"`
	// Disrupting are those of Nodes being deleted, marked for disruption
	// (by a disruption command, by the caller lately, or by an
	// interruption notice that removes the instance whatever the budgets
	// say) or whose node is not Ready: each holds a place in the budget.
	Disrupting int `json:"disrupting"`
}

// Count takes every pool's ledger from its NodeClaims. nodeOf finds a
// claim's Node (nil when it has none); recent, when set, names claims the
// caller acted on that its view may not show deleted yet.
func Count(claims []*nsv1.NodeClaim, nodeOf func(*nsv1.NodeClaim) *corev1.Node, recent func(claim string) bool) map[string]Ledger {
	out := map[string]Ledger{}
	for _, c := range claims {
		if !lifecycle.IsTrue(c.Status.Conditions, nsv1.ConditionInitialized) {
			continue
		}
		pool := c.Labels[nsv1.LabelNodePool]
		l := out[pool]
		l.Nodes++
		var node *corev1.Node
		if nodeOf != nil {
			node = nodeOf(c)
		}
		if Disrupting(c, recent) || NotReady(node) {
			l.Disrupting++
		}
		out[pool] = l
	}
	return out
}

// Disrupting reports whether a claim is on its way out: deleted, marked by
// a disruption command, acted on by the caller lately (recent), or marked
// by an interruption notice that deletes it whatever the budgets say. A
// rebalance recommendation's mark is not one, nor a command that holds its
// candidate for one (prespin: the replacement is launched, the node stays
// until an interruption follows): such a node stays until its budget
// (reason Rebalance) or a later notice lets it go.
func Disrupting(c *nsv1.NodeClaim, recent func(claim string) bool) bool {
	if !c.DeletionTimestamp.IsZero() || (recent != nil && recent(c.Name)) {
		return true
	}
	rebalance := false
	for _, cond := range c.Status.Conditions {
		if cond.Type == nsv1.ConditionDisrupting && cond.Status == metav1.ConditionTrue {
			if cond.Reason != nsv1.DisruptingReasonRebalanceRecommendation {
				return true
			}
			rebalance = true
		}
	}
	if c.Annotations[nsv1.AnnotationDisruptionCommand] == "" {
		return false
	}
	return !rebalance || c.Annotations[nsv1.AnnotationDisruptionHold] != "true"
}

// NotReady reports whether the node reports its Ready condition as False
// or Unknown (one that has not reported it yet is new, not lost): the
// ledger counts such a node as disrupting.
func NotReady(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	c := lifecycle.NodeCondition(n, corev1.NodeReady)
	return c != nil && c.Status != corev1.ConditionTrue
}

// Allowance is one pool's budgets evaluated at one instant against its
// Ledger: how many more of its nodes may start disrupting, per reason, as
// a plan takes some.
type Allowance struct {
	budgets []nsv1.Budget
	now     time.Time
	ledger  Ledger
	limits  map[nsv1.DisruptionReason]int
	err     error
}

// NewAllowance evaluates budgets (Default when there are none) for the
// pool whose ledger is l at now.
func NewAllowance(budgets []nsv1.Budget, l Ledger, now time.Time) *Allowance {
	return &Allowance{budgets: budgets, now: now, ledger: l, limits: map[nsv1.DisruptionReason]int{}}
}

// Allowed is how many more of the pool's nodes may start disrupting for
// reason: the most restrictive active budget for reason, less the nodes
// already disrupting (for any reason), never below zero. A budget that
// cannot be read allows nothing (see Err).
func (a *Allowance) Allowed(reason nsv1.DisruptionReason) int {
	return max(0, a.Limit(reason)-a.ledger.Disrupting)
}

// Limit is the most of the pool's nodes that may be disrupting at once for
// reason (see the package function Limit), evaluated once per reason.
func (a *Allowance) Limit(reason nsv1.DisruptionReason) int {
	limit, ok := a.limits[reason]
	if !ok {
		var err error
		limit, err = Limit(a.budgets, reason, a.ledger.Nodes, a.now)
		if err != nil && a.err == nil {
			a.err = err
		}
		a.limits[reason] = limit
	}
	return limit
}

// Take counts one more of the pool's nodes as disrupting.
func (a *Allowance) Take() { a.ledger.Disrupting++ }

// Ledger is the pool's ledger with the nodes taken since.
func (a *Allowance) Ledger() Ledger { return a.ledger }

// Err is the first budget that could not be read, once Allowed met it.
func (a *Allowance) Err() error { return a.err }

// Allowed is how many more of a pool's nodes may start disrupting for
// reason at now, given its ledger: the one answer every caller (planner,
// interruption handler, explain) uses.
func Allowed(budgets []nsv1.Budget, reason nsv1.DisruptionReason, l Ledger, now time.Time) (int, error) {
	a := NewAllowance(budgets, l, now)
	n := a.Allowed(reason)
	return n, a.Err()
}
