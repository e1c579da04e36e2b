package output

import "time"

// Sample is one timeline row: the state of the run at T.
type Sample struct {
	T               time.Duration
	QueueVisible    int64
	QueueInFlight   int64
	DesiredReplicas int
	RunningPods     int
	PendingPods     int
	NodesSpot       int
	NodesOnDemand   int
	// CostPerHour is the summed price of every instance alive at T.
	CostPerHour float64
}

// Launch is one instance Nodesmith launched (system nodes excluded).
type Launch struct {
	NodeClaim     string
	Pool          string
	InstanceType  string
	Zone          string
	CapacityType  string
	Price         float64 // USD per hour paid
	OnDemandPrice float64 // USD per hour of the same type on demand
	LaunchedAt    time.Duration
	// TerminatedAt is when the instance went away; equal to the run's end
	// when it was still running.
	TerminatedAt time.Duration
	// Terminated is false when the instance outlived the run.
	Terminated bool
	// Reason says why it went away (empty, interrupted…).
	Reason string
	// Cost is what the instance cost (USD), price changes included.
	Cost float64
}

// Total is what the account paid over the run for Nodesmith's capacity:
// the launched instances at their price, less the on-demand the
// commitments covered, plus the commitments and the capacity
// reservations, both paid whether used or not (an instance in a
// reservation is launched at $0: the reservation's cost counts it once).
// System nodes are not in it.
func (r *Result) Total() float64 {
	return r.Cost - r.CommitmentCovered + r.CommitmentCost + r.ReservationCost
}

// Hours the instance was paid for.
func (l Launch) Hours() float64 { return (l.TerminatedAt - l.LaunchedAt).Hours() }

// Milestone is a time that may never have been reached.
type Milestone struct {
	At      time.Duration
	Reached bool
	// NotApplicable: the run has nothing to measure it on (no queue).
	NotApplicable bool
}

func (m Milestone) String() string {
	if m.NotApplicable {
		return "n/a"
	}
	if !m.Reached {
		return "not reached"
	}
	return FormatDuration(m.At)
}

// Result is everything a run measured.
type Result struct {
	Scenario    string
	Description string
	Seed        int64
	Duration    time.Duration
	Samples     []Sample
	Launches    []Launch
	// LaunchFailures counts launch attempts that failed, by reason.
	LaunchFailures map[string]int

	PodsCreated int
	// PodStarts are the workload pods that reached Running, in that order.
	PodStarts []PodStart
	// FirstPodRunning: the first workload pod that had to wait for a new node is Running.
	FirstPodRunning Milestone
	// AllPodsRunning: the first time every wanted pod was Running after the first scale-up.
	AllPodsRunning Milestone
	// QueueEmpty: the first time every queue had no visible and no in-flight message after messages were sent.
	QueueEmpty Milestone
	// BackToBase: when the last Nodesmith node went away, if none remained
	// at the end (a later launch resets it).
	BackToBase Milestone

	// Cost is what the launched instances cost (USD) over the run.
	Cost float64
	// OnDemandCost is what the same instance types for the same durations would have cost on demand.
	OnDemandCost float64
	// SystemCost is what the fixed system nodes cost over the run.
	SystemCost float64
	// ReservationCost is what the capacity reservations cost over the run,
	// paid whether used or not; Cost does not count their instances again.
	ReservationCost float64
	// CommitmentCost is what the scenario's commitments (Savings Plans,
	// RIs) cost over the run, paid whether used or not; CommitmentCovered
	// is the part of Cost (on-demand usage) they covered (see Total).
	CommitmentCost    float64
	CommitmentCovered float64

	// Notes are notable decisions in time order (fallbacks, interruptions).
	Notes []string
	// NotDisrupted says why the disruption planner left nodes, per reason,
	// most held first; empty when no plan left any.
	NotDisrupted []Held
	// Interruptions pair every notice the simulated AWS sent about a
	// Nodesmith node with what the interruption handler did about it, in
	// the order the notices came.
	Interruptions []Interruption
	// StillPending groups the workload pods still Pending at the end of the
	// run by the last reason Nodesmith published for each (its Warning
	// Event's message, whole), most pods first.
	StillPending []PendingGroup
	// Hours is the hourly table of a run longer than an hour, empty otherwise.
	Hours []Hour
}

// PendingGroup is the pods left Pending for one reason.
type PendingGroup struct {
	// Reason is the message, with the pod's own name left out; empty when
	// Nodesmith published no Warning about these pods.
	Reason string
	Pods   int
	// Examples are up to three of the pods, namespace/name, sorted.
	Examples []string
}

// Held is how one of the disruption planner's reasons for leaving a node
// (a pkg/disruption.SkipReason, counted by the planner's last plan at each
// sample) held nodes over the run.
type Held struct {
	Reason string
	// Most is the most nodes held for the reason at one sample, first at MostAt.
	Most   int
	MostAt time.Duration
	// NodeTime is the nodes held integrated over the run: the sum over
	// samples of the nodes held times the time to the next sample.
	NodeTime time.Duration
	// AtEnd is the nodes held at the last sample.
	AtEnd int
}

// Interruption is one notice about a node (a spot interruption warning or
// a rebalance recommendation) and what became of the node's pods.
type Interruption struct {
	// At is when the notice was sent.
	At time.Duration
	// Kind is "spot interruption", "rebalance recommendation" or
	// "capacity block ending" (the product's CapacityBlockExpiring mark,
	// 40 minutes before the block ends).
	Kind                                    string
	NodeClaim, Instance, InstanceType, Zone string
	// Deadline is when the instance goes away (spot interruptions; a
	// Capacity Block's reclaim, 30 minutes before its end).
	Deadline Milestone
	// Pods are the workload pods on the node when the notice came.
	Pods int
	// Planned is when every pod of the node had a place planned (the
	// handler's ReplacementPlanned Event), Replacements where.
	Planned      Milestone
	Replacements []Replacement
	// Drained is when the handler began the node's drain, DrainReason why then.
	Drained     Milestone
	DrainReason string
	// Gone is when the instance stopped.
	Gone Milestone
	// Stranded are the pods that had to leave the node before a ready
	// place was waiting for them: their replacement could not boot in time
	// (or nothing drained the node before its instance went).
	Stranded int
	// NotRunningAtDeadline (spot interruptions, Capacity Blocks) are the pods of the
	// workloads that had pods on the node at the notice that were not
	// running elsewhere at the deadline, when EC2 reclaims the instance:
	// pending, starting, on a dead node, or still on this one. Zero when
	// every pod the notice moved runs again before its instance is
	// reclaimed.
	NotRunningAtDeadline int
}

// ReplacementReady is when every planned place could run the pods: the
// last new node's readiness, or the plan itself when the pods go to room
// on running nodes only. Not reached while nothing is planned or a new
// node never became ready.
func (in Interruption) ReplacementReady() Milestone {
	if !in.Planned.Reached {
		return Milestone{}
	}
	ready := in.Planned
	for _, r := range in.Replacements {
		if !r.NewNode {
			continue
		}
		if !r.Ready.Reached {
			return Milestone{}
		}
		if r.Ready.At > ready.At {
			ready = r.Ready
		}
	}
	return ready
}

// Replacement is where some of an interrupted node's pods were planned: a
// new NodeClaim, or room on a node already running.
type Replacement struct {
	Target string
	Pods   int
	// NewNode: Target is a NodeClaim launched for them; InstanceType,
	// Launched and Ready describe it.
	NewNode      bool
	InstanceType string
	Launched     Milestone
	Ready        Milestone
}

// FormatDuration prints 4m35s style durations, to the second.
func FormatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}

// PodStart is one workload pod's way to Running.
type PodStart struct {
	Pod string
	// Created and Running are offsets from the run's start.
	Created, Running time.Duration
}
