package disruption

import (
	"fmt"
	"time"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/interruption"
)

// interruption plans a command for every node the interruption handler
// marked (interruption.MarkOf) that is in no command yet: the replacements
// its pods need, found as for drift and expiry (replaceAll), so the
// executor launches them and deletes the node once they have initialized,
// or at the notice's deadline less its pods' grace periods (Action.Deadline).
//
//   - An interruption (spot warning, scheduled change, instance stopping)
//     is forced, reason Interrupted: no budget, PodDisruptionBudget or
//     do-not-disrupt holds it (the instance goes whatever they say) and
//     pods that fit nowhere wait Pending; the ledger already counts the
//     node as disrupting (budget.Count), so it takes nothing more.
//   - A rebalance recommendation in prespin mode launches the replacements
//     and holds the node (Action.Hold) until an interruption follows; it
//     takes no budget. No replacement needed (its pods fit on running
//     nodes): nothing to do until a notice comes.
//   - A rebalance recommendation in drain mode is a voluntary replacement,
//     reason Rebalance: held back by do-not-disrupt, PDBs and the pool's
//     budget like drift.
//
// It runs first: an instance that goes away waits for nothing.
func (w *working) interruption(marked []*nodeInfo, pdbs []pdbView, out *Plan) error {
	for _, n := range marked {
		mark := interruption.MarkOf(n.claim)
		forced := mark.Interrupted()
		hold := !forced && interruption.Holds(mark, w.opts.Rebalance)
		reason := nsv1.DisruptionReasonInterrupted
		if !forced {
			reason = nsv1.DisruptionReasonRebalance
		}
		why := fmt.Sprintf("was marked %s by the interruption handler", mark.Reason)
		if !mark.Deadline.IsZero() {
			why += fmt.Sprintf(" (instance goes away at %s)", mark.Deadline.UTC().Format(time.RFC3339))
		}
		out.Candidates[reason]++
		if !forced && !hold {
			if r, msg, blocked := w.blocker(n, pdbs); blocked {
				w.skip(n, r, msg)
				continue
			}
			if !w.budgeted(n, reason) {
				continue
			}
		}
		var a *Action
		if w.solves >= w.opts.MaxSolves {
			if !forced {
				w.skip(n, SkipNotEvaluated, fmt.Sprintf("node %s %s; this plan's solver budget ran out before it", n.name, why))
				continue
			}
			// No simulation left.
			a = w.deleteOnly(n, MethodInterruption, reason, why)
			a.Forced, a.Deadline = true, mark.Deadline
			w.commit(a, nil)
			out.Actions = append(out.Actions, a)
			continue
		}
		a, plan, skip, msg, err := w.replaceAll(n, MethodInterruption, reason, why, forced)
		if err != nil {
			return err
		}
		if a == nil {
			w.skip(n, skip, msg)
			continue
		}
		if hold && len(a.Replacements) == 0 {
			// Nothing to prespin: the pods fit on running nodes.
			continue
		}
		a.Forced, a.Hold, a.Deadline = forced, hold, mark.Deadline
		w.commit(a, plan)
		out.Actions = append(out.Actions, a)
	}
	return nil
}
