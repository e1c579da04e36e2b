package disruption

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// Backoff of a failed return to spot: the first retry waits
// ReturnToSpotBackoffBase, each further failure doubles it, up to
// ReturnToSpotBackoffMax.
const (
	ReturnToSpotBackoffBase = time.Minute
	ReturnToSpotBackoffMax  = time.Hour
)

// ReturnToSpotBackoff is how long a node waits after its attempts-th failed
// return to spot before the next one: 1m, 2m, 4m … at most 1h.
func ReturnToSpotBackoff(attempts int) time.Duration {
	d := ReturnToSpotBackoffBase
	for i := 1; i < attempts && d < ReturnToSpotBackoffMax; i++ {
		d *= 2
	}
	return min(d, ReturnToSpotBackoffMax)
}

// ReturnToSpotFailed records on a fallback claim's annotations (in memory;
// the caller persists them) that a return to spot failed at now: one more
// attempt, and the next not before now plus the backoff. It returns both.
func ReturnToSpotFailed(annotations map[string]string, now time.Time) (int, time.Time) {
	attempts, _ := strconv.Atoi(annotations[nsv1.AnnotationReturnToSpotAttempts])
	attempts = max(attempts, 0) + 1
	next := now.Add(ReturnToSpotBackoff(attempts)).UTC().Truncate(time.Second)
	annotations[nsv1.AnnotationReturnToSpotAttempts] = strconv.Itoa(attempts)
	annotations[nsv1.AnnotationReturnToSpotNotBefore] = next.Format(time.RFC3339)
	return attempts, next
}

// spotFallback reports when a claim launched on-demand for lack of spot
// capacity, if it did (nsv1.AnnotationSpotFallback). An unreadable time
// still marks a fallback.
func spotFallback(c *nsv1.NodeClaim) (time.Time, bool) {
	v, ok := c.Annotations[nsv1.AnnotationSpotFallback]
	if !ok {
		return time.Time{}, false
	}
	at, _ := time.Parse(time.RFC3339, v)
	return at, true
}

// returnBackoff is when a spot-fallback claim's next return to spot may
// start, and whether that is still to come (an earlier return failed).
func returnBackoff(c *nsv1.NodeClaim, now time.Time) (time.Time, bool) {
	if _, ok := c.Annotations[nsv1.AnnotationSpotFallback]; !ok {
		return time.Time{}, false
	}
	next, err := time.Parse(time.RFC3339, c.Annotations[nsv1.AnnotationReturnToSpotNotBefore])
	if err != nil {
		return time.Time{}, false
	}
	return next, next.After(now)
}

// allowsSpot reports whether requirements leave spot open (an
// unconstrained capacity type does).
func allowsSpot(reqs scheduling.Requirements) bool {
	r := reqs.Get(nsv1.LabelCapacityType)
	return r == nil || r.Has(nsv1.CapacityTypeSpot)
}

// returnToSpot replaces nodes that run on-demand only because spot had no
// capacity when they launched, once spot is back: the insufficient-capacity
// view no longer hides the spot offerings their pods need, and the spot
// replacements save MinSavingsShare of the node's price whichever of their
// options launches (consolidation's rule, narrowAll). A failed return backs
// off (ReturnToSpotBackoff), and a pool may turn the step off.
func (w *working) returnToSpot(eligible []*nodeInfo, out *Plan) error {
	const reason = nsv1.DisruptionReasonReturnToSpot
	for _, n := range eligible {
		if n.removed || n.received || n.ct != nsv1.CapacityTypeOnDemand || len(n.movable) == 0 {
			continue // an empty node is emptiness's
		}
		since, ok := spotFallback(n.claim)
		if !ok || !n.pool.Spec.Disruption.ReturnsToSpot() || !allowsSpot(scheduling.FromAPI(n.pool.Spec.Template.Spec.Requirements)) {
			continue
		}
		why := "launched on-demand because spot had no capacity"
		if !since.IsZero() {
			why += " at " + since.UTC().Format(time.RFC3339)
		}
		if next, backingOff := returnBackoff(n.claim, w.in.Now); backingOff {
			w.until(next)
			w.skip(n, SkipReturnToSpotBackoff, fmt.Sprintf("%s %s; %s failed returns to spot, the next not before %s",
				describe(n), why, n.claim.Annotations[nsv1.AnnotationReturnToSpotAttempts], next.UTC().Format(time.RFC3339)))
			continue
		}
		out.Candidates[reason]++
		if !w.budgeted(n, reason) {
			continue
		}
		if w.solves >= w.opts.MaxSolves {
			w.skip(n, SkipNotEvaluated, fmt.Sprintf("node %s %s; this plan's solver budget ran out before it", n.name, why))
			continue
		}
		a, plan, skip, msg, err := w.toSpot(n, why)
		if err != nil {
			return err
		}
		if a == nil {
			w.skip(n, skip, msg)
			continue
		}
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}

// toSpot decides one return to spot: n's pods go to the other nodes and to
// new spot nodes only, cheaper than n by MinSavingsShare.
func (w *working) toSpot(n *nodeInfo, why string) (*Action, *scheduling.Plan, SkipReason, string, error) {
	cands := []*nodeInfo{n}
	plan, err := w.simulateWith(cands, nil, w.spotPools(w.poolsWithout(cands)))
	if err != nil {
		return nil, nil, "", "", err
	}
	if len(plan.Unschedulable) > 0 {
		return nil, nil, SkipSpotUnavailable, fmt.Sprintf("%s %s; spot is not back for its pods: %d of them fit on no other node and no spot node (%s)",
			describe(n), why, len(plan.Unschedulable), plan.Unschedulable[0].Reason), nil
	}
	a := w.newAction(MethodReturnToSpot, nsv1.DisruptionReasonReturnToSpot, cands, why)
	if len(plan.NewClaims) == 0 {
		a.Savings = n.price
		a.Message = fmt.Sprintf("%s %s; its %d pods fit on other nodes, deleting it saves $%.4f/h", describe(n), why, len(a.Pods), n.price)
		return a, plan, "", "", nil
	}
	repl, reason, msg := w.narrowAll(plan.NewClaims, cands, n.price*(1-w.opts.MinSavingsShare), w.opts.MinSpotOptions)
	if repl == nil {
		return nil, nil, reason, fmt.Sprintf("%s %s; spot is back but %s", describe(n), why, msg), nil
	}
	most := 0.0
	for _, cp := range repl {
		cp = w.rename(cp)
		a.Replacements = append(a.Replacements, cp)
		most += cp.Options[len(cp.Options)-1].Price
	}
	a.Savings = n.price - a.ReplacementPrice()
	a.Message = fmt.Sprintf("%s %s; spot is back: replacing it with %d spot node(s) (from $%.4f/h, at most $%.4f/h) for its %d pods saves $%.4f/h",
		describe(n), why, len(a.Replacements), a.ReplacementPrice(), most, len(a.Pods), a.Savings)
	return a, plan, "", "", nil
}

// spotPools are the solver's pools that allow spot, narrowed to spot, with
// their usage as the plan leaves it so far.
func (w *working) spotPools(base []*scheduling.NodePool) []*scheduling.NodePool {
	spot := scheduling.NewRequirement(nsv1.LabelCapacityType, corev1.NodeSelectorOpIn, nsv1.CapacityTypeSpot)
	out := make([]*scheduling.NodePool, 0, len(base))
	for _, p := range base {
		if !allowsSpot(p.Requirements) {
			continue
		}
		cp := *p
		cp.Requirements = p.Requirements.Clone()
		cp.Requirements.Add(spot)
		out = append(out, &cp)
	}
	return out
}
