package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// Well-known labels, annotations, taints and finalizers of the nodesmith.sh group.
const (
	Group = "nodesmith.sh"

	// LabelNodePool names the NodePool a node was launched for.
	LabelNodePool = Group + "/nodepool"
	// LabelCapacityType is "spot", "on-demand" or "reserved" (a capacity
	// reservation the account already pays for).
	LabelCapacityType = Group + "/capacity-type"
	// LabelNodeClaim names the NodeClaim behind a node or instance.
	LabelNodeClaim = Group + "/nodeclaim"
	// LabelRegistered is set to "true" once a node has registered.
	LabelRegistered = Group + "/registered"
	// LabelInitialized is set to "true" once a node is initialized.
	LabelInitialized = Group + "/initialized"

	// AnnotationDoNotDisrupt on a pod ("true" or a duration) or a node blocks
	// voluntary disruption.
	AnnotationDoNotDisrupt = Group + "/do-not-disrupt"
	// AnnotationNodePoolHash records the hash of a NodePool's template a
	// claim was made from (NodePool.Hash); drift compares it with the pool's.
	AnnotationNodePoolHash = Group + "/nodepool-hash"
	// AnnotationNodePoolHashVersion is the NodePoolHashVersion that computed it.
	AnnotationNodePoolHashVersion = Group + "/nodepool-hash-version"
	// AnnotationDisruptionCommand on a NodeClaim names the disruption
	// command replacing it; the claim waits, tainted, for the command's
	// replacements to initialize before it is deleted.
	AnnotationDisruptionCommand = Group + "/disruption-command"
	// AnnotationDisruptionReplacements on a command's candidates lists the
	// replacement NodeClaims it waits for, comma-separated.
	AnnotationDisruptionReplacements = Group + "/disruption-replacements"
	// AnnotationDisruptionReason on a command's candidates is its
	// DisruptionReason.
	AnnotationDisruptionReason = Group + "/disruption-reason"
	// AnnotationDisruptionStarted on a command's candidates is when it
	// started (RFC 3339), for its timeout.
	AnnotationDisruptionStarted = Group + "/disruption-started"
	// AnnotationDisruptionHold ("true") on a command's candidates says the
	// command launches its replacements but keeps the candidates until a
	// stronger reason comes: a rebalance recommendation in prespin mode,
	// held until an interruption notice follows. Such a candidate does not
	// use up its pool's disruption budget while it is held.
	AnnotationDisruptionHold = Group + "/disruption-hold"
	// AnnotationReplacementFor on a NodeClaim names the disruption command
	// it was launched for; it is not a disruption candidate while the
	// command's candidates still exist.
	AnnotationReplacementFor = Group + "/replacement-for"
	// AnnotationPodSet is a fingerprint of the workload pods on a claim's
	// node; a change of it is a pod event (status.lastPodEventTime).
	AnnotationPodSet = Group + "/pod-set"
	// AnnotationTerminationTimestamp is when a draining node's grace period ends.
	AnnotationTerminationTimestamp = Group + "/nodeclaim-termination-timestamp"
	// AnnotationDisruptionDeadline (RFC 3339) on a Disrupting claim is when
	// its instance is expected to go away: a spot warning's time plus two
	// minutes, a scheduled change's start.
	AnnotationDisruptionDeadline = Group + "/disruption-deadline"
	// AnnotationDisruptionNoticed (RFC 3339, nanoseconds) on a Disrupting
	// claim is when the notice that disrupted it was received, for the
	// notice-to-replacement and notice-to-drained latencies.
	AnnotationDisruptionNoticed = Group + "/disruption-noticed-at"

	// AnnotationLaunchAttempt on a NodeClaim counts its launches the cloud
	// rejected; the cloud provider derives the launch's idempotency token from
	// the claim's UID and this attempt, so a retry after a lost answer or a
	// restart reuses the token and a retry after a rejection does not.
	AnnotationLaunchAttempt = Group + "/launch-attempt"

	// AnnotationSpotFallback (RFC 3339) on a NodeClaim says its instance
	// launched on-demand only because spot had no capacity: without the
	// offerings the insufficient-capacity cache hid or that failed during
	// the launch, it would have launched spot. The value is the launch time.
	// The disruption planner returns such nodes to spot (ReturnToSpot).
	AnnotationSpotFallback = Group + "/spot-fallback"
	// AnnotationReturnToSpotAttempts on a spot-fallback NodeClaim counts the
	// returns to spot that failed (their spot replacement was removed before
	// it initialized, as after insufficient capacity).
	AnnotationReturnToSpotAttempts = Group + "/return-to-spot-attempts"
	// AnnotationReturnToSpotNotBefore (RFC 3339) on a spot-fallback
	// NodeClaim is when the next return to spot may start, after a failed
	// one: the backoff doubles with every failure.
	AnnotationReturnToSpotNotBefore = Group + "/return-to-spot-not-before"

	// TerminationFinalizer holds NodeClaims and Nodes until their instance is gone.
	TerminationFinalizer = Group + "/termination"

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	// CapacityTypeReserved is capacity launched into a capacity reservation
	// (an ODCR or a Capacity Block): billed whether used or not, so its
	// marginal price is zero while the reservation has instances free.
	CapacityTypeReserved = "reserved"
)

var (
	// UnregisteredTaint is put on every node at launch and removed when the
	// NodeClaim registers it, so no pod lands before labels and taints are synced.
	UnregisteredTaint = corev1.Taint{Key: Group + "/unregistered", Effect: corev1.TaintEffectNoExecute}
	// DisruptedTaint keeps new pods off a node that is being drained.
	DisruptedTaint = corev1.Taint{Key: Group + "/disrupted", Effect: corev1.TaintEffectNoSchedule}
)

// RestrictedLabels may not be used in NodePool requirements or template
// labels: the system sets them per node.
var RestrictedLabels = map[string]struct{}{
	corev1.LabelHostname: {},
	LabelNodePool:        {},
	LabelNodeClaim:       {},
	LabelRegistered:      {},
	LabelInitialized:     {},
}

// WellKnownLabels are the keys a NodePool may constrain that are filled in
// from the instance type and offering chosen at launch.
var WellKnownLabels = map[string]struct{}{
	corev1.LabelArchStable:         {},
	corev1.LabelOSStable:           {},
	corev1.LabelInstanceTypeStable: {},
	corev1.LabelTopologyZone:       {},
	corev1.LabelTopologyRegion:     {},
	LabelCapacityType:              {},
}
