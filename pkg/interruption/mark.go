package interruption

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
)

// Action is what a notice does to its instance's NodeClaim.
type Action string

const (
	// ActionNone: nothing on the cluster (rebalance in off mode); an Event only.
	ActionNone Action = "none"
	// ActionMark: mark the claim Disrupting, taint its node, plan its pods
	// elsewhere; Verdict decides when it is deleted.
	ActionMark Action = "mark"
	// ActionDelete: the instance is stopped or gone; delete the claim and
	// its Node at once.
	ActionDelete Action = "delete"
)

// ActionFor is the action for a notice of kind under mode.
func ActionFor(kind messages.Kind, mode RebalanceMode) Action {
	switch kind {
	case messages.KindSpotInterruption, messages.KindCapacityReservationInterruption, messages.KindScheduledChange, messages.KindInstanceStopping:
		return ActionMark
	case messages.KindRebalance:
		if mode == RebalanceOff {
			return ActionNone
		}
		return ActionMark
	case messages.KindInstanceStopped, messages.KindInstanceTerminated:
		return ActionDelete
	}
	return ActionNone
}

// Reason is the Disrupting condition reason a marking notice gives.
func Reason(kind messages.Kind) string {
	switch kind {
	case messages.KindSpotInterruption:
		return nsv1.DisruptingReasonSpotInterruption
	case messages.KindCapacityReservationInterruption:
		return nsv1.DisruptingReasonCapacityReservationInterruption
	case messages.KindScheduledChange:
		return nsv1.DisruptingReasonScheduledChange
	case messages.KindInstanceStopping, messages.KindInstanceStopped, messages.KindInstanceTerminated:
		return nsv1.DisruptingReasonInstanceStopping
	case messages.KindRebalance:
		return nsv1.DisruptingReasonRebalanceRecommendation
	}
	return ""
}

// strength orders reasons: a notice with a deadline outranks a
// recommendation; among those the more imminent kind wins.
var strength = map[string]int{
	nsv1.DisruptingReasonRebalanceRecommendation: 1,
	nsv1.DisruptingReasonScheduledChange:         2,
	nsv1.DisruptingReasonCapacityBlockExpiring:   2,
	nsv1.DisruptingReasonSpotInterruption:        3,
	// An interruptible reservation's warning is a spot warning's twin: the
	// same two minutes, the same end.
	nsv1.DisruptingReasonCapacityReservationInterruption: 3,
	nsv1.DisruptingReasonInstanceStopping:                4,
}

// IsInterruptionReason reports whether reason is one this handler sets.
func IsInterruptionReason(reason string) bool { return strength[reason] > 0 }

// Mark is a claim's interruption state: its Disrupting reason and deadline
// (zero when none), as kept on the object.
type Mark struct {
	Reason   string
	Deadline time.Time
}

// Merge folds a new notice into the claim's current mark (zero when not
// marked): the stronger reason and the earlier deadline win. changed
// reports whether the claim must be written.
func Merge(cur, notice Mark) (out Mark, changed bool) {
	out = cur
	if strength[notice.Reason] > strength[cur.Reason] {
		out.Reason = notice.Reason
	}
	if !notice.Deadline.IsZero() && (out.Deadline.IsZero() || notice.Deadline.Before(out.Deadline)) {
		out.Deadline = notice.Deadline
	}
	return out, out.Reason != cur.Reason || !out.Deadline.Equal(cur.Deadline)
}

// MarkOf is the claim's interruption mark as kept on the object: the
// Disrupting condition's reason when the handler set it (True, one of its
// reasons), and the deadline annotation. It is the one reader of the mark:
// the queue, the executor, the planner and the simulator call it.
func MarkOf(claim *nsv1.NodeClaim) Mark {
	var m Mark
	if claim == nil {
		return m
	}
	for _, c := range claim.Status.Conditions {
		if c.Type == nsv1.ConditionDisrupting && c.Status == metav1.ConditionTrue && IsInterruptionReason(c.Reason) {
			m.Reason = c.Reason
		}
	}
	if t, err := time.Parse(time.RFC3339, claim.Annotations[nsv1.AnnotationDisruptionDeadline]); err == nil {
		m.Deadline = t
	}
	return m
}

// Marked reports whether the handler marked the claim.
func (m Mark) Marked() bool { return m.Reason != "" }

// Interrupted reports whether the mark is an interruption (a notice the
// instance goes away after), not just a rebalance recommendation.
func (m Mark) Interrupted() bool {
	return m.Reason != "" && m.Reason != nsv1.DisruptingReasonRebalanceRecommendation
}
