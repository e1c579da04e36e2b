package disruptor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// The interruption handler (pkg/controllers/interruption) only marks a
// claim (the Disrupting condition, the deadline annotation) and taints its
// node; the planner's interruption step turns the mark into an action
// (MethodInterruption) and this controller carries it out as it carries out
// every other replace-then-delete: launch the replacements, protect them
// (nodesmith.sh/replacement-for), delete the candidate. What differs is
// when the candidate goes (interruption.Decide): as soon as its
// replacements have initialized, or when the notice's deadline less its
// pods' grace periods arrives (terminateBy), whichever is first; a
// rebalance recommendation in prespin mode holds it until a notice with a
// deadline follows.

// rebalanceMode is the rebalance setting the planner and the executor use.
func (c *Controller) rebalanceMode() interruption.RebalanceMode {
	if m := c.opts.Plan.Rebalance; m != "" {
		return m
	}
	return interruption.DefaultRebalanceMode
}

// interrupted reports whether advanceInterrupted carries the command on:
// it is the interruption step's own command, or one of its candidates was
// marked with a deadline (a notice that takes the instance) after another
// method's command started. A drift or expiry command over a node a
// prespin command held — marked for a rebalance recommendation only — is
// an ordinary command: nothing holds it.
func interrupted(cmd *command) bool {
	own := cmd.reason == string(nsv1.DisruptionReasonInterrupted) || cmd.reason == string(nsv1.DisruptionReasonRebalance)
	for _, cl := range cmd.candidates {
		m := interruption.MarkOf(cl)
		if m.Marked() && (own || m.Reason != nsv1.DisruptingReasonRebalanceRecommendation) {
			return true
		}
	}
	return false
}

// advanceInterrupted moves on a command one of whose candidates the
// interruption handler marked: each candidate is deleted when
// interruption.Decide says so (replacements initialized, or terminateBy
// reached); a replacement that failed, or one that did not initialize
// within CommandTimeout, releases the command so the next plan launches
// another (unless the candidate is due anyway). It reports whether the
// command still waits.
func (c *Controller) advanceInterrupted(ctx context.Context, snap *state.Snapshot, cmd *command, claims map[string]*nsv1.NodeClaim, now time.Time) (bool, error) {
	ready, failed, pending := 0, []string(nil), []string(nil)
	for _, name := range cmd.replacements {
		r, ok := claims[name]
		switch {
		case !ok && now.Sub(cmd.started) < replacementGrace:
			pending = append(pending, name)
		case !ok || !r.DeletionTimestamp.IsZero():
			failed = append(failed, name)
		case lifecycle.IsTrue(r.Status.Conditions, nsv1.ConditionInitialized):
			ready++
		default:
			pending = append(pending, name)
		}
	}
	mode := c.rebalanceMode()
	waiting := false
	var kept []*nsv1.NodeClaim
	for _, cl := range cmd.candidates {
		mark := interruption.MarkOf(cl)
		v := interruption.Decide(interruption.Input{Mark: mark, Mode: mode, Pods: podsOf(snap, cl),
			Replacements: len(cmd.replacements), Ready: ready, Now: now})
		if !v.Delete {
			kept = append(kept, cl)
			if v.Waiting != "" {
				c.recorder.Publish(events.InterruptionWaiting(cl, v.Waiting))
			}
			continue
		}
		if err := c.drainInterrupted(ctx, snap, cmd, cl, mark, v.Why, now); err != nil {
			return waiting, err
		}
	}
	if len(kept) == 0 {
		return waiting, nil
	}
	switch {
	case len(failed) > 0:
		return waiting, c.release(ctx, cmd, kept, claims, nil, fmt.Sprintf("replacement %s was removed before it initialized", strings.Join(failed, ", ")))
	case len(pending) > 0 && now.Sub(cmd.started) >= c.opts.CommandTimeout:
		return waiting, c.release(ctx, cmd, kept, claims, pending, fmt.Sprintf("replacement %s did not initialize within %s", strings.Join(pending, ", "), c.opts.CommandTimeout))
	}
	// Held (prespin) commands wait for a notice, not for their
	// replacements: they are not polled.
	for _, cl := range kept {
		if len(pending) > 0 || !interruption.Holds(interruption.MarkOf(cl), mode) {
			waiting = true
		}
	}
	return waiting, nil
}

// podsOf are the pods bound to the claim's node.
func podsOf(snap *state.Snapshot, cl *nsv1.NodeClaim) []*corev1.Pod {
	if cl.Status.NodeName != "" {
		return snap.PodsByNode[cl.Status.NodeName]
	}
	if n := snap.NodeByID[cl.Status.ProviderID]; n != nil {
		return snap.PodsByNode[n.Name]
	}
	return nil
}

// drainInterrupted deletes a marked candidate: the termination controller
// drains its node through the Eviction API. With a deadline, the claim's
// termination timestamp is brought forward to it first, so the drain
// deletes what is left before the instance goes.
func (c *Controller) drainInterrupted(ctx context.Context, snap *state.Snapshot, cmd *command, cl *nsv1.NodeClaim, mark interruption.Mark, why string, now time.Time) error {
	claim := cl.DeepCopy()
	if !mark.Deadline.IsZero() {
		if err := c.terminateBy(ctx, claim, mark.Deadline); err != nil {
			return err
		}
	}
	if err := c.kube.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting interrupted nodeclaim %s: %w", claim.Name, err)
	}
	c.markRecent(claim.Name, now)
	log.FromContext(ctx).Info("draining an interrupted node", "command", cmd.id, "nodeclaim", claim.Name, "why", why)
	c.recorder.Publish(events.Disrupting(cl, cmd.reason, "draining and removing the node: "+why))
	c.recorder.Publish(events.InterruptionDrain(cl, "draining: "+why))
	if n := snap.NodeByID[cl.Status.ProviderID]; n != nil {
		c.recorder.Publish(events.InterruptionDrain(n, "draining: "+why))
	}
	return nil
}

// terminateBy brings the claim's termination timestamp forward to by (it
// is never postponed), so its drain ends before the instance goes.
func (c *Controller) terminateBy(ctx context.Context, claim *nsv1.NodeClaim, by time.Time) error {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := c.cluster.Reader().Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return err
			}
		}
		first = false
		if t, err := time.Parse(time.RFC3339, claim.Annotations[nsv1.AnnotationTerminationTimestamp]); err == nil && !t.After(by) {
			return nil
		}
		base := claim.DeepCopy()
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[nsv1.AnnotationTerminationTimestamp] = by.UTC().Format(time.RFC3339)
		return c.kube.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the termination timestamp of nodeclaim %s: %w", claim.Name, err))
	}
	return nil
}

// release gives up an interrupted command without giving up the node: the
// command's annotations come off the candidates in kept (their mark and
// taint stay, the interruption handler's), replacements in stale that have
// not initialized are deleted, and the next plan starts another command
// for them.
func (c *Controller) release(ctx context.Context, cmd *command, kept []*nsv1.NodeClaim, claims map[string]*nsv1.NodeClaim, stale []string, why string) error {
	log.FromContext(ctx).Info("releasing an interrupted node's command; planning it again", "command", cmd.id, "why", why)
	c.metrics.Disruption.Aborted.WithLabelValues(cmd.reason).Inc()
	for _, name := range stale {
		if r := claims[name]; r != nil {
			if err := c.kube.Delete(ctx, r.DeepCopy()); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting replacement nodeclaim %s of a released command: %w", name, err)
			}
		}
	}
	for _, cl := range kept {
		claim := cl.DeepCopy()
		base := claim.DeepCopy()
		for _, k := range commandAnnotations {
			delete(claim.Annotations, k)
		}
		if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("releasing nodeclaim %s: %w", claim.Name, err)
		}
		// Planned again as soon as the cache shows the release (until then
		// the planner sees the command still there): a deadline is running.
		c.forgetRecent(claim.Name)
		c.recorder.Publish(events.DisruptionAborted(cl, why+"; planning its replacement again"))
	}
	return nil
}

// commandAnnotations are the annotations a command puts on its candidates.
var commandAnnotations = []string{nsv1.AnnotationDisruptionCommand, nsv1.AnnotationDisruptionReplacements,
	nsv1.AnnotationDisruptionReason, nsv1.AnnotationDisruptionStarted, nsv1.AnnotationDisruptionHold}

// deleteUnregistered deletes claims an interruption marked before they had
// a Node: there is nothing to drain and nothing to replace (no pod runs
// there), and the instance goes.
func (c *Controller) deleteUnregistered(ctx context.Context, snap *state.Snapshot, now time.Time) error {
	for _, cl := range snap.NodeClaims {
		if !cl.DeletionTimestamp.IsZero() || !interruption.MarkOf(cl).Interrupted() || cl.Status.NodeName != "" || snap.NodeByID[cl.Status.ProviderID] != nil {
			continue
		}
		if err := c.kube.Delete(ctx, cl.DeepCopy(), client.Preconditions{UID: &cl.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting interrupted nodeclaim %s: %w", cl.Name, err)
		}
		c.markRecent(cl.Name, now)
		c.metrics.Disruption.Decisions.WithLabelValues(string(disruption.MethodInterruption), string(nsv1.DisruptionReasonInterrupted), decisionDelete).Inc()
		c.recorder.Publish(events.InterruptionDrain(cl, "draining: the node has not registered; nothing to move, removing the claim"))
	}
	return nil
}

// replacementSummary says where an interrupted node's pods go, as "12 on
// spot-x7k2p, 3 on running nodes" (replacements in name order).
func replacementSummary(a *disruption.Action, names []string) string {
	var parts []string
	placed := 0
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return names[order[i]] < names[order[j]] })
	for _, i := range order {
		k := len(a.Replacements[i].Pods)
		placed += k
		parts = append(parts, fmt.Sprintf("%d on %s", k, names[i]))
	}
	if rest := len(a.Pods) - placed; rest > 0 {
		parts = append(parts, fmt.Sprintf("%d on running nodes", rest))
	}
	return strings.Join(parts, ", ")
}
