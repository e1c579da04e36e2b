package interruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/controllers/statuspatch"
	"github.com/nodesmith/nodesmith/pkg/interruption"
	"github.com/nodesmith/nodesmith/pkg/interruption/messages"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// handleInstance applies an instance's notices, in order, to its NodeClaim.
// managed is false when no claim has the instance (not ours).
func (q *Queue) handleInstance(ctx context.Context, instance string, notices []messages.Message, received time.Time) (bool, error) {
	claims, err := state.ClaimsByInstanceID(ctx, q.Kube, instance)
	if err != nil {
		return false, err
	}
	if len(claims) == 0 {
		return false, nil
	}
	for i := range claims {
		for _, n := range notices {
			if err := q.apply(ctx, claims[i].Name, n, received); err != nil {
				return true, fmt.Errorf("applying %s for instance %s to nodeclaim %s: %w", n.Kind, instance, claims[i].Name, err)
			}
		}
	}
	return true, nil
}

// apply carries one notice out on the named claim, reading it fresh.
func (q *Queue) apply(ctx context.Context, name string, n messages.Message, received time.Time) error {
	action := interruption.ActionFor(n.Kind, q.opts.Rebalance)
	q.Metrics.Interruption.Actions.WithLabelValues(string(n.Kind), string(action)).Inc()
	claim := &nsv1.NodeClaim{}
	if err := q.fresh().Get(ctx, types.NamespacedName{Name: name}, claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	node, err := nodeOf(ctx, q.Kube, claim)
	if err != nil {
		return err
	}
	switch action {
	case interruption.ActionNone:
		publish(q.Recorder, claim, node, notice(noticeReason(n), fmt.Sprintf("%s; no action (rebalance mode %s)", describe(n, received), q.opts.Rebalance)))
		return nil
	case interruption.ActionDelete:
		return q.deleteNow(ctx, claim, node, n, received)
	}
	return q.mark(ctx, claim, node, n, received)
}

// markOf is the claim's interruption mark (interruption.MarkOf).
func markOf(claim *nsv1.NodeClaim) interruption.Mark { return interruption.MarkOf(claim) }

// noticedAt is when the notice that disrupted the claim was received.
func noticedAt(claim *nsv1.NodeClaim) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, claim.Annotations[nsv1.AnnotationDisruptionNoticed])
	return t, err == nil
}

// mark records the notice on the claim (annotations, then the Disrupting
// condition), taints the node and wakes the provisioner. Every write is
// skipped when already done, so a repeated notice changes nothing.
func (q *Queue) mark(ctx context.Context, claim *nsv1.NodeClaim, node *corev1.Node, n messages.Message, received time.Time) error {
	cur := markOf(claim)
	next, changed := interruption.Merge(cur, interruption.Mark{Reason: interruption.Reason(n.Kind), Deadline: n.DeadlineOr(received)})
	if changed || claim.Annotations[nsv1.AnnotationDisruptionNoticed] == "" {
		if err := q.annotate(ctx, claim, next.Deadline, received); err != nil {
			return err
		}
		if err := q.setCondition(ctx, claim, next, describe(n, received)); err != nil {
			return err
		}
	}
	if !claim.DeletionTimestamp.IsZero() && !next.Deadline.IsZero() {
		// Already draining (consolidation, expiry…): the instance's end bounds the drain.
		if err := q.tightenTermination(ctx, claim, next.Deadline); err != nil {
			return err
		}
	}
	if err := q.taint(ctx, node, received); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	if interruptedBy(next) && !interruptedBy(cur) {
		q.countInterruption(claim, n.Kind)
	}
	if n.Kind == messages.KindSpotInterruption && cur.Reason != nsv1.DisruptingReasonSpotInterruption && claim.Status.InstanceType != "" {
		// The pool is reclaiming capacity: launch elsewhere for a while, and
		// remember it against the pool's risk for hours.
		if q.Unavailable != nil {
			q.Unavailable.MarkUnavailable(claim.Status.InstanceType, claim.Status.Zone, nsv1.CapacityTypeSpot, "spot interruption")
		}
		if q.History != nil {
			q.History.Record(claim.Status.InstanceType, claim.Status.Zone)
		}
	}
	if n.Kind == messages.KindCapacityReservationInterruption && cur.Reason != nsv1.DisruptingReasonCapacityReservationInterruption &&
		claim.Status.InstanceType != "" && q.Unavailable != nil {
		// The reservation's owner is taking capacity back: its free count,
		// as the class last read it, is no longer to be trusted for the
		// replacement.
		q.Unavailable.MarkUnavailable(claim.Status.InstanceType, claim.Status.Zone, nsv1.CapacityTypeReserved, "capacity reservation interruption")
	}
	publish(q.Recorder, claim, node, notice(noticeReason(n), describe(n, received)+"; its replacement capacity is planned and launched by the disruption executor"))
	q.wake("interruption/" + claim.Name)
	return nil
}

// deleteNow removes the claim and Node of an instance already stopped or
// terminated; the drain deletes the pods at once (termination timestamp now).
func (q *Queue) deleteNow(ctx context.Context, claim *nsv1.NodeClaim, node *corev1.Node, n messages.Message, received time.Time) error {
	cur := markOf(claim)
	if !claim.DeletionTimestamp.IsZero() && !interruptedBy(cur) {
		// Deleted before any interruption notice (consolidation, drift,
		// expiry, a user): the termination controller keeps the claim until
		// its instance is gone, so this is, almost always, that deletion's
		// own terminate showing up on the queue — not an interruption to
		// mark, count or announce. If AWS did end the instance mid-drain,
		// the drain has nothing left to wait for: it is cut short.
		return q.tightenTermination(ctx, claim, received)
	}
	next, changed := interruption.Merge(cur, interruption.Mark{Reason: interruption.Reason(n.Kind), Deadline: received})
	if changed || claim.Annotations[nsv1.AnnotationDisruptionNoticed] == "" {
		if err := q.annotate(ctx, claim, next.Deadline, received); err != nil {
			return err
		}
		if err := q.setCondition(ctx, claim, next, describe(n, received)); err != nil {
			return err
		}
	}
	if err := q.tightenTermination(ctx, claim, received); err != nil {
		return err
	}
	if claim.DeletionTimestamp.IsZero() {
		if err := q.Kube.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting nodeclaim %s: %w", claim.Name, err)
		}
	}
	if node != nil && node.DeletionTimestamp.IsZero() {
		if err := q.Kube.Delete(ctx, node, client.Preconditions{UID: &node.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
	}
	if !interruptedBy(cur) {
		q.countInterruption(claim, n.Kind)
	}
	publish(q.Recorder, claim, node, notice(noticeReason(n), describe(n, received)+"; deleting the NodeClaim and its Node"))
	q.wake("interruption/" + claim.Name)
	return nil
}

// interruptedBy reports whether a mark is an interruption (a notice with a
// deadline), not just a rebalance recommendation.
func interruptedBy(m interruption.Mark) bool {
	return m.Reason != "" && m.Reason != nsv1.DisruptingReasonRebalanceRecommendation
}

// countInterruption counts one interrupted node, per NodePool and spot pool.
func (q *Queue) countInterruption(claim *nsv1.NodeClaim, kind messages.Kind) {
	q.Metrics.Interruption.Interruptions.WithLabelValues(claim.Labels[nsv1.LabelNodePool], string(kind),
		claim.Status.CapacityType, claim.Status.InstanceType, claim.Status.Zone).Inc()
}

// annotate writes the deadline and, once, the time of receipt.
func (d Deps) annotate(ctx context.Context, claim *nsv1.NodeClaim, deadline, received time.Time) error {
	return d.patchClaim(ctx, claim, false, func(c *nsv1.NodeClaim) bool {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		changed := false
		if !deadline.IsZero() {
			if v := deadline.UTC().Format(time.RFC3339); c.Annotations[nsv1.AnnotationDisruptionDeadline] != v {
				c.Annotations[nsv1.AnnotationDisruptionDeadline] = v
				changed = true
			}
		}
		if c.Annotations[nsv1.AnnotationDisruptionNoticed] == "" {
			c.Annotations[nsv1.AnnotationDisruptionNoticed] = received.UTC().Format(time.RFC3339Nano)
			changed = true
		}
		return changed
	})
}

func (d Deps) setCondition(ctx context.Context, claim *nsv1.NodeClaim, m interruption.Mark, msg string) error {
	if !m.Deadline.IsZero() {
		msg += "; instance expected to go away at " + m.Deadline.UTC().Format(time.RFC3339)
	}
	cond := metav1.Condition{Type: nsv1.ConditionDisrupting, Status: metav1.ConditionTrue, Reason: m.Reason, Message: msg}
	now := metav1.NewTime(d.Clock.Now())
	return d.patchClaim(ctx, claim, true, func(c *nsv1.NodeClaim) bool {
		if cur := meta.FindStatusCondition(c.Status.Conditions, nsv1.ConditionDisrupting); cur != nil &&
			cur.Status == metav1.ConditionTrue && cur.Reason == m.Reason {
			return false
		}
		return lifecycle.SetCondition(&c.Status.Conditions, cond, c.Generation, now)
	})
}

// tightenTermination moves the claim's termination timestamp forward to
// by, so the drain deletes what is left before the instance goes.
func (d Deps) tightenTermination(ctx context.Context, claim *nsv1.NodeClaim, by time.Time) error {
	return d.patchClaim(ctx, claim, false, func(c *nsv1.NodeClaim) bool {
		if t, err := time.Parse(time.RFC3339, c.Annotations[nsv1.AnnotationTerminationTimestamp]); err == nil && !t.After(by) {
			return false
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[nsv1.AnnotationTerminationTimestamp] = by.UTC().Format(time.RFC3339)
		return true
	})
}

// patchClaim applies mutate to claim (refreshed from the API server after a
// conflict) with an optimistic lock, to its status when status is set (through
// statuspatch, which re-applies the status change to the fresh copy).
// claim is left holding the written object.
func (d Deps) patchClaim(ctx context.Context, claim *nsv1.NodeClaim, status bool, mutate func(*nsv1.NodeClaim) bool) error {
	if status {
		base := claim.DeepCopy()
		if !mutate(claim) {
			return nil
		}
		return client.IgnoreNotFound(statuspatch.Patch(ctx, d.Kube, base, claim, statuspatch.ReadFrom(d.fresh())))
	}
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := d.fresh().Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return err
			}
		}
		first = false
		base := claim.DeepCopy()
		if !mutate(claim) {
			return nil
		}
		err := d.Kube.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// taint keeps new pods off the node (the drain's taint, put on early). A
// conflict with another writer (the kubelet's status) is retried on a
// fresh copy. noticed is when the notice came, for the taint latency.
func (d Deps) taint(ctx context.Context, node *corev1.Node, noticed time.Time) error {
	if node == nil {
		return nil
	}
	added := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !node.DeletionTimestamp.IsZero() {
			return nil
		}
		for _, t := range node.Spec.Taints {
			if t.MatchTaint(&nsv1.DisruptedTaint) {
				return nil
			}
		}
		base := node.DeepCopy()
		t := nsv1.DisruptedTaint
		now := metav1.NewTime(d.Clock.Now())
		t.TimeAdded = &now
		node.Spec.Taints = append(node.Spec.Taints, t)
		err := d.Kube.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			if gerr := d.fresh().Get(ctx, client.ObjectKeyFromObject(node), node); gerr != nil {
				return gerr
			}
		}
		added = err == nil
		return err
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("tainting node %s: %w", node.Name, err))
	}
	if added && !noticed.IsZero() {
		d.Metrics.Interruption.TaintLatency.Observe(d.Clock.Since(noticed).Seconds())
	}
	return nil
}

// nodeOf is the claim's Node, nil when it has none (yet).
func nodeOf(ctx context.Context, c client.Reader, claim *nsv1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.NodeName != "" {
		node := &corev1.Node{}
		err := c.Get(ctx, types.NamespacedName{Name: claim.Status.NodeName}, node)
		if err == nil {
			return node, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting node %s: %w", claim.Status.NodeName, err)
		}
	}
	return state.NodeForClaim(ctx, c, claim)
}

// eventTarget is what events are recorded on.
type eventTarget interface {
	runtime.Object
	GetUID() types.UID
}

// publish records the event mk builds on the claim and on its node.
func publish(rec *events.Recorder, claim *nsv1.NodeClaim, node *corev1.Node, mk func(o eventTarget) events.Event) {
	rec.Publish(mk(claim))
	if node != nil {
		rec.Publish(mk(node))
	}
}

func notice(reason, msg string) func(o eventTarget) events.Event {
	return func(o eventTarget) events.Event { return events.InterruptionNotice(o, reason, msg) }
}

func noticeReason(n messages.Message) string {
	switch n.Kind {
	case messages.KindSpotInterruption:
		return events.ReasonSpotInterruption
	case messages.KindCapacityReservationInterruption:
		return events.ReasonCapacityReservationInterruption
	case messages.KindRebalance:
		return events.ReasonRebalanceRecommendation
	case messages.KindScheduledChange:
		return events.ReasonScheduledChange
	case messages.KindInstanceStopping:
		return events.ReasonInstanceStopping
	case messages.KindInstanceStopped:
		return events.ReasonInstanceStopped
	}
	return events.ReasonInstanceTerminated
}

// describe is a notice in a sentence.
func describe(n messages.Message, received time.Time) string {
	switch n.Kind {
	case messages.KindSpotInterruption:
		return fmt.Sprintf("spot interruption warning (%s) received %s", n.Action, received.UTC().Format(time.RFC3339))
	case messages.KindCapacityReservationInterruption:
		return "interruptible capacity reservation interruption warning received " + received.UTC().Format(time.RFC3339)
	case messages.KindRebalance:
		return "rebalance recommendation received " + received.UTC().Format(time.RFC3339)
	case messages.KindScheduledChange:
		return fmt.Sprintf("AWS Health scheduled change %s received %s", n.EventTypeCode, received.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("instance state changed to %s (received %s)", n.State, received.UTC().Format(time.RFC3339))
}
