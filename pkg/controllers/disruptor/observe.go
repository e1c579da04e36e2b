package disruptor

import (
	"fmt"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
)

// blockingSkips are the skips worth an Event: something the user set or
// can change holds the node. (Nodes that are simply busy or young are the
// normal case and only show in the metrics.)
var blockingSkips = map[disruption.SkipReason]bool{
	disruption.SkipNodeDoNotDisrupt:      true,
	disruption.SkipPodDoNotDisrupt:       true,
	disruption.SkipPodDisruptionBudget:   true,
	disruption.SkipNowhereToGo:           true,
	disruption.SkipBudget:                true,
	disruption.SkipSpotToSpotDisabled:    true,
	disruption.SkipSpotToSpotFlexibility: true,
	disruption.SkipRepairBlocked:         true,
}

// observe publishes a plan's metrics and the events of its skips and
// budget problems. Events repeat at most once per the recorder's window.
func (c *Controller) observe(snap *state.Snapshot, plan *disruption.Plan) {
	m := c.metrics.Disruption
	m.Candidates.Reset()
	for _, r := range append(append([]nsv1.DisruptionReason{}, nsv1.DisruptionReasons...), nsv1.DisruptionReasonInterrupted, nsv1.DisruptionReasonRebalance, nsv1.DisruptionReasonUnhealthy) {
		m.Candidates.WithLabelValues(string(r)).Set(float64(plan.Candidates[r]))
	}
	m.Skipped.Reset()
	counts := map[disruption.SkipReason]int{}
	for _, s := range plan.Skipped {
		counts[s.Reason]++
	}
	for r, n := range counts {
		m.Skipped.WithLabelValues(string(r)).Set(float64(n))
	}
	m.Allowed.Reset()
	for pool, byReason := range plan.Allowed {
		for r, n := range byReason {
			m.Allowed.WithLabelValues(pool, string(r)).Set(float64(n))
		}
	}
	pools := map[string]*nsv1.NodePool{}
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	for pool, err := range plan.BudgetErrors {
		if np := pools[pool]; np != nil {
			c.recorder.Publish(events.BudgetInvalid(np, fmt.Sprintf("%v; no node of this pool is disrupted until it is fixed", err)))
		}
	}
	claims := map[string]*nsv1.NodeClaim{}
	for _, cl := range snap.NodeClaims {
		claims[cl.Name] = cl
	}
	for _, s := range plan.Skipped {
		if cl := claims[s.Claim]; cl != nil && blockingSkips[s.Reason] {
			c.recorder.Publish(events.DisruptionBlocked(cl, s.Message))
		}
	}
}

// validationFailed reports a planned action that no longer held.
func (c *Controller) validationFailed(a *disruption.Action) {
	c.metrics.Disruption.ValidationFailures.WithLabelValues(string(a.Method)).Inc()
	for _, cand := range a.Candidates {
		c.recorder.Publish(events.DisruptionValidationFailed(cand.Claim,
			fmt.Sprintf("planned %s (%s) no longer holds after %s; planning again", a.Method, a.Reason, c.opts.ValidationDelay)))
	}
}
