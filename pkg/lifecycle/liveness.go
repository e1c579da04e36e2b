package lifecycle

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
)

// Timeouts bound how long a NodeClaim may stay in a phase before it is deleted
// and its pods are planned again.
type Timeouts struct {
	// Launch is how long a claim may stay unlaunched (Create keeps failing).
	// A claim whose last launch got no answer from the cloud
	// (ReasonCloudUnavailable) is kept past it: see Liveness.
	Launch time.Duration
	// Registration is how long a launched instance may take to register its Node.
	Registration time.Duration
}

// DefaultTimeouts are the controller's defaults (--registration-timeout).
func DefaultTimeouts() Timeouts {
	return Timeouts{Launch: 5 * time.Minute, Registration: 15 * time.Minute}
}

// ReasonCloudUnavailable is the reason of a claim's Launched=False condition
// when its last launch got no answer from the cloud (throttled, failing or
// unreachable through every retry): the instance may or may not exist.
const ReasonCloudUnavailable = "CloudUnavailable"

// Verdict is what liveness decided about a claim.
type Verdict struct {
	// Delete is true when the claim timed out and must be deleted.
	Delete bool
	// Reason is a user-facing explanation for an Event, set when Delete is true.
	Reason string
	// RecheckAfter is when the verdict may change (0: it cannot, by time alone).
	RecheckAfter time.Duration
}

// Liveness decides whether claim has overstayed its launch or registration
// phase at now. Claims that registered are never timed out here: after
// registration the Node's own health decides.
func Liveness(claim *nsv1.NodeClaim, now time.Time, t Timeouts) Verdict {
	if claim.DeletionTimestamp != nil || IsTrue(claim.Status.Conditions, nsv1.ConditionRegistered) {
		return Verdict{}
	}
	launched := meta.FindStatusCondition(claim.Status.Conditions, nsv1.ConditionLaunched)
	if launched == nil || launched.Status != metav1.ConditionTrue {
		since := claim.CreationTimestamp.Time
		if left := since.Add(t.Launch).Sub(now); left > 0 {
			return Verdict{RecheckAfter: left}
		}
		if launched != nil && launched.Status == metav1.ConditionFalse && launched.Reason == ReasonCloudUnavailable {
			// Deleting the claim would not bring the cloud back: its pods
			// would wait on a new claim that cannot launch either, and an
			// instance the unanswered call may have started would be left
			// to garbage collection. The next launch that gets an answer
			// decides (a rejection after the deadline deletes it then).
			return Verdict{}
		}
		msg := "no launch attempt recorded"
		if launched != nil && launched.Message != "" {
			msg = launched.Message
		}
		return Verdict{Delete: true, Reason: fmt.Sprintf("not launched within %s: %s", t.Launch, msg)}
	}
	since := launched.LastTransitionTime.Time
	if left := since.Add(t.Registration).Sub(now); left > 0 {
		return Verdict{RecheckAfter: left}
	}
	return Verdict{Delete: true, Reason: fmt.Sprintf("instance %s launched %s ago but no Node registered within %s",
		claim.Status.ProviderID, now.Sub(since).Round(time.Second), t.Registration)}
}

// IsTrue reports whether the condition of type t is True.
func IsTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}
