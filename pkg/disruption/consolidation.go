package disruption

import (
	"fmt"
	"sort"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/scheduling"
)

// consolidation removes underutilized nodes: first as many at a time as fit
// with at most one new node (multi-node), then one at a time (single-node).
func (w *working) consolidation(eligible []*nodeInfo, out *Plan) error {
	var cands []*nodeInfo
	for _, n := range eligible {
		if n.removed || n.received || lifecycle.IsEmpty(n.pods) {
			continue // emptiness had its turn, under the Empty budget
		}
		at, ok := lifecycle.EmptySince(n.claim, n.pool)
		switch {
		case !ok:
			w.skip(n, SkipConsolidationDisabled, fmt.Sprintf("nodepool %s's consolidateAfter is Never", n.pool.Name))
			continue
		case n.pool.Spec.Disruption.ConsolidationPolicy == nsv1.ConsolidationPolicyWhenEmpty:
			w.skip(n, SkipPolicyWhenEmpty, fmt.Sprintf("nodepool %s only removes empty nodes (consolidationPolicy WhenEmpty) and node %s runs %d pods",
				n.pool.Name, n.name, len(n.movable)))
			continue
		case at.After(w.in.Now):
			w.skip(n, SkipConsolidateAfter, fmt.Sprintf("a pod arrived on or left node %s recently; nodepool %s's consolidateAfter lets it be consolidated at %s",
				n.name, n.pool.Name, at.UTC().Format(time.RFC3339)))
			continue
		}
		cands = append(cands, n)
	}
	out.Candidates[nsv1.DisruptionReasonUnderutilized] = len(cands)
	// Cheapest to empty per dollar saved first: few pods on a dear node.
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		ra, rb := float64(len(a.movable))/max(a.price, 1e-9), float64(len(b.movable))/max(b.price, 1e-9)
		if ra != rb {
			return ra < rb
		}
		return a.claim.Name < b.claim.Name
	})
	if err := w.multiNode(cands, out); err != nil {
		return err
	}
	return w.singleNode(cands, out)
}

// multiNode takes batches of candidates in order (within each pool's
// budget) and removes the longest prefix of each that the solver can place
// with at most one cheaper new node; it stops at the first batch where no
// prefix of two or more works.
func (w *working) multiNode(cands []*nodeInfo, out *Plan) error {
	for w.solves < w.opts.MaxSolves {
		batch := w.batch(cands)
		if len(batch) < 2 {
			return nil
		}
		a, plan, err := w.longestPrefix(batch)
		if err != nil {
			return err
		}
		if a == nil {
			return nil
		}
		if len(a.Candidates) == 1 {
			a.Method = MethodSingleNodeConsolidation
		}
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}

// batch is the next MaxCandidatesPerCommand candidates not yet removed
// whose pools' budgets allow them.
func (w *working) batch(cands []*nodeInfo) []*nodeInfo {
	var out []*nodeInfo
	taken := map[string]int{}
	for _, n := range cands {
		if len(out) == w.opts.MaxCandidatesPerCommand {
			break
		}
		pool := n.poolName()
		if n.removed || n.received || taken[pool] >= w.budgets.allowed(pool, nsv1.DisruptionReasonUnderutilized) {
			continue
		}
		taken[pool]++
		out = append(out, n)
	}
	return out
}

// longestPrefix tries the whole batch, then searches the longest prefix of
// at least two candidates that consolidates (removability is close to
// monotone in the prefix length: a longer prefix has more pods to place on
// fewer nodes).
func (w *working) longestPrefix(batch []*nodeInfo) (*Action, *scheduling.Plan, error) {
	a, plan, _, _, err := w.consolidate(batch, MethodMultiNodeConsolidation)
	if err != nil || a != nil {
		return a, plan, err
	}
	var best *Action
	var bestPlan *scheduling.Plan
	lo, hi := 2, len(batch)-1
	for lo <= hi && w.solves < w.opts.MaxSolves {
		mid := (lo + hi) / 2
		a, plan, _, _, err := w.consolidate(batch[:mid], MethodMultiNodeConsolidation)
		if err != nil {
			return nil, nil, err
		}
		if a != nil {
			best, bestPlan, lo = a, plan, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, bestPlan, nil
}

// singleNode tries each remaining candidate alone: delete it if its pods fit
// elsewhere, or replace it with one cheaper node. Candidates whose pods
// cannot fit even in the cluster's total spare room plus the largest type
// cheap enough to save are skipped without a solve.
func (w *working) singleNode(cands []*nodeInfo, out *Plan) error {
	free := w.freeRoom()
	for _, n := range cands {
		if n.removed || n.received || !w.budgeted(n, nsv1.DisruptionReasonUnderutilized) {
			continue
		}
		if w.solves >= w.opts.MaxSolves {
			w.skip(n, SkipNotEvaluated, fmt.Sprintf("%s: this plan's solver budget ran out before it", describe(n)))
			continue
		}
		need := w.need(n.movable)
		elsewhere := free
		if en, ok := w.base[n.name]; ok && !en.MarkedForDeletion {
			own := w.spare(en)
			for i := range elsewhere {
				elsewhere[i] -= own[i]
			}
		}
		if !need.fits(elsewhere) {
			var rest resvec
			for i := range rest {
				rest[i] = max(0, need[i]-elsewhere[i])
			}
			maxPrice := n.price * (1 - w.opts.MinSavingsShare)
			if !w.cheaperTypeHolds(rest, maxPrice) {
				w.skip(n, SkipNotCheaper, fmt.Sprintf("%s: its pods do not fit in the other nodes' spare room, and no instance type sold for at most $%.4f/h has room for the rest",
					describe(n), maxPrice))
				continue
			}
		}
		a, plan, reason, msg, err := w.consolidate([]*nodeInfo{n}, MethodSingleNodeConsolidation)
		if err != nil {
			return err
		}
		if a == nil {
			w.skip(n, reason, msg)
			continue
		}
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
		free = w.freeRoom()
	}
	return nil
}
