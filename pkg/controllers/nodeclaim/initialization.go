package nodeclaim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nsv1 "github.com/nodesmith/nodesmith/apis/v1"
	"github.com/nodesmith/nodesmith/pkg/controllers/events"
	"github.com/nodesmith/nodesmith/pkg/lifecycle"
)

// initialize marks the claim Initialized once its Node can take work. The
// node watch brings us back on every node change; there is no timeout here
// because a slow device plugin is not a reason to throw a node away.
func (c *Controller) initialize(ctx context.Context, claim *nsv1.NodeClaim) (reconcile.Result, error) {
	if !lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionRegistered) || lifecycle.IsTrue(claim.Status.Conditions, nsv1.ConditionInitialized) {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: claim.Status.NodeName}, node); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.setCondition(claim, lifecycle.Condition(nsv1.ConditionInitialized, false, "NodeNotFound", "node "+claim.Status.NodeName+" is gone"))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting node of nodeclaim %s: %w", claim.Name, err)
	}
	if ok, why := lifecycle.Initialized(claim, node); !ok {
		c.setCondition(claim, lifecycle.Condition(nsv1.ConditionInitialized, false, "NodeNotReady", why))
		return reconcile.Result{}, nil
	}
	if node.Labels[nsv1.LabelInitialized] != "true" {
		base := node.DeepCopy()
		node.Labels[nsv1.LabelInitialized] = "true"
		if err := c.kube.Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return reconcile.Result{}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	claim.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	c.setCondition(claim, lifecycle.Condition(nsv1.ConditionInitialized, true, "", ""))
	c.metrics.NodeClaimsInitialized.WithLabelValues(poolOf(claim)).Inc()
	c.recorder.Publish(events.Normal(claim, events.ReasonInitialized, "Initialize", "node "+node.Name+" is ready for pods"))
	return reconcile.Result{}, nil
}
