package disruption

import (
	"errors"
	"fmt"
	"sort"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// Compute proposes the plan's actions: the commands for nodes the
// interruption handler marked (interrupt.go), node repair (repair.go,
// behind Options.NodeRepair), expiration, a repack toward
// the from-scratch plan where the fleet's shape calls for one (repack.go),
// emptiness, drift, return to spot (spot.go), multi-node then single-node
// consolidation, each within the budgets and each seeing the pods earlier
// actions moved. It is deterministic.
func Compute(in Input) (*Plan, error) {
	plan, _, err := compute(in)
	return plan, err
}

// compute is Compute, also returning the working copy of the cluster as
// the plan leaves it (for tests that carry a plan out).
func compute(in Input) (*Plan, *working, error) {
	if in.Snapshot == nil {
		return nil, nil, errors.New("disruption plan: no cluster snapshot")
	}
	w := begin(in)
	fp, cacheable := w.fingerprint()
	if w.reusable(in.Previous, fp, cacheable) {
		again := *in.Previous
		again.Reused = true
		return &again, nil, nil
	}
	w.build()
	out := &Plan{
		Candidates: map[nsv1.DisruptionReason]int{}, Allowed: w.budgets.allowance(), BudgetErrors: w.budgets.errs,
	}
	if err := w.reserveInProgress(); err != nil {
		return nil, nil, err
	}
	pdbs := pdbViews(in.Snapshot.PDBs)
	// The interruption handler's marks come first: their instances go
	// away whatever else the plan would do (interrupt.go).
	var live, marked []*nodeInfo
	for _, n := range w.nodes {
		switch {
		case n.awaiting:
			marked = append(marked, n)
		case !n.disrupting:
			live = append(live, n)
		}
	}
	if err := w.interruption(marked, pdbs, out); err != nil {
		return nil, nil, err
	}
	// Node repair (behind its gate) is forceful too, and comes before
	// expiry: a broken node goes first among those still there (repair.go).
	if w.opts.NodeRepair {
		if err := w.repair(live, out); err != nil {
			return nil, nil, err
		}
	}
	// Expiry is forceful (Karpenter v1): an expired node goes whatever
	// blocks a voluntary disruption — do-not-disrupt, PDBs, nominations,
	// budgets (it still uses them up) — so it is planned next, over every
	// node not already on its way out; the drain then honours PDBs and
	// do-not-disrupt until the claim's terminationGracePeriod runs out.
	if err := w.expiration(live, out); err != nil {
		return nil, nil, err
	}
	var eligible []*nodeInfo
	for _, n := range live {
		if n.removed {
			continue // expired
		}
		if reason, msg, blocked := w.blocker(n, pdbs); blocked {
			w.skip(n, reason, msg)
			continue
		}
		eligible = append(eligible, n)
	}
	// Consolidation (repack, emptiness, the rest) leaves nodes marked
	// Disrupting to the interruption handler.
	var consolidable, settled []*nodeInfo
	for _, n := range eligible {
		if n.static() {
			continue // drift may still replace it; see below
		}
		if !n.marked {
			consolidable = append(consolidable, n)
			// A spot-fallback node whose return to spot just failed is not
			// consolidated either: its replacement would be the spot node
			// that just failed to come up.
			if _, backingOff := returnBackoff(n.claim, in.Now); !backingOff {
				settled = append(settled, n)
			}
		}
	}
	for _, step := range []struct {
		run   func([]*nodeInfo, *Plan) error
		nodes []*nodeInfo
	}{{w.repack, consolidable}, {w.emptiness, consolidable}, {w.drift, eligible}, {w.returnToSpot, consolidable}, {w.consolidation, settled}} {
		if err := step.run(step.nodes, out); err != nil {
			return nil, nil, err
		}
	}
	for _, n := range eligible {
		if n.static() && !n.removed {
			w.skip(n, SkipStaticNodePool, fmt.Sprintf("node %s belongs to static nodepool %s (replicas %d): consolidation never removes its nodes",
				n.name, n.poolName(), *n.pool.Spec.Replicas))
		}
	}
	for _, s := range w.skips {
		out.Skipped = append(out.Skipped, s)
	}
	sort.Slice(out.Skipped, func(i, j int) bool { return out.Skipped[i].Claim < out.Skipped[j].Claim })
	out.Solves = w.solves
	if cacheable {
		w.until(in.Now.Add(maxReuse))
		out.reuse = &reuse{fingerprint: fp, opts: w.opts, until: w.horizon, types: w.typeHashes, requests: w.requests}
		out.ValidUntil = w.horizon
	}
	return out, w, nil
}

// emptiness deletes nodes that ran no workload pods for consolidateAfter.
func (w *working) emptiness(eligible []*nodeInfo, out *Plan) error {
	for _, n := range eligible {
		if n.removed || n.received || !lifecycle.IsEmpty(n.pods) {
			continue
		}
		at, ok := lifecycle.EmptySince(n.claim, n.pool)
		if !ok {
			w.skip(n, SkipConsolidationDisabled, fmt.Sprintf("node %s is empty, and nodepool %s's consolidateAfter is Never", n.name, n.pool.Name))
			continue
		}
		out.Candidates[nsv1.DisruptionReasonEmpty]++
		if !w.due(at) {
			w.skip(n, SkipConsolidateAfter, fmt.Sprintf("node %s is empty; nodepool %s's consolidateAfter lets it go at %s",
				n.name, n.pool.Name, at.UTC().Format(time.RFC3339)))
			continue
		}
		if msg, held := w.heldForRepack[n.name]; held {
			w.skip(n, SkipHeldForRepack, msg)
			continue
		}
		if !w.budgeted(n, nsv1.DisruptionReasonEmpty) {
			continue
		}
		why := fmt.Sprintf("has run no workload pods since %s", at.UTC().Format(time.RFC3339))
		a := w.newAction(MethodEmptiness, nsv1.DisruptionReasonEmpty, []*nodeInfo{n}, why)
		a.Savings = n.price
		a.Message = fmt.Sprintf("%s %s; deleting it saves $%.4f/h", describe(n), why, n.price)
		w.commit(a, nil)
		out.Actions = append(out.Actions, a)
	}
	return nil
}

// budgeted reports whether n's pool may lose one more node for reason, and
// records the skip when it may not.
func (w *working) budgeted(n *nodeInfo, reason nsv1.DisruptionReason) bool {
	if w.budgets.allowed(n.poolName(), reason) > 0 {
		return true
	}
	msg := fmt.Sprintf("nodepool %s's disruption budget for %s allows no more nodes now", n.poolName(), reason)
	if err := w.budgets.errs[n.poolName()]; err != nil {
		msg += fmt.Sprintf(" (a budget is invalid and allows nothing: %v)", err)
	}
	w.skip(n, SkipBudget, msg)
	return false
}

// drift replaces nodes that no longer match their pool or node class.
func (w *working) drift(eligible []*nodeInfo, out *Plan) error {
	return w.replaceEach(eligible, out, MethodDrift, nsv1.DisruptionReasonDrifted, func(n *nodeInfo) (string, bool) {
		_, why, drifted := Drifted(n.claim, n.pool, w.in.NodeClasses[nodeClassName(n.claim)])
		return why, drifted
	})
}

// expiration replaces nodes older than their claim's expireAfter. It is
// forced: no budget, PDB, do-not-disrupt or nomination holds it, the
// executor carries it out without validation and drains at once, launching
// the replacements in the same step (Karpenter's forceful methods do not
// wait for a replacement). The action still counts against its pool's
// budget, so voluntary disruptions wait while expired nodes go. Pods that
// fit nowhere do not hold it either: they wait Pending for the provisioner,
// as they would after any forced loss of a node.
func (w *working) expiration(live []*nodeInfo, out *Plan) error {
	for _, n := range live {
		if n.removed {
			continue
		}
		at, ok := expiry(n)
		if !ok || !w.due(at) {
			continue
		}
		why := fmt.Sprintf("expired at %s (expireAfter %s)", at.UTC().Format(time.RFC3339), n.claim.Spec.ExpireAfter.Duration)
		out.Candidates[nsv1.DisruptionReasonExpired]++
		a, plan, err := w.forcedReplace(n, MethodExpiration, nsv1.DisruptionReasonExpired, why)
		if err != nil {
			return err
		}
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}

func (w *working) replaceEach(eligible []*nodeInfo, out *Plan, m Method, reason nsv1.DisruptionReason, due func(*nodeInfo) (string, bool)) error {
	for _, n := range eligible {
		if n.removed || n.received {
			continue
		}
		why, ok := due(n)
		if !ok {
			continue
		}
		if n.static() && w.staticBusy(n.poolName()) {
			w.skip(n, SkipStaticReplacementInProgress, fmt.Sprintf("node %s %s; another node of static nodepool %s is being replaced, and its nodes are replaced one at a time",
				n.name, why, n.poolName()))
			continue
		}
		out.Candidates[reason]++
		if !w.budgeted(n, reason) {
			continue
		}
		if w.solves >= w.opts.MaxSolves && len(n.movable) > 0 {
			w.skip(n, SkipNotEvaluated, fmt.Sprintf("node %s %s; this plan's solver budget ran out before it", n.name, why))
			continue
		}
		a, plan, skip, msg, err := w.replaceAll(n, m, reason, why, false)
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

// nodeClassName is the EC2NodeClass a claim launched with.
func nodeClassName(c *nsv1.NodeClaim) string {
	if c.Spec.NodeClassRef == nil {
		return ""
	}
	return c.Spec.NodeClassRef.Name
}
