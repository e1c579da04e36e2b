package disruptor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/provisioning"
)

// Decisions, for the decisions metric.
const (
	decisionDelete  = "delete"
	decisionReplace = "replace"
)

// execute carries out one validated action: delete its claims, or start a
// command that launches the replacements first.
func (c *Controller) execute(ctx context.Context, snap *state.Snapshot, a *disruption.Action, now time.Time) error {
	decision := decisionDelete
	if len(a.Replacements) > 0 {
		decision = decisionReplace
	}
	log.FromContext(ctx).Info("disrupting", "method", a.Method, "reason", a.Reason, "decision", decision,
		"nodes", len(a.Candidates), "pods", len(a.Pods), "replacements", len(a.Replacements), "savings", a.Savings, "why", a.Message)
	c.metrics.Disruption.Decisions.WithLabelValues(string(a.Method), string(a.Reason), decision).Inc()
	// Counters only grow: a drift onto dearer nodes adds nothing.
	c.metrics.Disruption.Savings.WithLabelValues(string(a.Reason)).Add(max(0, a.Savings))
	// marked are the candidates as the command's patch left them (their
	// resourceVersion current), for the writes that follow.
	marked := map[string]*nsv1.NodeClaim{}
	if decision == decisionReplace {
		var err error
		if marked, err = c.startCommand(ctx, snap, a, now); err != nil {
			return err
		}
		if !a.Forced || a.Method == disruption.MethodInterruption {
			// advance (advanceInterrupted for an interruption) deletes
			// the candidates once the replacements have initialized.
			return nil
		}
		// A forced method drains at once: the replacements boot while the
		// termination controller drains (PDBs and do-not-disrupt hold
		// until the claim's terminationGracePeriod ends), and the command's
		// marks keep them from being taken for empty capacity until the
		// candidates are gone.
	}
	for _, cand := range a.Candidates {
		// A copy: the snapshot's objects are the cache's.
		claim := cand.Claim.DeepCopy()
		if m := marked[claim.Name]; m != nil {
			claim = m
		}
		if a.Method == disruption.MethodRepair {
			// Repair ends the drain at once (Action.Deadline is now): a
			// broken node's evictions may never complete.
			if err := c.terminateBy(ctx, claim, a.Deadline); err != nil {
				return err
			}
		}
		if err := c.kube.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting nodeclaim %s (%s): %w", cand.Claim.Name, a.Reason, err)
		}
		// A deletion with no command leaves no reason on the claim.
		c.metrics.NoteTermination(cand.Claim.UID, lifecycle.SnakeCase(string(a.Reason)))
		c.markRecent(cand.Claim.Name, now)
		c.recorder.Publish(events.Disrupting(cand.Claim, string(a.Reason), a.Message))
		if a.Method == disruption.MethodRepair {
			c.metrics.Disruption.Repairs.WithLabelValues(cand.NodePool, a.Condition).Inc()
			msg := fmt.Sprintf("%s %s; replacing it", cand.Node.Name, cand.Why)
			c.recorder.Publish(events.Repairing(cand.Claim, msg), events.Repairing(cand.Node, msg))
		}
		if a.Method == disruption.MethodInterruption {
			c.recorder.Publish(events.ReplacementPlanned(cand.Claim, fmt.Sprintf("%s; no new node needed (%d to move): %s", cand.Why, len(a.Pods), replacementSummary(a, nil))))
			c.recorder.Publish(events.InterruptionDrain(cand.Claim, "draining: "+a.Message))
		}
	}
	return nil
}

// startCommand marks the candidates (annotations on the claim, the
// disrupted taint on the node, so no new pod lands there while the
// replacements launch) and creates the replacement claims. The candidates
// are deleted by advance once every replacement has initialized.
func (c *Controller) startCommand(ctx context.Context, snap *state.Snapshot, a *disruption.Action, now time.Time) (map[string]*nsv1.NodeClaim, error) {
	id := commandID(a, now)
	names := make([]string, len(a.Replacements))
	for i, r := range a.Replacements {
		names[i] = fmt.Sprintf("%s-%s", r.NodePool, shortHash(id+"/"+strconv.Itoa(i), 5))
	}
	marked := map[string]*nsv1.NodeClaim{}
	pools := map[string]*nsv1.NodePool{}
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	for _, cand := range a.Candidates {
		claim := cand.Claim.DeepCopy()
		base := claim.DeepCopy()
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[nsv1.AnnotationDisruptionCommand] = id
		claim.SetDisruptionReplacements(names)
		claim.Annotations[nsv1.AnnotationDisruptionReason] = string(a.Reason)
		claim.Annotations[nsv1.AnnotationDisruptionStarted] = now.UTC().Format(time.RFC3339)
		if a.Hold {
			claim.Annotations[nsv1.AnnotationDisruptionHold] = "true"
		} else {
			// A node a prespin command held, now drifted or expired: the
			// new command replaces the hold.
			delete(claim.Annotations, nsv1.AnnotationDisruptionHold)
		}
		if err := c.kube.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return nil, fmt.Errorf("marking nodeclaim %s for disruption: %w", claim.Name, err)
		}
		marked[claim.Name] = claim
		c.markRecent(claim.Name, now)
		if err := c.setTaint(ctx, cand.Node.Name, true); err != nil {
			return nil, err
		}
	}
	for i, r := range a.Replacements {
		pool := pools[r.NodePool]
		if pool == nil {
			return nil, fmt.Errorf("nodepool %s of replacement %s is gone", r.NodePool, names[i])
		}
		claim := provisioning.NewNodeClaim(pool, r, names[i])
		claim.Annotations[nsv1.AnnotationReplacementFor] = id
		if err := c.kube.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating replacement nodeclaim %s: %w", names[i], err)
		}
		c.metrics.NodeClaimsCreated.WithLabelValues(pool.Name, "disruption").Inc()
		c.recorder.Publish(events.DisruptionReplacement(claim, fmt.Sprintf("replaces %s (%s): %d pods, %d launch options from $%.4f/h",
			candidateNames(a), a.Reason, len(r.Pods), len(r.Options), r.Price())))
	}
	if a.Method == disruption.MethodInterruption {
		// The interruption handler's Event: every pod has a place planned.
		for _, cand := range a.Candidates {
			c.recorder.Publish(events.ReplacementPlanned(cand.Claim, fmt.Sprintf("%s; launching %s for its pods (%d to move): %s",
				cand.Why, strings.Join(names, ", "), len(a.Pods), replacementSummary(a, names))))
		}
		return marked, nil
	}
	if a.Forced {
		return marked, nil // execute deletes the candidates now, with its own Event
	}
	for _, cand := range a.Candidates {
		c.recorder.Publish(events.Disrupting(cand.Claim, string(a.Reason),
			fmt.Sprintf("%s; launching %s first", a.Message, strings.Join(names, ", "))))
	}
	return marked, nil
}

// setTaint adds or removes the disrupted taint on a node.
func (c *Controller) setTaint(ctx context.Context, name string, on bool) error {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("getting node %s: %w", name, err))
	}
	base := node.DeepCopy()
	var kept []corev1.Taint
	has := false
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&nsv1.DisruptedTaint) {
			has = true
			if !on {
				continue
			}
		}
		kept = append(kept, t)
	}
	if has == on {
		return nil
	}
	if on {
		kept = append(kept, nsv1.DisruptedTaint)
	}
	node.Spec.Taints = kept
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the disrupted taint on node %s to %v: %w", name, on, err)
	}
	return nil
}

// commandID names a command after its candidates and start time, so it is
// the same however often the step is retried within the same instant.
func commandID(a *disruption.Action, now time.Time) string {
	return "d-" + shortHash(candidateNames(a)+"@"+now.UTC().Format(time.RFC3339Nano), 10)
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func candidateNames(a *disruption.Action) string {
	names := make([]string, 0, len(a.Candidates))
	for _, c := range a.Candidates {
		names = append(names, c.Claim.Name)
	}
	return strings.Join(names, ", ")
}
