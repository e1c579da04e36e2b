package events

import (
	corev1 "k8s.io/api/core/v1"
)

// Reasons of the interruption handler's Events.
const (
	// On the NodeClaim and Node a notice is about.
	ReasonSpotInterruption      = "SpotInterruption"
	ReasonCapacityBlockExpiring = "CapacityBlockExpiring"
	// ReasonCapacityReservationInterruption: an interruptible capacity
	// reservation's owner reclaims the instance.
	ReasonCapacityReservationInterruption = "CapacityReservationInterruption"
	ReasonRebalanceRecommendation         = "RebalanceRecommendation"
	ReasonScheduledChange                 = "ScheduledChange"
	ReasonInstanceStopping                = "InstanceStopping"
	ReasonInstanceStopped                 = "InstanceStopped"
	ReasonInstanceTerminated              = "InstanceTerminated"
	// The disruption executor's, on a marked NodeClaim (its command's
	// Disrupting and DisruptionReplacement Events come too):
	// ReasonReplacementPlanned: every pod of the marked node has a place
	// planned (the command's replacements, or room on running nodes).
	ReasonReplacementPlanned = "ReplacementPlanned"
	// ReasonInterruptionDrain: the marked claim is deleted, so drained, and why now.
	ReasonInterruptionDrain = "InterruptionDrain"
	// ReasonInterruptionWaiting: the drain waits (replacement booting, prespin).
	ReasonInterruptionWaiting = "InterruptionWaiting"
	// On the controller's Pod.
	ReasonInterruptionQueueUnavailable = "InterruptionQueueUnavailable"
	ReasonInterruptionQueueReady       = "InterruptionQueueReady"
)

// InterruptionNotice: AWS said the instance behind o is going away (or, for
// a rebalance recommendation, may). reason is one of the notice reasons
// above; a recommendation is Normal, the rest Warnings.
func InterruptionNotice(o object, reason, msg string) Event {
	typ := corev1.EventTypeWarning
	if reason == ReasonRebalanceRecommendation {
		typ = corev1.EventTypeNormal
	}
	return obj(o, typ, reason, "Interrupt", msg)
}

// ReplacementPlanned: the disrupted node's pods all have a place planned.
func ReplacementPlanned(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonReplacementPlanned, "Interrupt", msg)
}

// InterruptionDrain: the disrupted claim is deleted and its node drained, and why now.
func InterruptionDrain(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonInterruptionDrain, "Drain", msg)
}

// InterruptionWaiting: what holds the drain of a disrupted node.
func InterruptionWaiting(o object, msg string) Event {
	return obj(o, corev1.EventTypeNormal, ReasonInterruptionWaiting, "Interrupt", msg)
}

// InterruptionQueue: the queue became unavailable (missing, access denied)
// or answers again; recorded on the controller's own Pod.
func InterruptionQueue(o object, ready bool, msg string) Event {
	if ready {
		return obj(o, corev1.EventTypeNormal, ReasonInterruptionQueueReady, "Poll", msg)
	}
	return obj(o, corev1.EventTypeWarning, ReasonInterruptionQueueUnavailable, "Poll", msg)
}
