package disruptor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/disruption"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
	"github.com/nodesmith/nodesmith/pkg/metrics"
)

// command is a replacement in progress, read back from the annotations of
// its candidates.
type command struct {
	id           string
	reason       string
	started      time.Time
	candidates   []*nsv1.NodeClaim // not yet being deleted
	replacements []string
}

// commands groups the snapshot's marked candidates by command.
func commands(snap *state.Snapshot) []*command {
	byID := map[string]*command{}
	for _, cl := range snap.NodeClaims {
		id := cl.Annotations[nsv1.AnnotationDisruptionCommand]
		if id == "" || !cl.DeletionTimestamp.IsZero() {
			continue
		}
		cmd := byID[id]
		if cmd == nil {
			cmd = &command{id: id, reason: cl.Annotations[nsv1.AnnotationDisruptionReason]}
			cmd.replacements = cl.DisruptionReplacements()
			// An unreadable start time counts as long ago: the command
			// times out rather than waiting for ever.
			cmd.started, _ = time.Parse(time.RFC3339, cl.Annotations[nsv1.AnnotationDisruptionStarted])
			byID[id] = cmd
		}
		cmd.candidates = append(cmd.candidates, cl)
	}
	out := make([]*command, 0, len(byID))
	for _, cmd := range byID {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// advance moves every command on: once all its replacements initialized
// its candidates are deleted; a replacement deleted before initializing, or
// a command past CommandTimeout, aborts it. It reports whether a command
// is still waiting.
func (c *Controller) advance(ctx context.Context, snap *state.Snapshot, now time.Time) (bool, error) {
	claims := map[string]*nsv1.NodeClaim{}
	for _, cl := range snap.NodeClaims {
		claims[cl.Name] = cl
	}
	waiting := false
	for _, cmd := range commands(snap) {
		if interrupted(cmd) {
			w, err := c.advanceInterrupted(ctx, snap, cmd, claims, now)
			if err != nil {
				return waiting, err
			}
			waiting = waiting || w
			continue
		}
		var pending, failed []string
		for _, name := range cmd.replacements {
			r, ok := claims[name]
			switch {
			case !ok && now.Sub(cmd.started) < replacementGrace:
				pending = append(pending, name) // just created; the cache has not caught up
			case !ok || !r.DeletionTimestamp.IsZero():
				failed = append(failed, name)
			case !lifecycle.IsTrue(r.Status.Conditions, nsv1.ConditionInitialized):
				pending = append(pending, name)
			}
		}
		switch {
		case len(cmd.replacements) == 0:
			// Never written so by this controller: without a replacement to
			// wait for, deleting could strand the pods. Give it up.
			if err := c.abort(ctx, cmd, claims, nil, "the disruption names no replacement", now); err != nil {
				return waiting, err
			}
		case len(failed) > 0:
			if err := c.abort(ctx, cmd, claims, nil, fmt.Sprintf("replacement %s was removed before it initialized", strings.Join(failed, ", ")), now); err != nil {
				return waiting, err
			}
		case len(pending) == 0:
			if err := c.finish(ctx, cmd, now); err != nil {
				return waiting, err
			}
		case now.Sub(cmd.started) >= c.opts.CommandTimeout:
			if err := c.abort(ctx, cmd, claims, pending, fmt.Sprintf("replacement %s did not initialize within %s", strings.Join(pending, ", "), c.opts.CommandTimeout), now); err != nil {
				return waiting, err
			}
		default:
			waiting = true
		}
	}
	return waiting, nil
}

// finish deletes a command's candidates: their replacements are ready.
func (c *Controller) finish(ctx context.Context, cmd *command, now time.Time) error {
	for _, cl := range cmd.candidates {
		if err := c.kube.Delete(ctx, cl.DeepCopy()); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting replaced nodeclaim %s: %w", cl.Name, err)
		}
		c.markRecent(cl.Name, now)
		c.recorder.Publish(events.Disrupting(cl, cmd.reason, fmt.Sprintf("replacement %s initialized; draining and removing the node",
			strings.Join(cmd.replacements, ", "))))
		if cmd.reason == string(nsv1.DisruptionReasonReturnToSpot) {
			c.metrics.Disruption.ReturnsToSpot.WithLabelValues(cl.Labels[nsv1.LabelNodePool], metrics.OutcomeReturned).Inc()
			c.recorder.Publish(events.ReturnedToSpot(cl, fmt.Sprintf("ran on-demand because spot had no capacity (since %s); spot replacement %s initialized",
				cl.Annotations[nsv1.AnnotationSpotFallback], strings.Join(cmd.replacements, ", "))))
		}
	}
	log.FromContext(ctx).Info("replacements initialized; deleting the replaced nodeclaims", "command", cmd.id, "nodeclaims", len(cmd.candidates))
	return nil
}

// abort gives up a command: its candidates lose their marks and taint and
// stay; replacements in stale that have not initialized are deleted. A
// return to spot that fails backs off: the candidate's claim records the
// failure and the earliest next attempt (disruption.ReturnToSpotFailed),
// so a restart keeps the backoff.
func (c *Controller) abort(ctx context.Context, cmd *command, claims map[string]*nsv1.NodeClaim, stale []string, why string, now time.Time) error {
	log.FromContext(ctx).Info("abandoning a disruption", "command", cmd.id, "why", why)
	c.metrics.Disruption.Aborted.WithLabelValues(cmd.reason).Inc()
	for _, name := range stale {
		if r := claims[name]; r != nil {
			if err := c.kube.Delete(ctx, r.DeepCopy()); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting replacement nodeclaim %s of an abandoned disruption: %w", name, err)
			}
		}
	}
	for _, cl := range cmd.candidates {
		claim := cl.DeepCopy()
		base := claim.DeepCopy()
		for _, k := range commandAnnotations {
			delete(claim.Annotations, k)
		}
		toSpot := cmd.reason == string(nsv1.DisruptionReasonReturnToSpot)
		var attempts int
		var next time.Time
		if toSpot {
			attempts, next = disruption.ReturnToSpotFailed(claim.Annotations, now)
		}
		if err := c.kube.Patch(ctx, claim, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("unmarking nodeclaim %s: %w", claim.Name, err)
		}
		if claim.Status.NodeName != "" {
			if err := c.setTaint(ctx, claim.Status.NodeName, false); err != nil {
				return err
			}
		}
		c.recorder.Publish(events.DisruptionAborted(cl, why+"; the node stays"))
		if toSpot {
			c.metrics.Disruption.ReturnsToSpot.WithLabelValues(cl.Labels[nsv1.LabelNodePool], metrics.OutcomeFailed).Inc()
			c.recorder.Publish(events.ReturnToSpotBackoff(cl, fmt.Sprintf("return to spot %d failed (%s); the next not before %s",
				attempts, why, next.Format(time.RFC3339))))
		}
	}
	return nil
}
