package metrics

import "github.com/prometheus/client_golang/prometheus"

// Label names of the disruption collectors.
const (
	// LabelSkipReason is a pkg/disruption.SkipReason.
	LabelSkipReason = "skip_reason"
	// LabelOutcome is how a return to spot ended: returned or failed.
	LabelOutcome = "outcome"
	// LabelCondition is the unhealthy state node repair acted on, as
	// "Ready=Unknown".
	LabelCondition = "condition"
)

// Outcomes of a return to spot (LabelOutcome).
const (
	OutcomeReturned = "returned"
	OutcomeFailed   = "failed"
)

// Disruption holds the disruption controller's collectors.
type Disruption struct {
	// Decisions counts disruptions carried out, by method (Emptiness,
	// Drift, Expiration, MultiNodeConsolidation, SingleNodeConsolidation),
	// budget reason and decision (delete or replace).
	Decisions *prometheus.CounterVec
	// Savings sums the $/h the disruptions carried out save (negative for a
	// drift or expiry onto dearer nodes), by reason.
	Savings *prometheus.CounterVec
	// Candidates is the number of nodes eligible per reason in the last plan.
	Candidates *prometheus.GaugeVec
	// Skipped is the number of nodes the last plan left, by skip reason.
	Skipped *prometheus.GaugeVec
	// Allowed is each pool's budget allowance per reason in the last plan.
	Allowed *prometheus.GaugeVec
	// ValidationFailures counts planned disruptions that no longer held
	// when checked again, by method.
	ValidationFailures *prometheus.CounterVec
	// Aborted counts replacements that failed or timed out, by reason.
	Aborted *prometheus.CounterVec
	// ReturnsToSpot counts spot-fallback nodes returned to spot (their
	// spot replacements initialized) and returns that failed (and backed
	// off), by pool and outcome.
	ReturnsToSpot *prometheus.CounterVec
	// Repairs counts unhealthy nodes node repair replaced, by pool and
	// the condition that was unhealthy past its toleration.
	Repairs *prometheus.CounterVec
	// PlanDuration is the time to gather and compute one plan.
	PlanDuration prometheus.Histogram
}

func newDisruption() Disruption {
	return Disruption{
		Decisions: counter("disruption_decisions_total", "Disruptions carried out, by method, reason and decision (delete or replace).",
			LabelMethod, LabelReason, LabelDecision),
		Savings: counter("disruption_savings_dollars_per_hour_total", "Sum of the savings, in USD per hour, of the disruptions carried out.",
			LabelReason),
		Candidates: gauge("disruption_candidates", "Nodes eligible for disruption in the last plan, by reason.", LabelReason),
		Skipped:    gauge("disruption_skipped_nodes", "Nodes the last disruption plan left, by why.", LabelSkipReason),
		Allowed: gauge("disruption_budget_allowed_nodes", "How many more nodes each NodePool's budgets allowed to disrupt in the last plan, by reason.",
			LabelNodePool, LabelReason),
		ValidationFailures: counter("disruption_validation_failures_total", "Planned disruptions that no longer held when checked again before acting.",
			LabelMethod),
		Aborted: counter("disruption_aborted_total", "Disruptions abandoned because a replacement failed or timed out.", LabelReason),
		ReturnsToSpot: counter("disruption_returns_to_spot_total", "Spot-fallback nodes returned to spot (outcome returned) and returns that failed and backed off (outcome failed).",
			LabelNodePool, LabelOutcome),
		Repairs: counter("disruption_repairs_total", "Unhealthy nodes replaced by node repair, by NodePool and the condition (as Ready=Unknown) unhealthy past its toleration.",
			LabelNodePool, LabelCondition),
		PlanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "disruption", Name: "plan_duration_seconds",
			Help:    "Time to gather the cluster and compute one disruption plan.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
	}
}
