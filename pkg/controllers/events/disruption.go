package events

import corev1 "k8s.io/api/core/v1"

// Disruption events: every decision of the disruption controller leaves one
// on the NodeClaim it concerns (and budget problems on the NodePool).

// Reasons of disruption events.
const (
	ReasonUnderutilized              = "Underutilized"
	ReasonDrifted                    = "Drifted"
	ReasonExpired                    = "Expired"
	ReasonDisruptionBlocked          = "DisruptionBlocked"
	ReasonDisruptionValidationFailed = "DisruptionValidationFailed"
	ReasonDisruptionAborted          = "DisruptionAborted"
	ReasonDisruptionReplacement      = "DisruptionReplacement"
	ReasonBudgetInvalid              = "BudgetInvalid"
	ReasonReturnedToSpot             = "ReturnedToSpot"
	ReasonReturnToSpotBackoff        = "ReturnToSpotBackoff"
	ReasonRepairing                  = "Repairing"
)

// Disrupting: the node is being disrupted for reason (Empty, Underutilized,
// Drifted, Expired); msg says how and what it saves.
func Disrupting(o object, reason, msg string) Event {
	return obj(o, corev1.EventTypeNormal, reason, "Disrupt", msg)
}

// DisruptionBlocked: the node could have been disrupted and was not (a
// do-not-disrupt annotation, a PodDisruptionBudget, pods with nowhere to
// go, a budget).
func DisruptionBlocked(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonDisruptionBlocked, "Disrupt", msg)
}

// DisruptionValidationFailed: a planned disruption no longer held when it
// was checked again before acting.
func DisruptionValidationFailed(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonDisruptionValidationFailed, "Disrupt", msg)
}

// DisruptionAborted: a replacement failed or timed out; the node stays.
func DisruptionAborted(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonDisruptionAborted, "Disrupt", msg)
}

// DisruptionReplacement: this claim was created to replace disrupted nodes.
func DisruptionReplacement(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonDisruptionReplacement, "Disrupt", msg)
}

// BudgetInvalid: a NodePool's disruption budget cannot be read; it allows
// no disruption until fixed.
func BudgetInvalid(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonBudgetInvalid, "Disrupt", msg)
}

// ReturnedToSpot: a node that ran on-demand only because spot had no
// capacity has its spot replacements ready and is being removed.
func ReturnedToSpot(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonReturnedToSpot, "Disrupt", msg)
}

// ReturnToSpotBackoff: a return to spot failed (its spot replacement did not
// come up); msg says when the next one may start.
func ReturnToSpotBackoff(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonReturnToSpotBackoff, "Disrupt", msg)
}

// Repairing: node repair replaces the node; msg names the condition that
// has been unhealthy, for how long and its toleration.
func Repairing(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonRepairing, "Repair", msg)
}

// Reasons of static pool events.
const (
	ReasonStaticScaled            = "StaticScaled"
	ReasonStaticNodeLimitExceeded = "NodeLimitExceeded"
	ReasonStaticLaunchFailed      = "StaticLaunchFailed"
)

// StaticScaled: a static pool launched or removed nodes toward its replicas.
func StaticScaled(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonStaticScaled, "Scale", msg)
}

// StaticNodeLimitExceeded: a static pool's replicas exceed its limits.nodes.
func StaticNodeLimitExceeded(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonStaticNodeLimitExceeded, "Scale", msg)
}

// StaticLaunchFailed: a static pool could plan no node (no instance type fits).
func StaticLaunchFailed(o object, msg string) Event {
	return obj(o, corev1.EventTypeWarning, ReasonStaticLaunchFailed, "Scale", msg)
}
