package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/controllers/state"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// drain empties node tier by tier. It returns RequeueAfter while pods remain.
func (c *Controller) drain(ctx context.Context, claim *nsv1.NodeClaim, node *corev1.Node) (reconcile.Result, error) {
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	pods, err := state.PodsOnNode(ctx, c.kube, node.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.clk.Now()
	deadline, hasDeadline := lifecycle.TerminationDeadline(claim)
	tiers := lifecycle.DrainOrder(pods)
	if len(tiers) == 0 {
		if waiting := terminating(pods, now); waiting > 0 {
			return reconcile.Result{RequeueAfter: drainPoll}, nil
		}
		return reconcile.Result{}, nil
	}
	c.recorder.Publish(events.Normal(claim, events.ReasonDraining, "Drain", fmt.Sprintf("draining node %s", node.Name)))
	var blocked []string
	for _, pod := range tiers[0] {
		if hasDeadline && !now.Before(lifecycle.PodDeleteTime(pod, deadline)) {
			// The grace period is over: PDBs and do-not-disrupt no longer hold.
			if err := c.kube.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting pod %s/%s after the grace period: %w", pod.Namespace, pod.Name, err)
			}
			c.recorder.Publish(events.Warning(pod, events.ReasonGracePeriodElapsed, "Drain",
				fmt.Sprintf("deleted: node %s's termination grace period ends at %s", node.Name, deadline.UTC().Format(time.RFC3339))))
			continue
		}
		if isBlocked, _, why := lifecycle.DoNotDisrupt(pod, now); isBlocked {
			blocked = append(blocked, why)
			c.recorder.Publish(events.PodEvictionBlocked(pod, why))
			continue
		}
		if err := c.evict(ctx, pod); err != nil {
			if apierrors.IsTooManyRequests(err) {
				why := fmt.Sprintf("eviction of %s/%s refused: %v", pod.Namespace, pod.Name, err)
				blocked = append(blocked, why)
				c.recorder.Publish(events.PodEvictionBlocked(pod, "a PodDisruptionBudget does not allow the eviction yet"))
				continue
			}
			return reconcile.Result{}, err
		}
	}
	if len(blocked) > 0 {
		c.recorder.Publish(events.Warning(claim, events.ReasonDrainBlocked, "Drain", strings.Join(first(blocked, 3), "; ")))
	}
	return reconcile.Result{RequeueAfter: drainPoll}, nil
}

func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	err := c.kube.SubResource("eviction").Create(ctx, pod, ev)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil && !apierrors.IsTooManyRequests(err) {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return err
}

// taint keeps new pods off the node while it drains, and labels it so
// cloud load balancers take it out of their targets before its pods go
// (node.kubernetes.io/exclude-from-external-load-balancers, as Karpenter
// does).
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	tainted := false
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&nsv1.DisruptedTaint) {
			tainted = true
		}
	}
	if tainted && node.Labels[corev1.LabelNodeExcludeBalancers] == "true" {
		return nil
	}
	base := node.DeepCopy()
	if !tainted {
		t := nsv1.DisruptedTaint
		added := metaNow(c.clk)
		t.TimeAdded = &added
		node.Spec.Taints = append(node.Spec.Taints, t)
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[corev1.LabelNodeExcludeBalancers] = "true"
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("tainting node %s for drain: %w", node.Name, err)
	}
	return nil
}

// terminating counts pods still shutting down that are worth waiting for.
func terminating(pods []*corev1.Pod, now time.Time) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil || lifecycle.IsTerminal(p) || lifecycle.IsOwnedByNode(p) {
			continue
		}
		if now.Sub(p.DeletionTimestamp.Time) > stuckTerminating {
			continue
		}
		n++
	}
	return n
}

func first(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], fmt.Sprintf("and %d more", len(xs)-n))
	}
	return xs
}
