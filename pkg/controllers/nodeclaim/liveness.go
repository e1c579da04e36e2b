package nodeclaim

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// liveness deletes a claim that did not launch or register in time; the
// termination controller then removes any instance, and its pods are planned
// again.
func (c *Controller) liveness(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error) {
	v := lifecycle.Liveness(claim, c.clk.Now(), c.opts.Timeouts)
	if !v.Delete {
		return reconcile.Result{RequeueAfter: v.RecheckAfter}, nil
	}
	c.recorder.Publish(events.Warning(claim, events.ReasonLivenessTimeout, "Delete", v.Reason))
	if err := c.kube.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s after %s: %w", claim.Name, v.Reason, err)
	}
	reason := "registration_timeout"
	if !lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionLaunched) {
		reason = "launch_timeout"
	}
	c.metrics.NoteTermination(claim.UID, reason)
	now := metav1.NewTime(c.clk.Now())
	claim.DeletionTimestamp = &now
	if released := c.cluster.ReleaseTarget(claim.Name); len(released) > 0 && c.opts.Replan != nil {
		c.opts.Replan(released)
	}
	return reconcile.Result{}, nil
}
