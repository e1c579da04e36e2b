package messages

import (
	"time"
)

// Kind is what an interruption message says is happening to its instances.
// The values are metric label values.
type Kind string

const (
	// KindSpotInterruption: EC2 reclaims a spot instance about two minutes
	// after the warning ("EC2 Spot Instance Interruption Warning").
	KindSpotInterruption Kind = "spot_interruption"
	// KindCapacityReservationInterruption: the owner of an interruptible
	// capacity reservation reclaims capacity, and EC2 terminates the
	// instance at the warning's instance-termination-time, two minutes on
	// ("EC2 Capacity Reservation Instance Interruption Warning").
	KindCapacityReservationInterruption Kind = "capacity_reservation_interruption"
	// KindRebalance: a spot instance is at elevated risk of interruption
	// ("EC2 Instance Rebalance Recommendation"); it may never come.
	KindRebalance Kind = "rebalance_recommendation"
	// KindScheduledChange: AWS Health scheduled maintenance or retirement of
	// EC2 instances, starting at the event's start time.
	KindScheduledChange Kind = "scheduled_change"
	// KindInstanceStopping: the instance entered the stopping state.
	KindInstanceStopping Kind = "instance_stopping"
	// KindInstanceStopped: the instance is stopped.
	KindInstanceStopped Kind = "instance_stopped"
	// KindInstanceTerminated: the instance is shutting down or terminated.
	KindInstanceTerminated Kind = "instance_terminated"
	// KindIgnored: nothing to act on; Message.Ignored says why.
	KindIgnored Kind = "ignored"
)

// Kinds lists every kind, for metrics that want all label values present.
var Kinds = []Kind{KindSpotInterruption, KindCapacityReservationInterruption, KindRebalance, KindScheduledChange,
	KindInstanceStopping, KindInstanceStopped, KindInstanceTerminated, KindIgnored}

// IgnoreReason says why a message was ignored. The values are metric label values.
type IgnoreReason string

const (
	// IgnoredMalformed: not JSON, not an EventBridge event, or an event
	// without a field its type requires (an instance id).
	IgnoredMalformed IgnoreReason = "malformed"
	// IgnoredUnknownEvent: an event source or detail-type this parser does
	// not handle (the queue's rules send more than we act on).
	IgnoredUnknownEvent IgnoreReason = "unknown_event"
	// IgnoredNotActionable: a known event that needs no action: a state
	// change to pending or running, a Health event for another service or
	// category, or one that names no instance.
	IgnoredNotActionable IgnoreReason = "not_actionable"
)

// IgnoreReasons lists every reason, for metrics.
var IgnoreReasons = []IgnoreReason{IgnoredMalformed, IgnoredUnknownEvent, IgnoredNotActionable}

// Ignored explains a KindIgnored message.
type Ignored struct {
	Reason IgnoreReason
	// Detail is a sentence for logs and Events ("state change to running").
	Detail string
}

// SpotNotice is how long a spot instance runs after its interruption
// warning when the action is terminate or stop.
const SpotNotice = 2 * time.Minute

// Message is one parsed queue message.
type Message struct {
	Kind Kind
	// ID is the EventBridge event id (the same event delivered twice has
	// the same id).
	ID         string
	Source     string
	DetailType string
	// Time is when the event was emitted (the envelope's time); zero when
	// absent or unreadable.
	Time    time.Time
	Region  string
	Account string
	// InstanceIDs are the EC2 instances the event is about, de-duplicated,
	// in the order the event lists them. Never empty unless KindIgnored.
	InstanceIDs []string
	// State is the new instance state of a state-change notification.
	State string
	// Action is a spot warning's instance-action: terminate, stop or hibernate.
	Action string
	// EventTypeCode is a Health event's type (AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED…).
	EventTypeCode string
	// Deadline is when the instance is expected to go away: the spot
	// warning's time plus SpotNotice (the warning's time itself for
	// hibernate), a capacity reservation warning's instance-termination-time
	// (else its time plus SpotNotice), a scheduled change's start time, a
	// state change's time.
	// Zero when unknown (a rebalance recommendation has none; use DeadlineOr
	// for events whose time was missing).
	Deadline time.Time
	// Ignored is set for KindIgnored only.
	Ignored *Ignored
}

// DeadlineOr is the deadline, computed from received when the event carried
// no readable time: a spot warning's instance goes SpotNotice after it, a
// stopping instance at once. Rebalance recommendations and scheduled
// changes without a start time have no deadline (zero).
func (m Message) DeadlineOr(received time.Time) time.Time {
	if !m.Deadline.IsZero() {
		return m.Deadline
	}
	switch m.Kind {
	case KindSpotInterruption, KindCapacityReservationInterruption:
		return spotDeadline(received, m.Action)
	case KindInstanceStopping, KindInstanceStopped, KindInstanceTerminated:
		return received
	}
	return time.Time{}
}

func spotDeadline(at time.Time, action string) time.Time {
	if action == ActionHibernate {
		// Hibernation starts with the warning; there is no notice period.
		return at
	}
	return at.Add(SpotNotice)
}

// Spot warning instance actions.
const (
	ActionTerminate = "terminate"
	ActionStop      = "stop"
	ActionHibernate = "hibernate"
)

func ignored(m Message, reason IgnoreReason, detail string) Message {
	m.Kind = KindIgnored
	m.InstanceIDs = nil
	m.Deadline = time.Time{}
	m.Ignored = &Ignored{Reason: reason, Detail: detail}
	return m
}
